//! `serve` in one region of a sale over several (docs/regions.md, "The
//! scheduler"): a regional zero is never answered from memory — each attempt
//! goes to the buy script, because a credit may land any moment — and once
//! the scheduler marked every region sold out (every region at 0, nothing in
//! transit), the door answers `sold_out` itself, with no Redis call.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{RedisServer, campaign_file, http};

/// `sold_out` answers the door gave from memory so far (its /metrics).
fn sold_out_from_memory(addr: SocketAddr) -> u64 {
    let page = http::get(addr, "/metrics");
    page.body
        .lines()
        .find(|l| {
            l.starts_with("seckill_serve_cache_hits_total{") && l.contains("outcome=\"sold_out\"")
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse::<f64>().ok())
        .map_or(0, |n| n as u64)
}

fn seckill(file: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(assert_cmd::cargo::cargo_bin("seckill"))
        .env_remove("SECKILL_REDIS_URL")
        .env_remove("SECKILL_REGION")
        .env_remove("SECKILL_CAMPAIGN")
        .arg("-c")
        .arg(file)
        .args(args)
        .output()
        .unwrap()
}

/// `seckill --region REGION serve` on a free port, once it listens.
fn serve_in(file: &std::path::Path, region: &str) -> (Child, SocketAddr) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("seckill"))
        .env_remove("SECKILL_REDIS_URL")
        .env_remove("SECKILL_CAMPAIGN")
        .args(["--region", region, "-c"])
        .arg(file)
        .args(["serve", "--listen", "127.0.0.1:0", "--recheck", "100ms"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line
                .split("listening on http://")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|addr| addr.parse::<SocketAddr>().ok())
            {
                let _ = tx.send(addr);
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("serve listens");
    (child, addr)
}

#[test]
fn a_regional_zero_goes_to_redis_and_only_a_sell_out_everywhere_is_answered_from_memory() {
    let (bj, sh) = (RedisServer::start(), RedisServer::start());
    let file = campaign_file(&format!(
        "campaign: so-everywhere\nper_user_limit: 1\nregions:\n  bj: {{ redis: \"{}\", share: 1 }}\n  sh: {{ redis: \"{}\", share: 1 }}\nitems:\n  - {{ id: \"9\", name: N, price: \"1\", stock: 2 }}\n",
        bj.url(),
        sh.url()
    ));
    let path = file.path.clone();
    assert!(seckill(&path, &["preheat", "-q"]).status.success());
    // Users at home in sh, and one at home in bj.
    let homes = seckill(
        &path,
        &[
            "regions", "home", "u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8", "u9",
            "--format", "json",
        ],
    );
    let homes: serde_json::Value = serde_json::from_slice(&homes.stdout).unwrap();
    let at = |region: &str| -> Vec<String> {
        homes["homes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| h["home"] == region)
            .map(|h| h["user"].as_str().unwrap().to_string())
            .collect()
    };
    let (in_sh, in_bj) = (at("sh"), at("bj"));
    assert!(in_sh.len() >= 3 && !in_bj.is_empty(), "{homes}");

    let (mut door, addr) = serve_in(&path, "sh");
    let answer = http::buy(addr, "9", &in_sh[0], "r0");
    assert_eq!(answer.json()["outcome"], "ok", "{:?}", answer.json());
    // sh is at 0, bj still holds its unit: every attempt reaches the script,
    // however many rechecks pass.
    for (n, user) in in_sh[1..3].iter().enumerate() {
        let answer = http::buy(addr, "9", user, &format!("z{n}"));
        assert_eq!(answer.json()["outcome"], "sold_out");
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(
        sold_out_from_memory(addr),
        0,
        "a regional zero was answered from memory while bj held a unit"
    );
    // bj sells its unit; the scheduler marks both regions sold out.
    assert!(
        seckill(
            &path,
            &[
                "--region", "bj", "buy", "--item", "9", "--user", &in_bj[0], "-q"
            ]
        )
        .status
        .success()
    );
    let round = seckill(&path, &["regions", "rebalance"]);
    assert!(
        round.status.success(),
        "{}",
        String::from_utf8_lossy(&round.stderr)
    );
    assert!(String::from_utf8_lossy(&round.stderr).contains("marked sold out everywhere"));
    // The mark's broadcast (or the next recheck) reaches the door.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let answer = http::buy(addr, "9", &in_sh[2], "late");
        assert_eq!(answer.json()["outcome"], "sold_out");
        if sold_out_from_memory(addr) > 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "a sell-out everywhere is still asked of Redis 5 s after the mark"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = door.kill();
    let _ = door.wait();
    let proof = seckill(&path, &["reconcile", "--regions"]);
    assert_eq!(proof.status.code(), Some(0));
}
