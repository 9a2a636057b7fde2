//! `doctor`'s estimate of what a sale will take in Redis (issue 25, item
//! 33) holds against Redis itself: a sale is bought out through the real
//! buy script, with user ids of 36 characters (a UUID) and ULID request and
//! order ids, and the memory Redis then uses is at least what it had plus
//! nothing more than the estimate — and the estimate is not so generous
//! that it would stop a sale that fits (at most half again as much).

use seckill::model::keys::ItemKeys;
use seckill::redis_client::scripts;

use crate::support::RedisServer;
use crate::support::spec::{CampaignSpec, campaign, seckill};

/// Orders enough for the hashes and the stream to leave their small encodings.
const ORDERS: usize = 20_000;

fn used_memory(server: &RedisServer) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query(&mut server.conn())
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A ULID-shaped id (26 characters of Crockford's base 32) numbered `i`.
fn ulid_like(prefix: char, i: usize) -> String {
    format!("{prefix}{i:025}")
}

/// Preheat `spec`'s one item, take doctor's estimate, buy the item out;
/// returns (estimate, bytes Redis grew by).
fn estimate_and_use(spec: CampaignSpec, timeout_ms: u64) -> (u64, u64) {
    let server = RedisServer::start();
    let file = spec.write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let report = seckill(&["doctor"])
        .campaign(&file)
        .redis(&server)
        .current_dir(file.dir.path())
        .json()
        .runs()
        .json();
    let sale = &report["sale_memory"][0];
    assert_eq!(sale["units"], ORDERS as u64, "{report}");
    let estimate = sale["estimate_bytes"].as_u64().unwrap();

    let spec = scripts::by_name("buy").unwrap();
    let keys = ItemKeys::live("mem", "1");
    let mut conn = server.conn();
    let before = used_memory(&server);
    for i in 0..ORDERS {
        let user = format!("{i:036}");
        let names = &spec.keys[..spec.keys.len() - spec.optional_keys];
        let key_names: Vec<String> = names.iter().map(|name| keys.named(name, &user)).collect();
        let argv = [
            user.clone(),
            "1".to_string(),
            ulid_like('R', i),
            ulid_like('0', i),
            "mem".to_string(),
            "1".to_string(),
            timeout_ms.to_string(),
            String::new(),
            String::new(),
            // The fence's run_id: the script reads it itself.
            seckill::redis_client::node::NODE_PLACEHOLDER.to_string(),
        ];
        let reply = scripts::invoke_positional("buy", &key_names, &argv, &mut conn)
            .unwrap()
            .unwrap();
        let outcome: Vec<redis::Value> = redis::from_redis_value(reply).unwrap();
        let outcome: String = redis::from_redis_value(outcome[0].clone()).unwrap();
        assert_eq!(outcome, "ok", "order {i}");
    }
    let after = used_memory(&server);
    (estimate, after.saturating_sub(before))
}

#[test]
fn the_sales_memory_estimate_covers_what_a_bought_out_sale_uses() {
    for (what, spec, timeout_ms) in [
        ("plain", campaign("mem").item("1", ORDERS as i64), 0),
        (
            "reservations",
            campaign("mem")
                .payment_timeout("10m")
                .item("1", ORDERS as i64),
            600_000,
        ),
    ] {
        let (estimate, used) = estimate_and_use(spec, timeout_ms);
        assert!(
            estimate >= used,
            "{what}: the estimate {estimate} is below the {used} bytes the sale used"
        );
        assert!(
            estimate <= used + used / 2,
            "{what}: the estimate {estimate} is more than half again the {used} bytes used"
        );
    }
}
