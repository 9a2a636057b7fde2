//! Credentials (issue 25): a Redis password outside the command line
//! (`--redis-password-file`, `SECKILL_REDIS_PASSWORD_FILE`, `REDISCLI_AUTH`;
//! a password in the URL wins, then the file, then `REDISCLI_AUTH`), never
//! in `ps`; and `serve`'s operator endpoints with a credential of their own
//! (`--operator-redis`), refused at start when the credential they would use
//! cannot run the pay and release scripts (item 2).

use std::time::Duration;

use seckill::model::exit_codes::{RUNTIME_ERROR, USAGE_ERROR};

use crate::support::http;
use crate::support::serve::Serve;
use crate::support::spec::{campaign, seckill};
use crate::support::{CampaignFile, RedisServer, preheat};

const PASSWORD: &str = "s3cret-pw-1c9e";

/// A file in the campaign's directory holding `text` and a final newline.
fn file_with(file: &CampaignFile, name: &str, text: &str) -> String {
    let path = file.dir.path().join(name);
    std::fs::write(&path, format!("{text}\n")).unwrap();
    path.display().to_string()
}

#[test]
fn a_password_from_a_file_or_rediscli_auth_stays_out_of_ps() {
    let server = RedisServer::start_with(&["--requirepass", PASSWORD]);
    let file = campaign("pw").item("1", 5).write();
    let with_password = format!("redis://:{PASSWORD}@127.0.0.1:{}/0", server.port);
    seckill(&["preheat"])
        .campaign(&file)
        .redis_url(&with_password)
        .succeeds();
    let right = file_with(&file, "redis.pw", PASSWORD);
    let wrong = file_with(&file, "wrong.pw", "not-the-password");
    let status = || seckill(&["status"]).campaign(&file).redis(&server);

    let refused = status().fails_with(RUNTIME_ERROR);
    assert!(
        refused.stderr().contains("NOAUTH"),
        "{}",
        refused.describe()
    );
    status().args(&["--redis-password-file", &right]).succeeds();
    status()
        .env("SECKILL_REDIS_PASSWORD_FILE", &right)
        .succeeds();
    status().env("REDISCLI_AUTH", PASSWORD).succeeds();
    // Precedence: the URL's own password, then the file, then REDISCLI_AUTH.
    seckill(&["status", "--redis-password-file", &wrong])
        .campaign(&file)
        .redis_url(&with_password)
        .succeeds();
    status()
        .args(&["--redis-password-file", &right])
        .env("REDISCLI_AUTH", "not-the-password")
        .succeeds();
    let empty = file_with(&file, "empty.pw", "");
    let said = status()
        .args(&["--redis-password-file", &empty])
        .fails_with(USAGE_ERROR);
    assert!(said.stderr().contains("is empty"), "{}", said.describe());

    // A long-running serve: its command line and environment hold no password.
    let serve = Serve::start(
        &file,
        &server.url(),
        false,
        &["--redis-password-file", &right],
    );
    let bought = http::buy(serve.addr, "1", "alice", "a-1");
    assert_eq!(bought.status, 200, "{}", bought.body);
    for shown in ["cmdline", "environ"] {
        let text = std::fs::read(format!("/proc/{}/{shown}", serve.pid())).unwrap();
        assert!(
            !String::from_utf8_lossy(&text).contains(PASSWORD),
            "the password is in /proc/PID/{shown}"
        );
    }
}

/// `seckill acl --apply` of `role` with a password file; its URL without
/// the password, and that file.
fn role(server: &RedisServer, file: &CampaignFile, role: &str) -> (String, String) {
    let password = format!("{role}-pw-{}", std::process::id());
    let path = file_with(file, &format!("{role}.pw"), &password);
    seckill(&["acl", "--role", role, "--password-file", &path, "--apply"])
        .campaign(file)
        .redis(server)
        .succeeds();
    (
        format!("redis://seckill-{role}@127.0.0.1:{}/0", server.port),
        path,
    )
}

#[test]
fn serve_pays_with_the_operator_credential_and_refuses_to_start_without_one() {
    let server = RedisServer::start();
    let file = campaign("sop").payment_timeout("1h").item("1", 10).write();
    let (buyer, buyer_pw) = role(&server, &file, "buyer");
    let (operator, operator_pw) = role(&server, &file, "operator");
    preheat(&file, &server);
    let token = file_with(&file, "token", "a-token-of-32-characters-or-so-x");
    let serve_as_buyer = |extra: &[&str]| {
        seckill(&[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--operator-token-file",
            &token,
        ])
        .campaign(&file)
        .redis_url(&buyer)
        .env("SECKILL_REDIS_PASSWORD_FILE", &buyer_pw)
        .args(extra)
        .runs_within(Duration::from_secs(30))
    };

    // The buyer's credential cannot pay: serve says so and does not start.
    let refused = serve_as_buyer(&[]);
    assert_eq!(refused.code(), USAGE_ERROR, "{}", refused.describe());
    let said = refused.stderr();
    assert!(
        said.contains("--operator-redis") && said.contains("seckill-buyer"),
        "{said}"
    );
    assert!(said.contains("ZREM deadlines"), "{said}");
    // Nor does an --operator-redis that is the buyer again.
    let refused = serve_as_buyer(&[
        "--operator-redis",
        &buyer,
        "--operator-redis-password-file",
        &buyer_pw,
    ]);
    assert_eq!(refused.code(), USAGE_ERROR, "{}", refused.describe());
    // --operator-redis without the endpoints is a mistake.
    let alone = seckill(&["serve", "--operator-redis", &operator])
        .campaign(&file)
        .redis(&server)
        .fails_with(USAGE_ERROR);
    assert!(
        alone.stderr().contains("--operator-token-file"),
        "{}",
        alone.describe()
    );

    // With the operator's credential the endpoints pay and cancel.
    let serve = Serve::start(
        &file,
        &buyer,
        false,
        &[
            "--redis-password-file",
            &buyer_pw,
            "--operator-token-file",
            &token,
            "--operator-redis",
            &operator,
            "--operator-redis-password-file",
            &operator_pw,
        ],
    );
    let bearer = "Bearer a-token-of-32-characters-or-so-x";
    let mut orders = Vec::new();
    for user in ["p1", "c1"] {
        let bought = http::buy(serve.addr, "1", user, &format!("{user}-r"));
        assert_eq!(bought.status, 200, "{}", bought.body);
        orders.push(bought.json()["order_id"].as_str().unwrap().to_string());
    }
    for (order, action, outcome) in [
        (&orders[0], "pay", "paid"),
        (&orders[1], "cancel", "cancelled"),
    ] {
        let answer = http::send(
            serve.addr,
            "POST",
            &format!("/v1/orders/{order}/{action}"),
            &[("Authorization", bearer)],
            b"",
        )
        .unwrap();
        assert_eq!(answer.status, 200, "{action}: {}", answer.body);
        assert_eq!(answer.json()["outcome"], outcome, "{}", answer.body);
    }
}
