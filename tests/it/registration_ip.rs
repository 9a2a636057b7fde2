//! Per-IP registration caps (`registration.per_ip`, docs/waiting-room.md)
//! count an address under its prefix — IPv4 /24, IPv6 /64 — whatever way the
//! caller's address is spelled. A back end listening on a dual-stack socket
//! (`::`) sees every IPv4 caller as an IPv4-mapped IPv6 address
//! (`::ffff:203.0.113.200`): that is the IPv4 address, counted under its /24
//! (issue 25 item 31: they all counted as one `::/64`, so `per_ip` IPv4 users
//! in the world could register; and choosing the spelling gave `per_ip` more
//! accounts per /24).

use seckill::model::exit_codes::{IP_LIMIT, SUCCESS};

use crate::support::spec::{Ran, campaign, seckill};
use crate::support::{CampaignFile, Preheat, RedisServer};

fn register(server: &RedisServer, file: &CampaignFile, user: &str, ip: &str, code: i32) -> Ran {
    let ran = seckill(&["register", "--user", user, "--device", user, "--ip", ip])
        .campaign(file)
        .redis(server)
        .json()
        .runs();
    assert_eq!(ran.code(), code, "{user} from {ip}: {}", ran.describe());
    ran
}

#[test]
fn an_ipv4_mapped_address_counts_under_its_ipv4_slash_24() {
    let server = RedisServer::start();
    let until = (chrono::Utc::now() + chrono::Duration::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let file = Preheat::on(&server).spec(&campaign("ipv4m").item("1", 10).room(&format!(
        "{{ mode: rate, admit_rate: 100/s, registration: {{ until: {until}, per_ip: 1 }} }}"
    )));
    let first = register(&server, &file, "a", "::ffff:203.0.113.200", SUCCESS);
    let row = &first.json()["registrations"][0];
    assert_eq!(row["outcome"], "registered", "{row}");
    assert_eq!(first.json()["ip_prefix"], "203.0.113.0/24");
    // Another IPv4 network through the same dual-stack socket is another prefix.
    register(&server, &file, "b", "::ffff:198.51.100.7", SUCCESS);
    // The same /24 however it is written: mapped, mapped in hex, plain IPv4.
    for (user, ip) in [
        ("c", "::ffff:203.0.113.9"),
        ("d", "::ffff:cb00:7101"),
        ("e", "203.0.113.77"),
    ] {
        register(&server, &file, user, ip, IP_LIMIT);
    }
    let ips: std::collections::HashMap<String, i64> = redis::cmd("HGETALL")
        .arg("seckill:{ipv4m:1}:ips")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(
        ips,
        [("203.0.113.0/24", 1), ("198.51.100.0/24", 1)]
            .map(|(p, n)| (p.to_string(), n))
            .into(),
        "{ips:?}"
    );
}
