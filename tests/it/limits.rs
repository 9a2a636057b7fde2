//! Limits above the item (docs/limits.md, issue 28): a limit group's
//! `per_user_limit` over SKUs whose stock lives in different slots, and
//! `per_identity_limit` over the accounts presenting one identity — exact
//! under concurrency (the CLAIM protocol: `lua/limit_claim.lua` in the
//! member's limit bucket, then the item's buy, then `lua/limit_release.lua`
//! on a definitive refusal), and a refused or corrupt claim writes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use redis::Commands;
use seckill::model::exit_codes;
use seckill::model::keys::ItemKeys;
use seckill::model::limits::{LimitKeys, identity_bindings};
use seckill::redis_client::scripts;

use crate::cluster_faults::as_role;
use crate::corrupt_state::snapshot;
use crate::support::cluster::RedisCluster;
use crate::support::http;
use crate::support::serve::Serve;
use crate::support::spec::{CampaignSpec, campaign, seckill};
use crate::support::{CampaignFile, RedisServer, preheat};

const SKUS: [&str; 6] = [
    "black-128",
    "black-256",
    "white-128",
    "white-256",
    "blue-128",
    "blue-256",
];

/// Six SKUs of `stock` units each, in one limit group of `per_user_limit` 1.
fn group_spec(id: &str, stock: i64) -> CampaignSpec {
    let mut spec = campaign(id).per_user_limit(1).field(
        "limit_groups",
        &format!(
            "{{ iphone-16-pro: {{ items: [{}], per_user_limit: 1 }} }}",
            SKUS.join(", ")
        ),
    );
    for sku in SKUS {
        spec = spec.item(sku, stock);
    }
    spec
}

/// Every user hammers every SKU at once through `serve` at `addr`: client
/// thread (g, s) buys SKU s for the users of group g, in the same order as
/// the five other threads of group g, so a user's six buys race each
/// other. Returns the outcomes counted.
fn hammer(addr: SocketAddr, users: usize, groups: usize) -> BTreeMap<String, usize> {
    let threads: Vec<_> = (0..groups)
        .flat_map(|group| SKUS.iter().map(move |sku| (group, *sku)))
        .map(|(group, sku)| {
            std::thread::spawn(move || {
                let mut seen = BTreeMap::new();
                for user in (group..users).step_by(groups) {
                    let user = format!("u{user}");
                    let answer = http::buy(addr, sku, &user, &format!("{sku}-{user}"));
                    let outcome = answer.json()["outcome"]
                        .as_str()
                        .unwrap_or_else(|| panic!("{sku} {user}: {}", answer.body))
                        .to_string();
                    *seen.entry(outcome).or_insert(0) += 1;
                }
                seen
            })
        })
        .collect();
    let mut outcomes = BTreeMap::new();
    for thread in threads {
        for (outcome, n) in thread.join().unwrap() {
            *outcomes.entry(outcome).or_insert(0) += n;
        }
    }
    outcomes
}

/// What Redis holds after the storm: units per user over the six SKUs,
/// units sold, and units the group's limit buckets count per user.
struct Books {
    units_of: BTreeMap<String, i64>,
    sold: i64,
    claimed_of: BTreeMap<String, i64>,
}

fn books<C: redis::ConnectionLike>(conn: &mut C, campaign: &str, stock: i64) -> Books {
    let mut units_of = BTreeMap::new();
    let mut sold = 0;
    for sku in SKUS {
        let keys = ItemKeys::live(campaign, sku);
        let buyers: BTreeMap<String, i64> =
            redis::cmd("HGETALL").arg(&keys.buyers).query(conn).unwrap();
        for (user, units) in buyers {
            *units_of.entry(user).or_insert(0) += units;
        }
        let left: i64 = redis::cmd("GET").arg(&keys.stock).query(conn).unwrap();
        sold += stock - left;
    }
    let mut claimed_of = BTreeMap::new();
    for bucket in LimitKeys::every(campaign, "g.iphone-16-pro") {
        let counts: BTreeMap<String, i64> = redis::cmd("HGETALL")
            .arg(&bucket.counts)
            .query(conn)
            .unwrap();
        claimed_of.extend(counts);
    }
    Books {
        units_of,
        sold,
        claimed_of,
    }
}

/// The guarantee: nobody holds 2 units of the group, units sold = distinct
/// buyers, and the limit counts exactly what was sold (every refused buy's
/// claim was released, none leaked).
fn assert_exact(books: &Books, outcomes: &BTreeMap<String, usize>, expected_sold: i64) {
    let over: Vec<(&String, &i64)> = books.units_of.iter().filter(|(_, u)| **u > 1).collect();
    assert!(
        over.is_empty(),
        "{} users hold more than 1 unit of the group: {:?} (outcomes {outcomes:?})",
        over.len(),
        &over[..over.len().min(10)]
    );
    assert_eq!(
        books.sold,
        books.units_of.len() as i64,
        "units sold vs distinct buyers"
    );
    assert_eq!(books.sold, expected_sold, "outcomes {outcomes:?}");
    let users: BTreeSet<&String> = books
        .claimed_of
        .keys()
        .chain(books.units_of.keys())
        .collect();
    let off: Vec<(&String, Option<&i64>, Option<&i64>)> = users
        .into_iter()
        .map(|user| (user, books.claimed_of.get(user), books.units_of.get(user)))
        .filter(|(_, claimed, units)| claimed != units)
        .collect();
    assert!(
        off.is_empty(),
        "{} users' group counts are not their units (user, counted, bought): {:?}",
        off.len(),
        &off[..off.len().min(10)]
    );
    assert_eq!(
        outcomes.get("ok").copied().unwrap_or(0) as i64,
        expected_sold
    );
}

/// 1,000 users, six SKUs of 100 (600 units < 1,000 users: sold-out
/// refusals release their claims), each user's six buys at once.
#[test]
fn a_limit_group_sells_one_unit_per_user_over_six_skus_under_concurrency() {
    let server = RedisServer::start();
    let file = group_spec("lg", 100).write();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &[]);
    let started = Instant::now();
    let outcomes = hammer(serve.addr, 1000, 4);
    let took = started.elapsed();
    let books = books(&mut server.conn(), "lg", 100);
    assert_exact(&books, &outcomes, 600);
    // Refused buys are limit_reached (another SKU won) or sold_out.
    let refused: usize = outcomes
        .iter()
        .filter(|(o, _)| *o != "ok")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(refused, 6000 - 600, "{outcomes:?}");
    assert!(
        outcomes.get("limit_reached").copied().unwrap_or(0) > 0,
        "{outcomes:?}"
    );
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

/// The same on a 3-master cluster with replicas, every command as the
/// roles `seckill acl` writes: preheat as the operator, serve as the
/// buyer. The limit buckets are spread over every master.
#[test]
fn a_limit_group_holds_on_a_cluster_as_the_acl_roles() {
    let cluster = RedisCluster::start_with_replicas(1);
    let file = group_spec("lgc", 40).write();
    let roles = cluster.create_roles(&file);
    let first = cluster.ports[0];
    as_role(&roles, "operator", first, &["preheat"])
        .campaign(&file)
        .succeeds();
    let masters: BTreeSet<u16> = LimitKeys::every("lgc", "g.iphone-16-pro")
        .iter()
        .map(|keys| cluster.master_and_replicas_of(&keys.counts).0)
        .collect();
    assert_eq!(masters.len(), 3, "limit buckets on {masters:?}");
    let serve = Serve::start(&file, &roles.seeds("buyer"), true, &[]);
    let outcomes = hammer(serve.addr, 300, 2);
    let books = books(&mut cluster.conn(), "lgc", 40);
    assert_exact(&books, &outcomes, 240);
    assert!(
        cluster.take_acl_denials().is_empty(),
        "a role was refused a command"
    );
}

/// Three accounts presenting one identity, `per_identity_limit: 2`, buying
/// at once from many processes: 2 units in total. An account bound to an
/// identity buys under it without presenting it, and is refused when it
/// presents another; with the limit on, a buy with no identity is refused.
#[test]
fn one_identity_buys_at_most_its_limit_over_every_account() {
    let server = RedisServer::start();
    let file = campaign("id1")
        .per_user_limit(2)
        .field("per_identity_limit", "2")
        .item("1", 50)
        .write();
    preheat(&file, &server);
    let runs: Vec<_> = (0..12)
        .map(|n| {
            let user = format!("acct{}", n % 3);
            seckill(&["buy", "--item", "1", "--user", &user, "--identity", "ID-1"])
                .args(&["--request-id", &format!("r{n}")])
                .campaign(&file)
                .redis(&server)
                .json()
                .start()
        })
        .collect();
    let mut codes = BTreeMap::new();
    for run in runs {
        *codes.entry(run.finish().code()).or_insert(0) += 1;
    }
    assert_eq!(codes.get(&0), Some(&2), "{codes:?}");
    assert_eq!(
        codes.get(&exit_codes::LIMIT_REACHED),
        Some(&10),
        "{codes:?}"
    );
    let mut conn = server.conn();
    let left: i64 = conn.get(ItemKeys::live("id1", "1").stock).unwrap();
    assert_eq!(left, 48);

    // Bound: buys under the bound identity without presenting it.
    seckill(&["register", "--user", "bound", "--identity", "ID-2"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let bound: String = conn
        .hget(identity_bindings("id1", "bound"), "bound")
        .unwrap();
    assert_eq!(bound.len(), 64);
    assert!(!bound.contains("ID-2"), "the identity is stored in clear");
    seckill(&["buy", "--item", "1", "--user", "bound"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    // Another identity: refused, nothing written.
    let before = snapshot(&mut conn);
    let refused = seckill(&[
        "buy",
        "--item",
        "1",
        "--user",
        "bound",
        "--identity",
        "ID-3",
    ])
    .campaign(&file)
    .redis(&server)
    .json()
    .fails_with(exit_codes::IDENTITY_MISMATCH)
    .json();
    assert_eq!(refused["outcome"], "identity_mismatch", "{refused}");
    assert_eq!(before, snapshot(&mut conn), "a refused buy wrote something");
    // Binding again to another identity: the first stands.
    seckill(&["register", "--user", "bound", "--identity", "ID-3"])
        .campaign(&file)
        .redis(&server)
        .fails_with(exit_codes::IDENTITY_MISMATCH);
    // A second account presenting ID-2 shares the bound account's count.
    seckill(&[
        "buy",
        "--item",
        "1",
        "--user",
        "other",
        "--identity",
        "ID-2",
    ])
    .campaign(&file)
    .redis(&server)
    .succeeds();
    seckill(&[
        "buy",
        "--item",
        "1",
        "--user",
        "third",
        "--identity",
        "ID-2",
    ])
    .campaign(&file)
    .redis(&server)
    .fails_with(exit_codes::LIMIT_REACHED);
    // No identity at all, none bound.
    let refused = seckill(&["buy", "--item", "1", "--user", "anonymous"])
        .campaign(&file)
        .redis(&server)
        .json()
        .fails_with(exit_codes::IDENTITY_REQUIRED)
        .json();
    assert!(
        refused["problem"]
            .as_str()
            .is_some_and(|p| p.contains("per_identity_limit 2")),
        "{refused}"
    );
}

/// A refused claim (the group's limit reached) leaves every key of Redis
/// byte for byte as it was; a sold-out SKU gives the claim back, so the
/// user buys another SKU of the group; a retry with the same request id
/// after a claim whose buy never ran resumes (the claim answers
/// `already_claimed`, nothing is counted twice).
#[test]
fn a_refused_claim_writes_nothing_and_a_sold_out_buy_releases_its_claim() {
    let server = RedisServer::start();
    let file = group_spec("lr", 1).write();
    preheat(&file, &server);
    let mut conn = server.conn();
    let buy = |user: &str, sku: &str, request: &str| {
        seckill(&[
            "buy",
            "--item",
            sku,
            "--user",
            user,
            "--request-id",
            request,
        ])
        .campaign(&file)
        .redis(&server)
        .json()
    };
    buy("a", "black-128", "r1").succeeds();
    let before = snapshot(&mut conn);
    let refused = buy("a", "white-256", "r2")
        .fails_with(exit_codes::LIMIT_REACHED)
        .json();
    assert!(
        refused["problem"]
            .as_str()
            .is_some_and(|p| p.contains("iphone-16-pro") && p.contains("holds 1 of 1")),
        "{refused}"
    );
    assert_eq!(
        before,
        snapshot(&mut conn),
        "a refused claim wrote something"
    );

    // b meets a sold-out SKU: its claim goes back, and b buys another.
    buy("b", "black-128", "r1").fails_with(exit_codes::SOLD_OUT);
    let group = LimitKeys::group("lr", "iphone-16-pro", "b");
    let held: Option<i64> = conn.hget(&group.counts, "b").unwrap();
    assert_eq!(held, None, "the sold-out buy kept its claim");
    buy("b", "black-256", "r2").succeeds();

    // c's claim was made, its buy never ran (a lost reply): the retry with
    // the same request id finds the claim and buys, counted once.
    let c = LimitKeys::group("lr", "iphone-16-pro", "c");
    let claim_id = seckill::domain::operation::limits::claim_id("white-128", "c", "r9");
    let claimed = scripts::invoke_positional(
        "limit_claim",
        &[&c.counts, &c.claims],
        &["c", claim_id.as_str(), "1", "1", ""],
        &mut conn,
    )
    .unwrap()
    .unwrap();
    assert!(format!("{claimed:?}").contains("claimed"), "{claimed:?}");
    buy("c", "white-128", "r9").succeeds();
    let held: i64 = conn.hget(&c.counts, "c").unwrap();
    assert_eq!(held, 1);
    // A release is once only: the claim record goes with the first.
    let release = |conn: &mut redis::Connection| {
        scripts::invoke_positional(
            "limit_release",
            &[&c.counts, &c.claims],
            &[claim_id.as_str()],
            conn,
        )
        .unwrap()
        .unwrap()
    };
    assert!(format!("{:?}", release(&mut conn)).contains("released"));
    let before = snapshot(&mut conn);
    assert!(format!("{:?}", release(&mut conn)).contains("not_claimed"));
    assert_eq!(before, snapshot(&mut conn), "a second release wrote");
}

/// One way to damage a limit bucket.
type Corrupt<'a> = dyn Fn(&mut redis::Connection) + 'a;

/// A corrupt limit bucket (a claims hash of the wrong type, a malformed
/// count) is `corrupt_state` naming the key, and nothing is written — not
/// the claim, not the item's stock.
#[test]
fn a_corrupt_limit_bucket_is_corrupt_state_and_writes_nothing() {
    let server = RedisServer::start();
    let file = group_spec("lc", 5).write();
    let keys = LimitKeys::group("lc", "iphone-16-pro", "u");
    let cases: [(&str, &Corrupt<'_>); 3] = [
        (keys.claims.as_str(), &|conn| {
            let () = conn.set(&keys.claims, "x").unwrap();
        }),
        (keys.counts.as_str(), &|conn| {
            let () = conn.hset(&keys.counts, "u", "1.5").unwrap();
        }),
        (keys.claims.as_str(), &|conn| {
            let () = conn
                .hset(
                    &keys.claims,
                    seckill::domain::operation::limits::claim_id("blue-128", "u", "r1"),
                    "garbage",
                )
                .unwrap();
        }),
    ];
    for (key, corrupt) in cases {
        let mut conn = server.conn();
        let () = redis::cmd("FLUSHALL").query(&mut conn).unwrap();
        preheat(&file, &server);
        corrupt(&mut conn);
        let before = snapshot(&mut conn);
        let reply = seckill(&[
            "buy",
            "--item",
            "blue-128",
            "--user",
            "u",
            "--request-id",
            "r1",
        ])
        .campaign(&file)
        .redis(&server)
        .json()
        .fails_with(exit_codes::CORRUPT_STATE)
        .json();
        assert!(
            reply["problem"].as_str().is_some_and(|p| p.contains(key)),
            "{key}: {reply}"
        );
        assert_eq!(
            before,
            snapshot(&mut conn),
            "{key}: the buy wrote something"
        );
    }
}

/// The campaign file's limit fields are checked where they are written.
#[test]
fn limit_groups_are_validated_with_their_place_in_the_file() {
    let write = |groups: &str| -> CampaignFile {
        campaign("lv")
            .field("limit_groups", groups)
            .item("a", 1)
            .item("b", 1)
            .write()
    };
    for (groups, says) in [
        (
            "{ g: { items: [a, nope], per_user_limit: 1 } }",
            "names item \"nope\"",
        ),
        (
            "{ g: { items: [a], per_user_limit: 1 }, h: { items: [a, b], per_user_limit: 1 } }",
            "item a is in limit group g and again in h",
        ),
        ("{ g: { items: [a], per_user_limit: 0 } }", "between 1 and"),
        (
            "{ g: { items: [], per_user_limit: 1 } }",
            "at least one item",
        ),
    ] {
        let file = write(groups);
        let stderr = seckill(&["--redis", "redis://127.0.0.1:1/0", "preheat"])
            .campaign(&file)
            .fails_with(exit_codes::USAGE_ERROR)
            .stderr();
        assert!(stderr.contains(says), "{groups}: {stderr}");
        assert!(stderr.contains("campaign.yaml:3:"), "{groups}: {stderr}");
    }
}

/// `seckill loadtest --variant limit-group`: 1,000 users buy each of 6
/// SKUs at once through the CLAIM protocol in the load test's namespace;
/// the report counts the users over the limit (0) and exits 0, and leaves
/// no key behind.
#[test]
fn the_limit_group_load_test_reports_no_user_over_the_limit() {
    let server = RedisServer::start();
    let file = campaign("lt").item("1", 10).write();
    let report = seckill(&["loadtest", "--variant", "limit-group", "--users", "1000"])
        .args(&["--stock", "100", "--threads", "8"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json();
    assert_eq!(report["users_over_limit"], 0, "{report}");
    assert_eq!(report["counts_off"], 0, "{report}");
    assert_eq!(report["verdict"], "exact", "{report}");
    assert_eq!(report["attempts"], 6000, "{report}");
    assert_eq!(report["units_sold"], report["distinct_buyers"], "{report}");
    assert!(report["limit_reached"].as_u64().unwrap() > 0, "{report}");
    let keys: Vec<String> = server.conn().keys("*").unwrap();
    assert!(keys.is_empty(), "left behind: {keys:?}");
}

/// Over HTTP: `"identity"` in the buy's body counts under the identity;
/// the refusals have their statuses (409 `limit_reached`, 428
/// `identity_required`, 403 `identity_mismatch`).
#[test]
fn serve_takes_the_identity_in_the_body_and_answers_each_refusal_with_its_status() {
    let server = RedisServer::start();
    let file = campaign("idh")
        .field("per_identity_limit", "1")
        .item("1", 10)
        .write();
    preheat(&file, &server);
    seckill(&["register", "--user", "bound", "--identity", "ID-B"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let serve = Serve::start(&file, &server.url(), false, &[]);
    let buy = |user: &str, identity: Option<&str>, request: &str| {
        let mut body = serde_json::json!({"user": user, "qty": 1, "request_id": request});
        if let Some(identity) = identity {
            body["identity"] = identity.into();
        }
        http::post(serve.addr, "/v1/items/1/buy", &body)
    };
    let cases = [
        ("a", Some("ID-A"), 200, "ok"),
        ("b", Some("ID-A"), 409, "limit_reached"),
        ("c", None, 428, "identity_required"),
        ("bound", Some("ID-C"), 403, "identity_mismatch"),
        ("bound", None, 200, "ok"),
        ("d", Some("ID-B"), 409, "limit_reached"),
    ];
    for (n, (user, identity, status, outcome)) in cases.into_iter().enumerate() {
        let answer = buy(user, identity, &format!("r{n}"));
        assert_eq!(
            answer.status, status,
            "{user} {identity:?}: {}",
            answer.body
        );
        assert_eq!(answer.json()["outcome"], outcome, "{}", answer.body);
    }
    let left: i64 = server.conn().get(ItemKeys::live("idh", "1").stock).unwrap();
    assert_eq!(left, 8);
}

/// An item under both limits claims the group, then the identity; the
/// identity's refusal gives the group's claim back, so the user may still
/// buy the group's SKU with another identity.
#[test]
fn a_later_limit_refusing_releases_the_earlier_claims_of_the_buy() {
    let server = RedisServer::start();
    let file = group_spec("both", 5)
        .field("per_identity_limit", "1")
        .write();
    preheat(&file, &server);
    let buy = |user: &str, sku: &str, identity: &str, request: &str| {
        seckill(&["buy", "--item", sku, "--user", user, "--identity", identity])
            .args(&["--request-id", request])
            .campaign(&file)
            .redis(&server)
    };
    buy("a", "black-128", "ID-X", "r1").succeeds();
    buy("b", "black-128", "ID-X", "r1").fails_with(exit_codes::LIMIT_REACHED);
    let group = LimitKeys::group("both", "iphone-16-pro", "b");
    let held: Option<i64> = server.conn().hget(&group.counts, "b").unwrap();
    assert_eq!(held, None, "the identity's refusal kept the group's claim");
    buy("b", "white-128", "ID-Y", "r2").succeeds();
}

/// `seckill acl --role buyer`'s line as words after `ACL SETUSER`, the
/// user's name first (single quotes removed).
fn buyer_words(file: &CampaignFile, password_file: &str) -> Vec<String> {
    let line = seckill(&["acl", "--role", "buyer", "--password-file", password_file])
        .campaign(file)
        .succeeds()
        .stdout();
    let line = line.lines().find(|l| l.starts_with("ACL SETUSER")).unwrap();
    let (mut words, mut word, mut quoted) = (Vec::new(), String::new(), false);
    for c in line.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => words.push(std::mem::take(&mut word)),
            c => word.push(c),
        }
    }
    words.push(word);
    words.split_off(2)
}

/// `buy --dry-run` of an item under a limit proves the claim and release
/// scripts and the binding's read too (on every node: the limit buckets
/// are anywhere); the buyer's line without the limit selector is refused
/// naming `limit_claim`, while a plain item of the campaign is still proven.
#[test]
fn a_dry_run_of_a_limited_item_proves_its_claims() {
    let server = RedisServer::start();
    let file = group_spec("dry", 5).item("plain", 5).write();
    preheat(&file, &server);
    let password = file.dir.path().join("buyer.pw");
    std::fs::write(&password, "buyer-secret\n").unwrap();
    let password = password.display().to_string();
    seckill(&[
        "acl",
        "--role",
        "buyer",
        "--password-file",
        &password,
        "--apply",
    ])
    .campaign(&file)
    .redis(&server)
    .succeeds();
    let buyer = format!(
        "redis://seckill-buyer:buyer-secret@127.0.0.1:{}/0",
        server.port
    );
    let dry = |item: &str| {
        seckill(&["buy", "--item", item, "--user", "alice", "--dry-run"])
            .campaign(&file)
            .redis_url(&buyer)
            .json()
    };
    let checks = |proof: &serde_json::Value| proof["credentials"][0]["checks"].as_u64().unwrap();
    let plain = dry("plain").succeeds().json();
    let limited = dry("blue-128").succeeds().json();
    assert_eq!(checks(&limited), checks(&plain) + 3, "{limited}");

    let words: Vec<String> = buyer_words(&file, &password)
        .into_iter()
        .filter(|word| !word.contains("limit_counts"))
        .collect();
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(&words)
        .query(&mut server.conn())
        .unwrap();
    let refused = dry("blue-128").fails_with(exit_codes::ACL_CHECK_FAILED);
    let said = refused.stdout() + &refused.stderr();
    assert!(said.contains("limit_claim"), "{}", refused.describe());
    dry("plain").succeeds();
}

/// `init` after a rehearsal resets the limits with the items: a user who
/// bought a SKU of the group in the rehearsal buys again in the sale (a
/// per-identity count likewise); `--dry-run` counts the limit keys too.
#[test]
fn init_resets_the_limits_with_the_items() {
    let server = RedisServer::start();
    let file = group_spec("ri", 5).field("per_identity_limit", "1").write();
    preheat(&file, &server);
    let buy = |sku: &str, request: &str| {
        seckill(&[
            "buy",
            "--item",
            sku,
            "--user",
            "alice",
            "--identity",
            "ID-1",
        ])
        .args(&["--request-id", request])
        .campaign(&file)
        .redis(&server)
    };
    buy("black-128", "r1").succeeds();
    buy("white-128", "r2").fails_with(exit_codes::LIMIT_REACHED);
    let dry = seckill(&["init", "--yes", "--purge-orders", "ri", "--dry-run"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json();
    let counted: u64 = dry["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["keys_deleted"].as_u64().unwrap())
        .sum();
    seckill(&["init", "--yes", "--purge-orders", "ri"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let keys: Vec<String> = server.conn().keys("*limit_c*").unwrap();
    assert!(keys.is_empty(), "limit keys left by init: {keys:?}");
    assert!(counted > 0, "{dry}");
    buy("white-128", "r3").succeeds();
}
