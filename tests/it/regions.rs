//! One sale over independent Redis deployments (issue 27, docs/regions.md),
//! seen from the sale's side, with real processes on real servers: all the
//! demand in one region still sells every unit (the mover, `regions
//! rebalance --watch`, brings the other region's stock) and the time its
//! shoppers were told `sold_out` while units sat elsewhere stays within two
//! transfer latencies and a sweep; a user buys only in the home region, so
//! per-user limits hold across regions (CLI and `serve`); the transfer
//! scripts refuse before their first write; and the roles `seckill acl`
//! generates run the regions jobs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::Commands;
use seckill::model::exit_codes::{
    CORRUPT_STATE, DUPLICATE, FENCED, IN_TRANSIT, RUNTIME_ERROR, SOLD_OUT, SUCCESS, WRONG_REGION,
};
use seckill::model::keys::ItemKeys;
use seckill::redis_client::scripts;

use crate::corrupt_state::snapshot;
use crate::support::serve::Serve;
use crate::support::spec::{Run, campaign, seckill};
use crate::support::{CampaignFile, RedisServer, http, start_replica_of};

const CAMPAIGN: &str = "rg";
const ITEM: &str = "1";

/// Two regions, `bj` (share 600) and `sh` (share 400), each its own
/// standalone Redis, and a campaign of one item over both.
struct Sale {
    bj: RedisServer,
    sh: RedisServer,
    file: CampaignFile,
}

impl Sale {
    /// `stock` units of item 1 split 600/400; one unit per user.
    fn start(stock: i64) -> Sale {
        let (bj, sh) = (RedisServer::start(), RedisServer::start());
        let file = campaign_over(&bj.url(), &sh.url(), stock);
        Sale { bj, sh, file }
    }

    /// `seckill preheat` without `--region`: every region loads its share.
    fn preheat(&self) {
        seckill(&["preheat"]).campaign(&self.file).succeeds();
    }

    fn server(&self, region: &str) -> &RedisServer {
        match region {
            "bj" => &self.bj,
            "sh" => &self.sh,
            other => panic!("no region {other}"),
        }
    }

    /// `seckill --region REGION ARGS...` on this sale.
    fn in_region(&self, region: &str, args: &[&str]) -> Run {
        seckill(&["--region", region])
            .args(args)
            .campaign(&self.file)
    }

    /// Users `u<from>`, `u<from+1>`, ... whose home is `region`, as `seckill
    /// regions home` says (`count` of them).
    fn users_at_home(&self, region: &str, count: usize) -> Vec<String> {
        homes(&self.file, region, count)
    }
}

/// The campaign file of a sale over `bj` and `sh`.
fn campaign_over(bj: &str, sh: &str, stock: i64) -> CampaignFile {
    campaign(CAMPAIGN)
        .field("ends_at", "2099-01-01T00:00:00Z")
        .keep_after_end("1h")
        .per_user_limit(1)
        .field(
            "regions",
            &format!(
                "{{ bj: {{ redis: \"{bj}\", share: 600 }}, sh: {{ redis: \"{sh}\", share: 400 }} }}"
            ),
        )
        .item(ITEM, stock)
        .write()
}

/// `count` users whose home region is `region`, from `seckill regions home
/// ... --format json` (candidates `u0`, `u1`, ... asked in one run).
fn homes(file: &CampaignFile, region: &str, count: usize) -> Vec<String> {
    let candidates: Vec<String> = (0..count * 2 + 64).map(|i| format!("u{i}")).collect();
    let report = seckill(&["regions", "home"])
        .args(&candidates)
        .campaign(file)
        .json()
        .succeeds()
        .json();
    let users: Vec<String> = report["homes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["home"] == region)
        .map(|h| h["user"].as_str().unwrap().to_string())
        .take(count)
        .collect();
    assert_eq!(users.len(), count, "too few users at home in {region}");
    users
}

fn keys() -> ItemKeys {
    ItemKeys::live(CAMPAIGN, ITEM)
}

/// A meta field as an integer (0 when absent).
fn meta_int(conn: &mut redis::Connection, field: &str) -> i64 {
    let value: Option<i64> = conn.hget(keys().meta, field).unwrap();
    value.unwrap_or(0)
}

fn stock(conn: &mut redis::Connection) -> i64 {
    conn.get(keys().stock).unwrap()
}

/// One answer a buyer got.
#[derive(Debug, Clone, Copy)]
struct Answer {
    started: Instant,
    ended: Instant,
    code: i32,
}

/// What the test read of both regions at one moment.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Instant,
    /// Units not (yet) sellable in sh: bj's stock and what bj sent sh that
    /// sh has not credited. Read sh's `in` first, bj's `out` after: `out`
    /// only grows, so the figure is never below the truth.
    elsewhere: i64,
}

/// The 99th percentile of `values` (sorted here).
fn p99(values: &mut [Duration]) -> Duration {
    values.sort_unstable();
    values[((values.len() - 1) as f64 * 0.99).round() as usize]
}

#[test]
fn all_demand_in_one_region_sells_every_unit() {
    const UNITS: i64 = 1000;
    const PARALLEL: usize = 8;
    let interval = Duration::from_millis(50);
    let sale = Sale::start(UNITS);
    sale.preheat();
    // More shoppers than units: the ones told sold_out while units sat in
    // bj are no buyers, and the sale must still end with every unit sold.
    let users = Arc::new(sale.users_at_home("sh", 1600));

    let mut mover = seckill(&[
        "regions",
        "rebalance",
        "--watch",
        "--interval",
        "50ms",
        "--idle-after",
        "2s",
    ])
    .campaign(&sale.file)
    .json()
    .start();

    let done = Arc::new(AtomicBool::new(false));
    let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
    let sampler = {
        let (done, samples) = (Arc::clone(&done), Arc::clone(&samples));
        let (mut bj, mut sh) = (sale.bj.conn(), sale.sh.conn());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                let credited = meta_int(&mut sh, "in:bj");
                let sh_stock = stock(&mut sh);
                let (bj_stock, sent): (i64, Option<i64>) = redis::pipe()
                    .atomic()
                    .get(keys().stock)
                    .hget(keys().meta, "out:sh")
                    .query(&mut bj)
                    .unwrap();
                assert!(
                    bj_stock >= 0 && sh_stock >= 0,
                    "a region below 0: bj {bj_stock}, sh {sh_stock}"
                );
                samples.lock().unwrap().push(Sample {
                    at: Instant::now(),
                    elsewhere: bj_stock + sent.unwrap_or(0) - credited,
                });
                std::thread::sleep(Duration::from_millis(3));
            }
        })
    };

    // Every shopper in sh, PARALLEL at a time, each a real `seckill buy`
    // process; a loop stops when the whole sale is sold out (nothing in
    // either region nor in transit) or the shoppers run out.
    let next = Arc::new(AtomicUsize::new(0));
    let answers: Arc<Mutex<Vec<Answer>>> = Arc::default();
    let started = Instant::now();
    let buyers: Vec<_> = (0..PARALLEL)
        .map(|_| {
            let (users, next, answers, done) = (
                Arc::clone(&users),
                Arc::clone(&next),
                Arc::clone(&answers),
                Arc::clone(&done),
            );
            let file = sale.file.path.clone();
            let (bj_url, sh_url) = (sale.bj.url(), sale.sh.url());
            std::thread::spawn(move || {
                let mut bj = redis::Client::open(bj_url)
                    .unwrap()
                    .get_connection()
                    .unwrap();
                let mut sh = redis::Client::open(sh_url)
                    .unwrap()
                    .get_connection()
                    .unwrap();
                while !done.load(Ordering::SeqCst) {
                    let Some(user) = users.get(next.fetch_add(1, Ordering::SeqCst)) else {
                        return;
                    };
                    let begun = Instant::now();
                    let ran = seckill(&["--region", "sh", "-c"])
                        .args(&[file.to_str().unwrap()])
                        .args(&["buy", "--item", ITEM, "--user", user])
                        .runs();
                    let answer = Answer {
                        started: begun,
                        ended: Instant::now(),
                        code: ran.code(),
                    };
                    assert!(
                        answer.code == SUCCESS || answer.code == SOLD_OUT,
                        "{}",
                        ran.describe()
                    );
                    answers.lock().unwrap().push(answer);
                    if answer.code == SOLD_OUT
                        && stock(&mut sh) == 0
                        && stock(&mut bj) == 0
                        && meta_int(&mut bj, "out:sh") == meta_int(&mut sh, "in:bj")
                    {
                        done.store(true, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    for buyer in buyers {
        buyer.join().expect("a buyer loop failed");
    }
    let selling = started.elapsed();
    done.store(true, Ordering::SeqCst);
    sampler.join().expect("the sampler failed");

    // The mover's report: SIGTERM, it ends its round and prints it.
    let pid = mover.child().id().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let report = mover.finish_within(Duration::from_secs(20));
    assert_eq!(report.code(), SUCCESS, "{}", report.describe());
    let report = report.json();

    let answers = answers.lock().unwrap().clone();
    let samples = samples.lock().unwrap().clone();
    let sold = answers.iter().filter(|a| a.code == SUCCESS).count() as i64;
    assert_eq!(
        sold,
        UNITS,
        "{} shoppers answered, {sold} bought; mover: {report}",
        answers.len()
    );
    let (mut bj, mut sh) = (sale.bj.conn(), sale.sh.conn());
    assert_eq!((stock(&mut bj), stock(&mut sh)), (0, 0));
    let orders = |conn: &mut redis::Connection| -> i64 { conn.xlen(keys().orders).unwrap() };
    assert_eq!((orders(&mut bj), orders(&mut sh)), (0, UNITS));

    // The books, as the operator proves them.
    seckill(&["reconcile", "--regions"])
        .campaign(&sale.file)
        .succeeds();
    let status = seckill(&["regions", "status"])
        .campaign(&sale.file)
        .json()
        .succeeds()
        .json();
    let item = &status["items"][0];
    assert_eq!(item["in_transit"], serde_json::json!([]), "{status}");
    assert_eq!(item["sold"], UNITS, "{status}");
    assert_eq!(item["stock"], 0, "{status}");
    let region = |name: &str| {
        item["regions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["region"] == name)
            .unwrap()["slot"]
            .clone()
    };
    let sold_in = |name: &str| {
        region(name)["initial"].as_i64().unwrap() - region(name)["stock"].as_i64().unwrap()
    };
    assert_eq!(sold_in("bj"), 0, "{status}");
    assert_eq!(sold_in("sh"), UNITS - sold_in("bj"), "{status}");
    assert_eq!(region("bj")["sent_to"]["sh"], 600, "{status}");
    assert_eq!(region("sh")["received_from"]["bj"], 600, "{status}");

    // The stranded window, from the shoppers' side: the span during which
    // sh answered sold_out while units sat in bj (or between bj and sh).
    // Units elsewhere only decrease here (bj never sells), so a sold_out
    // answer was stranded exactly when the first sample after it still saw
    // units elsewhere.
    let stranded: Vec<&Answer> = answers
        .iter()
        .filter(|a| a.code == SOLD_OUT)
        .filter(|a| {
            let after = samples.partition_point(|s| s.at < a.ended);
            samples.get(after).is_some_and(|s| s.elsewhere > 0)
        })
        .collect();
    let window = match (
        stranded.iter().map(|a| a.started).min(),
        stranded.iter().map(|a| a.ended).max(),
    ) {
        (Some(first), Some(last)) => last.duration_since(first),
        _ => Duration::ZERO,
    };
    let latency_p99 = Duration::from_micros(
        report["latency_p99_us"]
            .as_u64()
            .unwrap_or_else(|| panic!("the mover credited nothing: {report}")),
    );
    let latency_p50 = Duration::from_micros(report["latency_p50_us"].as_u64().unwrap());
    let mut buy_times: Vec<Duration> = answers
        .iter()
        .map(|a| a.ended.duration_since(a.started))
        .collect();
    let buy_p99 = p99(&mut buy_times);
    // Slack, for a shared 2-core box running the whole suite: each edge of
    // the window is a whole `seckill buy` process (exec, connect, script,
    // exit; its measured p99 counts once per edge), and between the
    // region's last unit and the credit the mover wakes from its sleep,
    // reads both regions, debits, WAITs and credits — five wake-ups, each of
    // which may wait behind the 8 buyer processes, two redis-servers, this
    // sampler and the suite's other tests for a CFS slice or two (tens of ms
    // each at this load): 500 ms covers ten such waits.
    let slack = buy_p99 * 2 + Duration::from_millis(500);
    let bound = latency_p99 * 2 + interval + slack;
    let mover_sh = report["stranded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["region"] == "sh")
        .cloned()
        .unwrap_or_default();
    eprintln!(
        "regions sale: {UNITS} units sold in {selling:?} by {} shoppers ({PARALLEL} at a time, \
         {} told sold_out, {} of them while units sat in bj); stranded window from the \
         shoppers' side {window:?} (bound {bound:?} = 2 x transfer p99 {latency_p99:?} + sweep \
         {interval:?} + slack {slack:?}, buy p99 {buy_p99:?}); transfer latency p50 \
         {latency_p50:?}; mover: {} rounds, {} transfers, {} units moved, stranded in sh {} ms \
         (longest {} ms)",
        answers.len(),
        answers.iter().filter(|a| a.code == SOLD_OUT).count(),
        stranded.len(),
        report["rounds"],
        report["transfers"],
        report["units_moved"],
        mover_sh["total_ms"],
        mover_sh["longest_ms"],
    );
    assert!(
        window <= bound,
        "shoppers in sh were told sold_out for {window:?} while bj held units (bound {bound:?}); \
         mover: {report}"
    );
    let mover_longest = Duration::from_millis(mover_sh["longest_ms"].as_u64().unwrap_or(0));
    assert!(
        mover_longest <= bound,
        "the mover saw sh stranded {mover_longest:?} (bound {bound:?}): {report}"
    );
}

#[test]
fn a_mover_started_after_a_region_sold_out_brings_it_the_idle_stock() {
    let sale = Sale::start(10);
    sale.preheat();
    let users = sale.users_at_home("sh", 6);
    for user in &users[..4] {
        sale.in_region("sh", &["buy", "--item", ITEM, "--user", user])
            .succeeds();
    }
    // sh is sold out and bj, which sells nothing, holds 6: its shoppers are
    // told sold_out, and no mover was running to see the sales.
    sale.in_region("sh", &["buy", "--item", ITEM, "--user", &users[4]])
        .fails_with(SOLD_OUT);
    let round = seckill(&["regions", "rebalance"])
        .campaign(&sale.file)
        .json()
        .succeeds()
        .json();
    assert_eq!(round["units_moved"], 6, "{round}");
    sale.in_region("sh", &["buy", "--item", ITEM, "--user", &users[5]])
        .succeeds();
    // Once: the regions, idle now, do not pass the rest back and forth.
    let idle = seckill(&[
        "regions",
        "rebalance",
        "--watch",
        "--interval",
        "20ms",
        "--for",
        "300ms",
    ])
    .campaign(&sale.file)
    .json()
    .succeeds()
    .json();
    assert_eq!(idle["transfers"], 0, "{idle}");
    seckill(&["reconcile", "--regions"])
        .campaign(&sale.file)
        .succeeds();
}

/// Every key of one Redis, byte for byte (`DUMP`, type, whether it expires).
type Keys = BTreeMap<String, (String, Vec<u8>, i64)>;

/// [`Keys`] of both regions.
type Both = (Keys, Keys);

fn both(sale: &Sale) -> Both {
    (snapshot(&mut sale.bj.conn()), snapshot(&mut sale.sh.conn()))
}

/// `after` is `before` byte for byte; a failure names the keys that changed
/// (the DUMPs themselves say nothing to a reader).
fn unchanged(before: &Keys, after: &Keys, what: &str) {
    let changed: std::collections::BTreeSet<&String> = before
        .keys()
        .chain(after.keys())
        .filter(|key| before.get(*key) != after.get(*key))
        .collect();
    assert!(changed.is_empty(), "{what}: changed {changed:?}");
}

/// [`unchanged`] in both regions.
fn both_unchanged(before: &Both, after: &Both, what: &str) {
    unchanged(&before.0, &after.0, &format!("{what} (in bj)"));
    unchanged(&before.1, &after.1, &format!("{what} (in sh)"));
}

#[test]
fn a_user_buys_only_in_the_home_region_so_limits_hold_across_regions() {
    let sale = Sale::start(10);
    sale.preheat();
    let at_bj = sale.users_at_home("bj", 3);
    let at_sh = sale.users_at_home("sh", 3);
    let shoppers = [
        (&at_bj[0], "bj", "sh"),
        (&at_bj[1], "bj", "sh"),
        (&at_sh[0], "sh", "bj"),
        (&at_sh[1], "sh", "bj"),
    ];
    for (user, home, away) in shoppers {
        let buy = |region: &str| {
            sale.in_region(region, &["buy", "--item", ITEM, "--user", user])
                .runs()
        };
        // Sent to both regions at once, twice: one unit in all (per_user_limit 1).
        for round in 0..2 {
            let away_before = snapshot(&mut sale.server(away).conn());
            let (at_home, elsewhere) = std::thread::scope(|s| {
                let at_home = s.spawn(|| buy(home));
                let elsewhere = s.spawn(|| buy(away));
                (at_home.join().unwrap(), elsewhere.join().unwrap())
            });
            let expected = if round == 0 { SUCCESS } else { DUPLICATE };
            assert_eq!(at_home.code(), expected, "{}", at_home.describe());
            assert_eq!(elsewhere.code(), WRONG_REGION, "{}", elsewhere.describe());
            assert!(
                elsewhere.stderr().contains(&format!(
                    "wrong_region: user \"{user}\" buys in region {home}, not {away}"
                )),
                "{}",
                elsewhere.describe()
            );
            unchanged(
                &away_before,
                &snapshot(&mut sale.server(away).conn()),
                &format!("a buy refused as wrong_region wrote in {away}"),
            );
        }
        let bought = |region: &str| -> Option<i64> {
            sale.server(region)
                .conn()
                .hget(keys().buyers, user)
                .unwrap()
        };
        assert_eq!((bought(home), bought(away)), (Some(1), None), "{user}");
    }
    let sold = |conn: &mut redis::Connection| -> i64 { conn.xlen(keys().orders).unwrap() };
    assert_eq!(sold(&mut sale.bj.conn()) + sold(&mut sale.sh.conn()), 4);

    // The same door through `serve --region bj`: 421, wrong_region, nothing written.
    let door = Serve::start(&sale.file, &sale.bj.url(), false, &["--region", "bj"]);
    let stranger = &at_sh[2];
    let before = snapshot(&mut sale.bj.conn());
    let answer = http::buy(door.addr, ITEM, stranger, "r-away");
    assert_eq!(answer.status, 421, "{}", answer.body);
    let body = answer.json();
    assert_eq!(body["error"]["kind"], "wrong_region", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("buys in region sh, not bj"), "{message}");
    unchanged(
        &before,
        &snapshot(&mut sale.bj.conn()),
        "serve wrote a wrong_region buy",
    );
    // A user at home buys through the same door.
    let answer = http::buy(door.addr, ITEM, &at_bj[2], "r-home");
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.json()["outcome"], "ok", "{}", answer.body);
}

/// Run `script` on `server` with the item's meta and stock: it must leave
/// every key as it was; returns its status word (or the error) and the
/// whole reply as text.
fn refused(server: &RedisServer, script: &str, argv: &[&str]) -> (String, String) {
    let mut conn = server.conn();
    let before = snapshot(&mut conn);
    let keys = keys();
    let reply = scripts::invoke_positional(script, &[&keys.meta, &keys.stock], argv, &mut conn)
        .unwrap_or_else(|e| panic!("{script}: {e}"));
    unchanged(
        &before,
        &snapshot(&mut conn),
        &format!("{script} {argv:?} wrote before refusing: {reply:?}"),
    );
    match reply {
        Ok(redis::Value::Array(fields)) => {
            let words: Vec<String> = fields
                .iter()
                .map(|f| match f {
                    redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                    other => format!("{other:?}"),
                })
                .collect();
            (words[0].clone(), words.join(" "))
        }
        Ok(other) => panic!("{script}: {other:?}"),
        Err(error) => ("error".into(), error.to_string()),
    }
}

/// Corrupt the slot with `corrupt`, expect `script` to refuse naming `key`,
/// then put the slot back.
fn refuses_corrupt(
    server: &RedisServer,
    script: &str,
    argv: &[&str],
    key: &str,
    corrupt: impl FnOnce(&mut redis::Connection),
) {
    let mut conn = server.conn();
    let saved = snapshot(&mut conn);
    corrupt(&mut conn);
    let (status, reply) = refused(server, script, argv);
    assert!(
        (status == "corrupt_state" || status == "error") && reply.contains(key),
        "{script}: {status}: {reply} (should be corrupt_state naming {key})"
    );
    // Back as it was: every key restored from its DUMP.
    for (name, (_, dump, _)) in saved {
        let () = redis::cmd("RESTORE")
            .arg(&name)
            .arg(0)
            .arg(dump)
            .arg("REPLACE")
            .query(&mut conn)
            .unwrap();
    }
}

/// How a test damages a slot.
type Corruption = fn(&mut redis::Connection);

#[test]
fn transfers_refuse_before_writing() {
    let sale = Sale::start(10);
    sale.preheat();
    let (meta, stock_key) = (keys().meta, keys().stock);
    let (bj, sh) = (&sale.bj, &sale.sh);
    let debit = |units: &'static str| ["sh", units, "send", "?node"];
    let credit = ["bj", "3", "?node"];

    // Short: bj holds 6.
    assert_eq!(refused(bj, "region_debit", &debit("7")).0, "short");
    // Corrupt: a stock that is no integer, a meta of another type, a
    // counter that is no integer — in the source and in the destination.
    let corruptions: [(&str, &str, Corruption); 4] = [
        ("stock", "stock", |c| {
            let () = c.set(keys().stock, "abc").unwrap();
        }),
        ("meta", "meta", |c| {
            let () = c.del(keys().meta).unwrap();
            let () = c.set(keys().meta, "x").unwrap();
        }),
        ("out:sh", "meta", |c| {
            let () = c.hset(keys().meta, "out:sh", "x").unwrap();
        }),
        ("in:bj", "meta", |c| {
            let () = c.hset(keys().meta, "in:bj", "x").unwrap();
        }),
    ];
    for (what, key, corrupt) in corruptions {
        let key = if key == "stock" { &stock_key } else { &meta };
        if what != "in:bj" {
            refuses_corrupt(bj, "region_debit", &debit("2"), key, corrupt);
        }
        if what != "out:sh" {
            refuses_corrupt(sh, "region_credit", &credit, key, corrupt);
        }
    }
    // Fenced: neither half writes.
    for server in [bj, sh] {
        let () = server.conn().hset(&meta, "fenced", "1").unwrap();
    }
    assert_eq!(refused(bj, "region_debit", &debit("2")).0, "fenced");
    assert_eq!(refused(sh, "region_credit", &credit).0, "fenced");
    for server in [bj, sh] {
        let () = server.conn().hdel(&meta, "fenced").unwrap();
    }

    // The same refusals through `seckill regions move`: each its exit code,
    // both regions unchanged.
    let moving = |units: &str| {
        seckill(&[
            "regions", "move", "--item", ITEM, "--from", "bj", "--to", "sh",
        ])
        .args(&["--units", units])
        .campaign(&sale.file)
        .runs()
    };
    let before = both(&sale);
    let short = moving("7");
    assert_eq!(short.code(), SOLD_OUT, "{}", short.describe());
    assert!(
        short
            .stdout()
            .contains("SHORT: region bj holds fewer than 7 units"),
        "{}",
        short.describe()
    );
    both_unchanged(&before, &both(&sale), "a short move wrote");

    let () = bj.conn().hset(&meta, "fenced", "1").unwrap();
    let before = both(&sale);
    let fenced = moving("2");
    assert_eq!(fenced.code(), FENCED, "{}", fenced.describe());
    both_unchanged(&before, &both(&sale), "a fenced move wrote");
    let () = bj.conn().hdel(&meta, "fenced").unwrap();

    let () = bj.conn().hset(&meta, "out:sh", "x").unwrap();
    let before = both(&sale);
    let corrupt = moving("2");
    assert_eq!(corrupt.code(), CORRUPT_STATE, "{}", corrupt.describe());
    assert!(
        corrupt
            .stdout()
            .contains(&format!("{meta}: out:sh holds \"x\", not an integer")),
        "{}",
        corrupt.describe()
    );
    both_unchanged(&before, &both(&sale), "a move from a corrupt slot wrote");
    // The proof cannot read bj: exit 1, the key and the value said once.
    let unreadable = seckill(&["reconcile", "--regions"])
        .campaign(&sale.file)
        .fails_with(RUNTIME_ERROR);
    let said = format!("{meta}: out:sh holds \"x\", not an integer");
    assert_eq!(
        unreadable.stderr().matches(&said).count(),
        1,
        "{}",
        unreadable.describe()
    );
    let () = bj.conn().hdel(&meta, "out:sh").unwrap();

    // A corrupt destination: the debit is made (the source cannot know),
    // the credit refuses and writes nothing; the units are in transit
    // (exit 23) until the slot is repaired and a settle credits them.
    let () = sh.conn().hset(&meta, "in:bj", "x").unwrap();
    let destination = snapshot(&mut sh.conn());
    let in_transit = moving("2");
    assert_eq!(in_transit.code(), IN_TRANSIT, "{}", in_transit.describe());
    assert!(
        in_transit
            .stdout()
            .contains(&format!("{meta}: in:bj holds \"x\", not an integer")),
        "{}",
        in_transit.describe()
    );
    unchanged(
        &destination,
        &snapshot(&mut sh.conn()),
        "a corrupt credit wrote",
    );
    assert_eq!(stock(&mut bj.conn()), 4);
    let () = sh.conn().hdel(&meta, "in:bj").unwrap();
    moving("0");
    assert_eq!((stock(&mut bj.conn()), stock(&mut sh.conn())), (4, 6));
    seckill(&["reconcile", "--regions"])
        .campaign(&sale.file)
        .succeeds();
}

#[test]
fn the_generated_roles_run_the_regions_jobs() {
    let sale = Sale::start(10);
    // bj has a replica: the operator's move asks INFO replication and WAITs.
    let _bj_replica = start_replica_of(&sale.bj);
    sale.preheat();
    let dir = sale.file.dir.path();
    let password = |role: &str| {
        let path = dir.join(format!("{role}.pw"));
        std::fs::write(&path, format!("{role}-pw\n")).unwrap();
        path.display().to_string()
    };
    let (operator_pw, buyer_pw) = (password("operator"), password("buyer"));
    for region in ["bj", "sh"] {
        for (role, path) in [("operator", &operator_pw), ("buyer", &buyer_pw)] {
            let applied = sale
                .in_region(
                    region,
                    &["acl", "--role", role, "--password-file", path, "--apply"],
                )
                .json()
                .succeeds()
                .json();
            let user = &applied["users"][0];
            assert_eq!(user["applied"], true, "{applied}");
            assert!(
                user["checks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|c| c["ok"] == true),
                "{applied}"
            );
        }
        let () = redis::cmd("ACL")
            .arg("LOG")
            .arg("RESET")
            .query(&mut sale.server(region).conn())
            .unwrap();
    }
    // Each job's campaign file names its own user in every region's URL.
    let as_user = |user: &str| {
        let url = |server: &RedisServer| format!("redis://{user}@127.0.0.1:{}/0", server.port);
        campaign_over(&url(&sale.bj), &url(&sale.sh), 10)
    };
    let (operator_file, buyer_file) = (as_user("seckill-operator"), as_user("seckill-buyer"));
    let operator = |args: &[&str]| {
        seckill(&["--redis-password-file", &operator_pw])
            .args(args)
            .campaign(&operator_file)
    };
    let buyer = |args: &[&str]| {
        seckill(&["--redis-password-file", &buyer_pw])
            .args(args)
            .campaign(&buyer_file)
    };

    let moved = operator(&[
        "regions", "move", "--item", ITEM, "--from", "bj", "--to", "sh", "--units", "2",
    ])
    .json()
    .succeeds()
    .json();
    assert_eq!(moved["ending"], "credited", "{moved}");
    assert_eq!(moved["replicas"], serde_json::json!([1, 1]), "{moved}");
    let sh_user = &sale.users_at_home("sh", 1)[0];
    buyer(&["--region", "sh", "buy", "--item", ITEM, "--user", sh_user]).succeeds();
    buyer(&["--region", "bj", "buy", "--item", ITEM, "--user", sh_user]).fails_with(WRONG_REGION);
    operator(&["regions", "rebalance"]).succeeds();
    operator(&[
        "regions",
        "rebalance",
        "--watch",
        "--interval",
        "20ms",
        "--for",
        "200ms",
    ])
    .succeeds();
    let status = operator(&["regions", "status"]).json().succeeds().json();
    assert_eq!(status["items"][0]["sold"], 1, "{status}");
    operator(&["reconcile", "--regions"]).succeeds();
    for region in ["bj", "sh"] {
        let log: Vec<redis::Value> = redis::cmd("ACL")
            .arg("LOG")
            .query(&mut sale.server(region).conn())
            .unwrap();
        assert!(
            log.is_empty(),
            "region {region} refused a role something: {log:?}"
        );
    }

    // The buyer may not move stock: refused, nothing written.
    let before = both(&sale);
    let stderr = buyer(&[
        "regions", "move", "--item", ITEM, "--from", "bj", "--to", "sh", "--units", "1",
    ])
    .fails_with(RUNTIME_ERROR)
    .stderr();
    assert!(
        stderr.contains("can't access") || stderr.to_lowercase().contains("noperm"),
        "{stderr}"
    );
    both_unchanged(&before, &both(&sale), "the buyer's move wrote");
}
