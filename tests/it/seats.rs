//! Seat items under real concurrency and faults (docs/seats.md, "Proven
//! under load"): many buyers at once through `serve` or as `seckill`
//! processes, against real Redis servers and a real cluster, counted
//! afterwards seat by seat.
//!
//! Every buy of one size from one section is a pure function of the
//! section's state (lua/lib/seat_pick), and each call is atomic: however the
//! buyers interleave, the order stream, read in order, must be exactly the
//! blocks a one-at-a-time oracle ([`Hall::pick`]) hands out, and every state
//! sampled while they run must be one of the oracle's states. That is how
//! "fill order = preference order" is checked under concurrency.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use redis::Commands;
use seckill::model::exit_codes;
use seckill::model::keys::{ItemKeys, LIVE_PREFIX};
use seckill::model::layout::Layout;

use crate::support::cluster::{RedisCluster, node};
use crate::support::http;
use crate::support::serve::Serve;
use crate::support::spec::seckill;
use crate::support::{CampaignFile, Frozen, RedisServer, campaign_file, preheat};

/// One section as the test knows it: id, rows, seats per row, blocked labels.
#[derive(Clone)]
struct Section {
    id: &'static str,
    rows: usize,
    per_row: usize,
    blocked: &'static [&'static str],
}

impl Section {
    fn size(&self) -> usize {
        self.rows * self.per_row
    }

    /// "A-12-7" -> its index (0-based, row-major), None for another section.
    fn index(&self, label: &str) -> Option<usize> {
        let mut parts = label.rsplitn(3, '-');
        let seat: usize = parts.next()?.parse().ok()?;
        let row: usize = parts.next()?.parse().ok()?;
        (parts.next()? == self.id).then(|| (row - 1) * self.per_row + seat - 1)
    }

    /// The state preheat writes: '.' everywhere, 'x' where blocked.
    fn initial(&self) -> Vec<u8> {
        let mut state = vec![b'.'; self.size()];
        for range in self.blocked {
            let (first, last) = range.split_once("..").unwrap_or((range, range));
            let (from, to) = (self.index(first).unwrap(), self.index(last).unwrap());
            state[from..=to].fill(b'x');
        }
        state
    }

    fn yaml(&self) -> String {
        let blocked: Vec<String> = self.blocked.iter().map(|b| format!("{b:?}")).collect();
        format!(
            "        - {{ id: {}, rows: {}, seats_per_row: {}, tier: vip, price: \"100\", blocked: [{}] }}\n",
            self.id,
            self.rows,
            self.per_row,
            blocked.join(", ")
        )
    }
}

/// A seat item's campaign file: `extra` top-level lines (payment_timeout…).
fn hall_file(sections: &[Section], extra: &str) -> CampaignFile {
    let mut yaml = format!(
        "campaign: hall\nkeep_after_end: 1h\nper_user_limit: 8\n{extra}items:\n  - id: hall-a\n    name: Hall A\n    seats:\n      sections:\n"
    );
    for section in sections {
        yaml.push_str(&section.yaml());
    }
    campaign_file(&yaml)
}

/// The keys of section `i` of item hall-a (its slot of the item's layout).
fn section_keys(sections: &[Section], i: usize) -> ItemKeys {
    Layout::new(LIVE_PREFIX, "hall", "hall-a", sections.len() as u32)
        .bucket(i as u32)
        .keys
}

/// The oracle: the sections' states, and the best-available pick one buy at
/// a time would make (front rows first, leftmost block, sections in order).
#[derive(Clone)]
struct Hall {
    sections: Vec<Section>,
    states: Vec<Vec<u8>>,
}

impl Hall {
    fn new(sections: &[Section]) -> Hall {
        Hall {
            sections: sections.to_vec(),
            states: sections.iter().map(Section::initial).collect(),
        }
    }

    /// Sell the next block of `qty` (byte `byte`): (section, first index).
    fn pick(&mut self, qty: usize, byte: u8) -> Option<(usize, usize)> {
        for (s, section) in self.sections.iter().enumerate() {
            for row in 0..section.rows {
                let line = &self.states[s][row * section.per_row..(row + 1) * section.per_row];
                if let Some(at) = line.windows(qty).position(|w| w.iter().all(|&b| b == b'.')) {
                    let first = row * section.per_row + at;
                    self.states[s][first..first + qty].fill(byte);
                    return Some((s, first));
                }
            }
        }
        None
    }
}

/// The section's state and stock, read in one MULTI (one moment).
fn sample(conn: &mut redis::Connection, keys: &ItemKeys) -> (Vec<u8>, i64) {
    redis::pipe()
        .atomic()
        .get(&keys.seats)
        .get(&keys.stock)
        .query(conn)
        .unwrap()
}

/// Every order entry of a section's stream, in stream order: (order id,
/// user, seat labels).
fn stream_orders(conn: &mut redis::Connection, keys: &ItemKeys) -> Vec<(String, String, String)> {
    let reply: redis::streams::StreamRangeReply = conn.xrange_all(&keys.orders).unwrap();
    reply
        .ids
        .iter()
        .filter(|entry| {
            entry
                .get::<String>("event")
                .is_none_or(|e| e == "ordered" || e.is_empty())
        })
        .filter_map(|entry| {
            Some((
                entry.get::<String>("order_id")?,
                entry.get::<String>("user_id")?,
                entry.get::<String>("seats")?,
            ))
        })
        .collect()
}

/// Checks of one ok: its seats are one block, side by side, in one row.
fn assert_one_block(section: &Section, seats: &[String]) -> (usize, usize) {
    let indexes: Vec<usize> = seats
        .iter()
        .map(|l| {
            section
                .index(l)
                .unwrap_or_else(|| panic!("{l} is not in {}", section.id))
        })
        .collect();
    let first = indexes[0];
    for (k, index) in indexes.iter().enumerate() {
        assert_eq!(*index, first + k, "not side by side: {seats:?}");
        assert_eq!(
            index / section.per_row,
            first / section.per_row,
            "two rows: {seats:?}"
        );
    }
    (first, indexes.len())
}

/// The counting after a sale of best-available blocks of `qty` (no holds):
/// the stream is the oracle's sequence, ok answers and stream entries are
/// the same orders, no seat sold twice, the sold bytes are their union.
fn assert_sold_as_the_oracle_says(
    conns: &mut [redis::Connection],
    sections: &[Section],
    qty: usize,
    oks: &[(String, Vec<String>)],
) {
    let mut oracle = Hall::new(sections);
    let mut sold_by_answer: HashMap<String, Vec<String>> = HashMap::new();
    for (order, seats) in oks {
        assert!(
            sold_by_answer
                .insert(order.clone(), seats.clone())
                .is_none(),
            "{order} twice"
        );
    }
    let mut entries = 0;
    // Sections fill one after the other, in file order.
    for (s, section) in sections.iter().enumerate() {
        let keys = section_keys(sections, s);
        let conn = &mut conns[s];
        let mut seen: HashSet<usize> = HashSet::new();
        for (order, _user, labels) in stream_orders(conn, &keys) {
            let seats: Vec<String> = labels.split(',').map(String::from).collect();
            let (first, len) = assert_one_block(section, &seats);
            assert_eq!(len, qty);
            let expected = oracle.pick(qty, b's');
            assert_eq!(
                expected,
                Some((s, first)),
                "section {} order {order}: {seats:?} is not the next block in preference order",
                section.id
            );
            for k in first..first + len {
                assert!(seen.insert(k), "seat {} sold twice", seats[k - first]);
            }
            assert_eq!(
                sold_by_answer.get(&order),
                Some(&seats),
                "order {order}: the answer and the stream differ"
            );
            entries += 1;
        }
        let (state, stock) = sample(conn, &keys);
        assert_eq!(
            state, oracle.states[s],
            "section {} final state",
            section.id
        );
        let sold: BTreeSet<usize> = (0..state.len()).filter(|&i| state[i] == b's').collect();
        assert_eq!(
            sold,
            seen.into_iter().collect(),
            "the sold bytes are the orders' seats"
        );
        assert_eq!(stock as usize, state.iter().filter(|&&b| b == b'.').count());
    }
    assert_eq!(entries, oks.len(), "every ok is one order entry");
    assert!(
        oracle.pick(qty, b's').is_none(),
        "the sale stopped with a block left"
    );
}

/// Each ok's order id and seat labels.
type Oks = Vec<(String, Vec<String>)>;

/// `threads` HTTP buyers of best blocks of `qty` on `serve` until every
/// answer is sold_out or no_block, each buy a new user; a sampler checks
/// every section's state against the oracle's states while they run.
fn buy_until_sold_out(
    addr: std::net::SocketAddr,
    conns: Vec<redis::Connection>,
    sections: &[Section],
    threads: usize,
    qty: usize,
) -> (Oks, Vec<redis::Connection>, usize) {
    // Every state the oracle passes through, per section.
    let mut oracle = Hall::new(sections);
    let mut reachable: Vec<HashSet<Vec<u8>>> = oracle
        .states
        .iter()
        .map(|s| HashSet::from([s.clone()]))
        .collect();
    while let Some((s, _)) = oracle.pick(qty, b's') {
        reachable[s].insert(oracle.states[s].clone());
    }
    let done = Arc::new(AtomicBool::new(false));
    let next_user = Arc::new(AtomicU64::new(0));
    let oks = Arc::new(Mutex::new(Vec::new()));
    let sampler = {
        let done = Arc::clone(&done);
        let sections = sections.to_vec();
        std::thread::spawn(move || {
            let mut conns = conns;
            let mut samples = 0;
            loop {
                let last = done.load(Ordering::SeqCst);
                for (s, section) in sections.iter().enumerate() {
                    let (state, stock) = sample(&mut conns[s], &section_keys(&sections, s));
                    let count = |b: u8| state.iter().filter(|&&x| x == b).count();
                    assert_eq!(
                        count(b'.') + count(b'h') + count(b's') + count(b'x'),
                        section.size(),
                        "section {}: a byte that is no seat state",
                        section.id
                    );
                    assert_eq!(
                        stock as usize,
                        count(b'.'),
                        "section {}: stock is not the free seats",
                        section.id
                    );
                    assert!(
                        reachable[s].contains(&state),
                        "section {}: a state no order of buys reaches: {}",
                        section.id,
                        String::from_utf8_lossy(&state)
                    );
                    samples += 1;
                }
                if last {
                    return (conns, samples);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let buyers: Vec<_> = (0..threads)
        .map(|_| {
            let next_user = Arc::clone(&next_user);
            let oks = Arc::clone(&oks);
            std::thread::spawn(move || {
                loop {
                    let user = format!("u{}", next_user.fetch_add(1, Ordering::SeqCst));
                    let answer = http::post(
                        addr,
                        "/v1/items/hall-a/buy",
                        &serde_json::json!({"user": user, "qty": qty, "request_id": user}),
                    );
                    let body = answer.json();
                    match body["outcome"].as_str() {
                        Some("ok") => {
                            let seats: Vec<String> = body["seats"]
                                .as_array()
                                .unwrap_or_else(|| panic!("an ok without seats: {body}"))
                                .iter()
                                .map(|s| s.as_str().unwrap().to_string())
                                .collect();
                            let order = body["order_id"].as_str().unwrap().to_string();
                            oks.lock().unwrap().push((order, seats));
                        }
                        Some("sold_out") | Some("no_block") => return,
                        _ => panic!("unexpected answer: {body}"),
                    }
                }
            })
        })
        .collect();
    for buyer in buyers {
        buyer.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let (conns, samples) = sampler.join().unwrap();
    let oks = std::mem::take(&mut *oks.lock().unwrap());
    (oks, conns, samples)
}

/// A 50 × 40 section with blocked seats at a row's start and mid-row (so a
/// block that ran past a row's end or over a blocked seat would show), 64
/// buyers of 4 at once through `serve` until no block of 4 is left.
#[test]
fn sixty_four_best_available_buyers_sell_each_seat_once_in_preference_order() {
    let server = RedisServer::start();
    let sections = [Section {
        id: "A",
        rows: 50,
        per_row: 40,
        blocked: &["A-1-1..A-1-2", "A-7-20"],
    }];
    let file = hall_file(&sections, "");
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &[]);
    let started = Instant::now();
    let (oks, mut conns, samples) =
        buy_until_sold_out(serve.addr, vec![server.conn()], &sections, 64, 4);
    eprintln!(
        "{} blocks sold in {:?}, {samples} samples",
        oks.len(),
        started.elapsed()
    );
    assert!(samples > 10, "only {samples} samples while buying");
    for (_, seats) in &oks {
        assert_one_block(&sections[0], seats);
    }
    assert_sold_as_the_oracle_says(&mut conns, &sections, 4, &oks);
    // 2,000 seats, 3 blocked, 2 stranded in row 1, 3 left of the blocked seat in row 7.
    assert_eq!(oks.len() * 4, 2000 - 3 - 2 - 3);
}

/// The same on a 3-master cluster with replicas: six sections, on every
/// master, `serve` running as the buyer role `seckill acl` generates.
#[test]
fn six_sections_on_every_master_sell_each_seat_once_as_the_buyer_role() {
    let cluster = RedisCluster::start_with_replicas(1);
    let ids = ["A", "B", "C", "D", "E", "F"];
    let sections: Vec<Section> = ids
        .iter()
        .map(|id| Section {
            id,
            rows: 10,
            per_row: 22,
            blocked: &[],
        })
        .collect();
    let file = hall_file(&sections, "");
    let roles = cluster.create_roles(&file);
    seckill(&["preheat"])
        .env("SECKILL_REDIS_CLUSTER", "true")
        .redis_url(&roles.seeds("operator"))
        .campaign(&file)
        .succeeds();
    let masters: Vec<u16> = (0..sections.len())
        .map(|s| {
            cluster
                .master_and_replicas_of(&section_keys(&sections, s).seats)
                .0
        })
        .collect();
    let distinct: BTreeSet<u16> = masters.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        3,
        "sections not on every master: {masters:?}"
    );
    let conns: Vec<redis::Connection> = masters.iter().map(|p| node(*p).unwrap()).collect();
    let serve = Serve::start(&file, &roles.seeds("buyer"), true, &[]);
    let (oks, mut conns, samples) = buy_until_sold_out(serve.addr, conns, &sections, 64, 4);
    assert!(samples > 10, "only {samples} samples while buying");
    // 22 seats a row: five blocks of 4 and two seats stranded, every row.
    assert_eq!(oks.len(), 6 * 10 * 5);
    assert_sold_as_the_oracle_says(&mut conns, &sections, 4, &oks);
    let denials = cluster.take_acl_denials();
    assert!(
        denials.iter().all(|d| !d.contains("seckill-buyer")),
        "the buyer role was refused: {denials:?}"
    );
}

/// `seckill ARGS` on `server` with `file`, as JSON.
fn run(file: &CampaignFile, server: &RedisServer, args: &[&str]) -> crate::support::spec::Ran {
    seckill(args).campaign(file).redis(server).json().runs()
}

/// A state read and its stock: the stock is always the free seats.
fn state_of(server: &RedisServer, sections: &[Section], s: usize) -> String {
    let (state, stock) = sample(&mut server.conn(), &section_keys(sections, s));
    let free = state.iter().filter(|&&b| b == b'.').count();
    assert_eq!(stock as usize, free, "stock is not the free seats");
    String::from_utf8(state).unwrap()
}

/// Holds of 5 s: abandoned ones come back with `expire` and sell again,
/// paid ones never return, a cancel returns exactly its seats exactly once.
#[test]
fn abandoned_holds_sell_again_and_paid_or_cancelled_holds_return_exactly_once() {
    let server = RedisServer::start();
    let sections = [Section {
        id: "A",
        rows: 2,
        per_row: 8,
        blocked: &[],
    }];
    let file = hall_file(&sections, "payment_timeout: 5s\n");
    preheat(&file, &server);
    let mut orders = Vec::new();
    for user in ["paid", "cancelled", "gone-1", "gone-2"] {
        let reply = run(
            &file,
            &server,
            &["buy", "--item", "hall-a", "--user", user, "--qty", "4"],
        )
        .json();
        assert_eq!(reply["outcome"], "ok", "{reply}");
        orders.push(reply["order_id"].as_str().unwrap().to_string());
    }
    let bought = Instant::now();
    assert_eq!(state_of(&server, &sections, 0), "hhhhhhhhhhhhhhhh");
    let paid = run(&file, &server, &["pay", "--order", &orders[0]]);
    assert_eq!(paid.code(), 0, "{}", paid.describe());
    assert_eq!(state_of(&server, &sections, 0), "sssshhhhhhhhhhhh");

    run(&file, &server, &["cancel", "--order", &orders[1]]);
    assert_eq!(state_of(&server, &sections, 0), "ssss....hhhhhhhh");
    let mut conn = server.conn();
    let before = crate::corrupt_state::snapshot(&mut conn);
    let again = run(&file, &server, &["cancel", "--order", &orders[1]]);
    assert_eq!(
        again.json()["outcome"],
        "already_cancelled",
        "{}",
        again.describe()
    );
    assert_eq!(
        before,
        crate::corrupt_state::snapshot(&mut conn),
        "a second cancel wrote"
    );

    // Before the deadline an expiry pass releases nothing.
    run(&file, &server, &["expire"]);
    assert_eq!(state_of(&server, &sections, 0), "ssss....hhhhhhhh");
    std::thread::sleep(
        Duration::from_secs(5).saturating_sub(bought.elapsed()) + Duration::from_millis(200),
    );
    let expired = run(&file, &server, &["expire"]);
    assert_eq!(expired.code(), 0, "{}", expired.describe());
    assert_eq!(state_of(&server, &sections, 0), "ssss............");
    let before = crate::corrupt_state::snapshot(&mut conn);
    run(&file, &server, &["expire"]);
    run(&file, &server, &["cancel", "--order", &orders[2]]);
    run(&file, &server, &["pay", "--order", &orders[3]]).json();
    assert_eq!(
        before,
        crate::corrupt_state::snapshot(&mut conn),
        "released twice"
    );
    run(&file, &server, &["cancel", "--order", &orders[0]]);
    assert_eq!(
        state_of(&server, &sections, 0),
        "ssss............",
        "a paid hold came back"
    );

    // They sell again, front first; then nothing is left.
    let mut sold = Vec::new();
    for user in ["v1", "v2", "v3"] {
        let reply = run(
            &file,
            &server,
            &["buy", "--item", "hall-a", "--user", user, "--qty", "4"],
        )
        .json();
        assert_eq!(reply["outcome"], "ok", "{reply}");
        sold.push(reply["seats"][0].as_str().unwrap().to_string());
    }
    assert_eq!(sold, ["A-1-5", "A-2-1", "A-2-5"]);
    assert_eq!(state_of(&server, &sections, 0), "sssshhhhhhhhhhhh");
    let last = run(
        &file,
        &server,
        &["buy", "--item", "hall-a", "--user", "v4", "--qty", "1"],
    );
    assert_eq!(last.code(), exit_codes::SOLD_OUT, "{}", last.describe());
}

/// A named buy of A-1-3..A-1-6 and a best-available buy of 4 at once, on a
/// row of 8: whichever runs first, the other cannot have those seats (the
/// stock of 8 would allow both: only the seat checks stop the second).
#[test]
fn a_named_buy_racing_a_best_buy_for_the_same_seats_has_one_winner() {
    let server = RedisServer::start();
    let sections = [Section {
        id: "A",
        rows: 1,
        per_row: 8,
        blocked: &[],
    }];
    let file = Arc::new(hall_file(&sections, ""));
    let mut winners: HashMap<String, usize> = HashMap::new();
    for round in 0..12 {
        let () = redis::cmd("FLUSHALL").query(&mut server.conn()).unwrap();
        preheat(&file, &server);
        let barrier = Arc::new(Barrier::new(2));
        let asks: [&[&str]; 2] = [&["--seats", "A-1-3,A-1-4,A-1-5,A-1-6"], &["--qty", "4"]];
        let racers: Vec<_> = asks
            .iter()
            .enumerate()
            .map(|(k, ask)| {
                let mut args = vec!["buy", "--item", "hall-a"];
                args.extend_from_slice(ask);
                let user = format!("racer-{k}");
                let args: Vec<String> = args
                    .iter()
                    .map(|a| a.to_string())
                    .chain(["--user".into(), user])
                    .collect();
                let (barrier, file, url) = (Arc::clone(&barrier), Arc::clone(&file), server.url());
                std::thread::spawn(move || {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    let run = seckill(&args).campaign(&file).redis_url(&url).json();
                    barrier.wait();
                    run.runs()
                })
            })
            .collect();
        let results: Vec<_> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        let codes: Vec<i32> = results.iter().map(|r| r.code()).collect();
        let oks = codes.iter().filter(|&&c| c == 0).count();
        assert_eq!(
            oks,
            1,
            "round {round}: {codes:?}: {:?}",
            results.iter().map(|r| r.describe()).collect::<Vec<_>>()
        );
        let (winner, loser_code) = if codes[0] == 0 {
            ("named", codes[1])
        } else {
            ("best", codes[0])
        };
        // The named loser meets taken seats; the best loser finds no 4 side by side.
        let expected = if winner == "best" {
            exit_codes::SEAT_TAKEN
        } else {
            exit_codes::NO_BLOCK
        };
        assert_eq!(loser_code, expected, "round {round}: {winner} won");
        let state = state_of(&server, &sections, 0);
        assert_eq!(
            state,
            if winner == "named" {
                "..ssss.."
            } else {
                "ssss...."
            }
        );
        *winners.entry(winner.to_string()).or_default() += 1;
    }
    eprintln!("winners: {winners:?}");
}

/// Two sections of one row of 4: a request that found the first section
/// full and bought in the second, retried after seats came back in the first
/// (a cancel), answers its first order — it does not buy a second block in
/// the first section, which never saw the request id (domain/seats
/// `remembered_in`: the remembering section is asked first).
#[test]
fn a_retried_best_buy_answers_its_first_block_after_an_earlier_section_frees_seats() {
    let server = RedisServer::start();
    let sections = [
        Section {
            id: "A",
            rows: 1,
            per_row: 4,
            blocked: &[],
        },
        Section {
            id: "B",
            rows: 1,
            per_row: 4,
            blocked: &[],
        },
    ];
    let file = hall_file(&sections, "payment_timeout: 1h\n");
    preheat(&file, &server);
    let held = run(
        &file,
        &server,
        &["buy", "--item", "hall-a", "--user", "h", "--qty", "4"],
    )
    .json();
    assert_eq!(held["seats"][0], "A-1-1", "{held}");
    let args = [
        "buy",
        "--item",
        "hall-a",
        "--user",
        "r",
        "--qty",
        "4",
        "--request-id",
        "once",
    ];
    let first = run(&file, &server, &args).json();
    assert_eq!(first["seats"][0], "B-1-1", "{first}");
    let order = held["order_id"].as_str().unwrap();
    run(&file, &server, &["cancel", "--order", order]);
    assert_eq!(state_of(&server, &sections, 0), "....");
    let retry = run(&file, &server, &args).json();
    assert_eq!(retry["order_id"], first["order_id"], "{retry}");
    assert_eq!(retry["seats"], first["seats"], "{retry}");
    assert_eq!(
        state_of(&server, &sections, 0),
        "....",
        "the retry bought a second block"
    );
}

/// A SIGSTOP of Redis for 3 s while 12 buyer processes buy blocks of 4 in
/// two sections: each logical buy (a user of its own) retries with its
/// request id until it gets an answer; afterwards no user has two orders
/// (across sections), no seat is sold twice, and every final ok is the
/// order the stream holds for that user.
#[test]
fn a_frozen_redis_mid_sale_sells_no_seat_twice_and_no_retry_buys_a_second_block() {
    let server = RedisServer::start();
    let sections = [
        Section {
            id: "A",
            rows: 5,
            per_row: 20,
            blocked: &[],
        },
        Section {
            id: "B",
            rows: 5,
            per_row: 20,
            blocked: &[],
        },
    ];
    let file = Arc::new(hall_file(&sections, ""));
    preheat(&file, &server);
    let next_user = Arc::new(AtomicU64::new(0));
    let answers = Arc::new(Mutex::new(Vec::new()));
    let retries = Arc::new(AtomicU64::new(0));
    // The sale is under way (three blocks sold), then Redis freezes while
    // the buyers come: every first attempt times out, whatever the machine's
    // speed (a sale this small can end before a freeze timed by a sleep).
    for pre in 0..3 {
        let user = format!("pre{pre}");
        let reply = seckill(&[
            "buy",
            "--item",
            "hall-a",
            "--user",
            &user,
            "--qty",
            "4",
            "--request-id",
            &user,
        ])
        .campaign(&file)
        .redis_url(&server.url())
        .json()
        .succeeds()
        .json();
        answers.lock().unwrap().push((user, reply));
    }
    let frozen = Frozen::new(&mut server.conn());
    let buyers: Vec<_> = (0..12)
        .map(|_| {
            let (file, url) = (Arc::clone(&file), server.url());
            let (next_user, answers, retries) = (
                Arc::clone(&next_user),
                Arc::clone(&answers),
                Arc::clone(&retries),
            );
            std::thread::spawn(move || {
                loop {
                    let user = format!("f{}", next_user.fetch_add(1, Ordering::SeqCst));
                    let args = [
                        "buy",
                        "--item",
                        "hall-a",
                        "--user",
                        &user,
                        "--qty",
                        "4",
                        "--request-id",
                        &user,
                        "--connect-timeout",
                        "500ms",
                        "--response-timeout",
                        "500ms",
                    ];
                    let deadline = Instant::now() + Duration::from_secs(30);
                    let reply = loop {
                        let ran = seckill(&args).campaign(&file).redis_url(&url).json().runs();
                        match ran.code() {
                            exit_codes::RUNTIME_ERROR | exit_codes::OUTCOME_UNKNOWN => {
                                assert!(
                                    Instant::now() < deadline,
                                    "{user}: no answer in 30 s: {}",
                                    ran.describe()
                                );
                                retries.fetch_add(1, Ordering::SeqCst);
                                std::thread::sleep(Duration::from_millis(100));
                            }
                            _ => break ran.json(),
                        }
                    };
                    match reply["outcome"].as_str() {
                        Some("ok") => answers.lock().unwrap().push((user, reply)),
                        Some("sold_out") | Some("no_block") => return,
                        _ => panic!("unexpected answer: {reply}"),
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    drop(frozen);
    for buyer in buyers {
        buyer.join().unwrap();
    }
    let retries = retries.load(Ordering::SeqCst);
    eprintln!("{retries} retries");
    assert!(retries > 0, "the freeze timed no buy out");
    let answers = std::mem::take(&mut *answers.lock().unwrap());
    let mut conn = server.conn();
    let mut orders_of: HashMap<String, Vec<(String, String)>> = HashMap::new();
    let mut seen: HashSet<String> = HashSet::new();
    for (s, section) in sections.iter().enumerate() {
        let keys = section_keys(&sections, s);
        let mut sold = 0;
        for (order, user, labels) in stream_orders(&mut conn, &keys) {
            let seats: Vec<String> = labels.split(',').map(String::from).collect();
            assert_one_block(section, &seats);
            for seat in &seats {
                assert!(seen.insert(seat.clone()), "{seat} sold twice");
            }
            sold += seats.len();
            orders_of.entry(user).or_default().push((order, labels));
        }
        let state = state_of(&server, &sections, s);
        assert_eq!(
            state.bytes().filter(|&b| b == b's').count(),
            sold,
            "section {}",
            section.id
        );
    }
    for (user, orders) in &orders_of {
        assert_eq!(
            orders.len(),
            1,
            "{user} bought {} blocks: {orders:?}",
            orders.len()
        );
    }
    assert_eq!(
        answers.len(),
        orders_of.len(),
        "an order no buyer was answered"
    );
    for (user, reply) in &answers {
        let (order, labels) = &orders_of[user][0];
        assert_eq!(reply["order_id"].as_str(), Some(order.as_str()), "{user}");
        let seats: Vec<&str> = reply["seats"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        assert_eq!(seats.join(","), *labels, "{user}");
    }
    assert_eq!(seen.len(), 200, "the two sections sold out");
}

/// `seckill loadtest --variant seats` on a real Redis: its JSON counts add
/// up, its proof says exact, and — run with `--keep` — its seats, conflicts
/// and holes are what the sections' states in Redis say (the load test's own
/// prefix, `seckill-loadtest`; the live keys are never written).
#[test]
fn loadtest_variant_seats_reports_what_redis_holds() {
    let server = RedisServer::start();
    let sections = [
        Section {
            id: "A",
            rows: 20,
            per_row: 30,
            blocked: &["A-1-1"],
        },
        Section {
            id: "B",
            rows: 10,
            per_row: 25,
            blocked: &[],
        },
    ];
    let file = hall_file(&sections, "payment_timeout: 5m\n");
    let report = seckill(&[
        "loadtest",
        "--variant",
        "seats",
        "--connections",
        "16",
        "--keep",
    ])
    .campaign(&file)
    .redis(&server)
    .json()
    .succeeds()
    .json();
    let int = |field: &str| {
        report[field]
            .as_u64()
            .unwrap_or_else(|| panic!("{field} in {report}"))
    };
    assert_eq!(report["verdict"], "exact", "{report}");
    assert_eq!(int("sold_twice"), 0);
    assert_eq!(int("seats"), 600 - 1 + 250);
    assert_eq!(int("sections"), 2);
    assert_eq!(int("seats_sold"), 4 * int("best_ok") + 2 * int("named_ok"));
    assert_eq!(int("orders_checked"), int("best_ok") + int("named_ok"));
    assert!(
        int("seat_taken") > 0,
        "no contention on the front rows: {report}"
    );
    assert!(
        int("no_block") > 0,
        "the sale stopped before the blocks ran out: {report}"
    );
    assert!(report["seats_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(
        int("attempts"),
        int("best_ok")
            + int("named_ok")
            + int("seat_taken")
            + int("no_block")
            + int("sold_out")
            + int("other")
    );

    // Recount from Redis (kept): sold seats, free seats, holes, no free block of 4.
    let mut conn = server.conn();
    let (mut sold, mut free, mut holes) = (0, 0, 0);
    for (s, section) in sections.iter().enumerate() {
        let keys = Layout::new("seckill-loadtest", "hall", "hall-a", 2)
            .bucket(s as u32)
            .keys;
        let (state, stock) = sample(&mut conn, &keys);
        assert_eq!(state.len(), section.size());
        sold += state.iter().filter(|&&b| b == b's').count() as u64;
        let row_free = state.iter().filter(|&&b| b == b'.').count();
        assert_eq!(stock as usize, row_free);
        free += row_free as u64;
        for row in state.chunks(section.per_row) {
            let text = String::from_utf8_lossy(row);
            assert!(
                !text.contains("...."),
                "a block of 4 left in section {}: {text}",
                section.id
            );
            for (i, &b) in row.iter().enumerate() {
                let taken =
                    |j: Option<usize>| j.and_then(|j| row.get(j)).is_none_or(|&x| x != b'.');
                if b == b'.' && taken(i.checked_sub(1)) && taken(Some(i + 1)) {
                    holes += 1;
                }
            }
        }
    }
    assert_eq!(sold, int("seats_sold"), "{report}");
    assert_eq!(free, int("free_left"));
    assert_eq!(holes, int("holes"));
    let live: Vec<String> = conn.keys("seckill:{hall*").unwrap();
    assert!(live.is_empty(), "the load test wrote live keys: {live:?}");

    // A plain item has no seats: a usage error.
    let plain = crate::support::spec::campaign("plain")
        .item("1", 10)
        .write();
    seckill(&["loadtest", "--variant", "seats"])
        .campaign(&plain)
        .redis(&server)
        .fails_with(exit_codes::USAGE_ERROR);
}
