//! `-q/--quiet` for cron: success prints nothing, drift and refusals still do,
//! and the exit code never changes.

use crate::support::{RedisServer, campaign_file, seckill};

#[test]
fn quiet_success_is_silent_and_drift_still_speaks() {
    let server = RedisServer::start();
    let file = campaign_file(
        "campaign: q\nitems:\n  - id: \"1\"\n    name: Bottle\n    price: \"1.00\"\n    stock: 3\norders:\n  store: sqlite://orders.db\n",
    );
    let run = |args: &[&str]| {
        let output = seckill(&file.path, &server.url())
            .args(args)
            .output()
            .unwrap();
        (
            output.status.code().unwrap(),
            String::from_utf8(output.stdout).unwrap(),
        )
    };
    assert_eq!(run(&["-q", "preheat"]), (0, String::new()));
    assert_eq!(run(&["buy", "--item", "1", "--user", "a", "--quiet"]).0, 0);
    assert_eq!(run(&["consume", "--drain", "-q"]), (0, String::new()));
    assert_eq!(run(&["reconcile", "-q"]), (0, String::new()));
    // A refused outcome is not a success: it prints, quiet or not.
    let (code, text) = run(&["buy", "--item", "1", "--user", "a", "-q"]);
    assert_eq!(code, seckill::model::exit_codes::DUPLICATE);
    assert!(text.contains("duplicate"), "{text}");
    // Drift prints the order ids, quiet or not.
    let () = redis::cmd("SET")
        .arg(seckill::model::keys::ItemKeys::live("q", "1").stock)
        .arg(1)
        .query(&mut server.conn())
        .unwrap();
    let (code, text) = run(&["reconcile", "-q"]);
    assert_eq!(code, seckill::model::exit_codes::DRIFT_FOUND);
    assert!(!text.is_empty());
}
