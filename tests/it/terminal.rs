//! What a person at a terminal sees, in a real one: tmux at 80 × 24 runs the
//! binary and the test reads the screen (and the scrollback) as a person
//! would. `status --watch` redraws in place in one screen and says "stale"
//! when Redis goes away; when the full view does not fit it is a table under
//! a header, columns aligned, every figure whole, only names cut, and notes
//! in the rows left; `consume --drain` shows a bar with counts, rate and
//! ETA that is gone from the screen when it ends or is interrupted, and
//! nothing when piped or quiet.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::orders::{buy_many, sqlite_order_ids, sqlite_path, wait_until};
use crate::support::spec::{campaign, seckill};
use crate::support::{CampaignFile, RedisServer};

/// A tmux server of the test's own, one 80 × 24 window running a command.
pub(crate) struct Tmux {
    socket: String,
}

impl Tmux {
    /// Run `args` (seckill's) on `file` against `redis_url` in a fresh 80 × 24 terminal.
    pub(crate) fn run(file: &CampaignFile, redis_url: &str, args: &[&str]) -> Tmux {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let socket = format!(
            "seckill-it-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let command = format!(
            "env -u COLUMNS -u LINES -u SECKILL_CAMPAIGN -u SECKILL_FORMAT -u SECKILL_QUIET \
             SECKILL_REDIS_URL={redis_url} {} -c {} {}; echo EXITED $?; sleep 600",
            env!("CARGO_BIN_EXE_seckill"),
            file.path.display(),
            args.join(" ")
        );
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "80",
                "-y",
                "24",
            ])
            .arg(command)
            .current_dir(file.dir.path())
            .status()
            .expect("tmux must be installed (apt-get install tmux)");
        assert!(status.success(), "tmux new-session failed");
        Tmux { socket }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The screen as it is now.
    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p"])
    }

    /// Everything the terminal ever showed, scrolled-off lines included.
    fn everything(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-S", "-"])
    }

    /// [`Tmux::everything`] with each line the terminal wrapped joined
    /// again: the lines as the program wrote them, to measure.
    pub(crate) fn as_written(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J", "-S", "-"])
    }

    fn keys(&self, keys: &str) {
        self.tmux(&["send-keys", keys]);
    }

    /// Poll the screen until `seen` holds; returns that screen.
    pub(crate) fn until(&self, what: &str, seen: impl Fn(&str) -> bool) -> String {
        let mut screen = String::new();
        wait_until(what, || {
            screen = self.screen();
            seen(&screen)
        });
        screen
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

fn ten_items() -> CampaignFile {
    let mut spec = campaign("wall");
    for i in 1..=10 {
        spec = spec
            .item(&format!("sku-{i}"), 10)
            .named(&format!("Pro Max 1TB colour {i}"));
    }
    spec.write()
}

#[test]
fn watch_fits_80x24_redraws_in_place_and_says_stale_when_redis_stops() {
    let server = RedisServer::start();
    let file = ten_items();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let term = Tmux::run(&file, &server.url(), &["status", "--watch", "1s"]);
    let screen = term.until("the view of ten items", |s| s.contains("sku-10"));
    let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() <= 24, "{screen}");
    assert!(
        lines[0].starts_with("campaign wall on 127.0.0.1:"),
        "{screen}"
    );
    for i in 1..=10 {
        let id = format!("sku-{i} ");
        assert_eq!(
            lines.iter().filter(|l| l.starts_with(&id)).count(),
            1,
            "one line for {id}: {screen}"
        );
    }
    // Sales show up in place, sample after sample, and nothing scrolls.
    buy_many(&server, &file, "sku-3", "u", 4);
    term.until("the sales", |s| {
        s.lines()
            .any(|l| l.starts_with("sku-3 ") && l.contains(" 6/10 "))
    });
    std::thread::sleep(Duration::from_millis(2500));
    let everything = term.everything();
    assert_eq!(
        everything.matches("campaign wall on").count(),
        1,
        "redrawn in place, never scrolled:\n{everything}"
    );

    let stopped = Instant::now();
    drop(server);
    let screen = term.until("stale", |s| s.contains("stale since"));
    let after = stopped.elapsed();
    assert!(after < Duration::from_secs(2), "stale only after {after:?}");
    let first = screen.lines().next().unwrap();
    assert!(
        first.starts_with("stale since ") && first.contains(" UTC — Redis unreachable"),
        "{screen}"
    );
    assert!(
        screen.lines().filter(|l| !l.trim().is_empty()).count() <= 24,
        "{screen}"
    );
    term.keys("C-c");
    term.until("Ctrl-C ends it with exit 0", |s| s.contains("EXITED 0"));
}

/// The compact view of a sale with everything at once — reservations, a
/// waiting room, a kill switch, long and wide names — fits 80 × 24 as a
/// table like `kubectl get -w`: a header, one row per item, each column's
/// figures right-aligned under its header and whole; only NAME is cut (with
/// `…`); and what needs a person is said in the rows below.
#[test]
fn the_compact_watch_is_a_table_that_cuts_only_names() {
    let server = RedisServer::start();
    let mut spec = campaign("compact").payment_timeout("1h").ends_in(3 * 3600);
    for i in 1..=6 {
        spec = spec
            .item(&format!("sku-{i}"), 300)
            .named(&format!("Pro Max 1TB colour {i}, the long edition"));
    }
    let file = spec
        .item("moutai", 100_000)
        .named("53度飞天茅台 500ml 2026 新年限定")
        .buckets(2)
        .room("{ mode: max_active, max_active: 50 }")
        .write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    // Three reservations, unpaid, and a switch someone turned on.
    for user in ["a", "b", "c"] {
        seckill(&["buy", "--item", "sku-2", "--user", user])
            .campaign(&file)
            .redis(&server)
            .succeeds();
    }
    seckill(&[
        "shutdown-switch",
        "on",
        "--item",
        "sku-5",
        "--reason",
        "price typo",
    ])
    .args(&["--by", "alice"])
    .campaign(&file)
    .redis(&server)
    .succeeds();
    seckill(&["queue", "join", "--item", "moutai", "--user", "q1"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let term = Tmux::run(&file, &server.url(), &["status", "--watch", "1s"]);
    let screen = term.until("the table", |s| s.contains("moutai"));
    let lines: Vec<&str> = screen.lines().collect();
    assert!(lines.len() <= 24, "{screen}");
    for line in &lines {
        let width: usize = line
            .chars()
            .map(|c| {
                if ('\u{4e00}'..='\u{9fff}').contains(&c) {
                    2
                } else {
                    1
                }
            })
            .sum();
        assert!(width <= 80, "{width} columns: {line:?}");
    }
    let header = lines[1];
    let words: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        words,
        [
            "ITEM", "LEFT", "RATE", "WINDOW", "SW", "LAG", "PEND", "RESV", "ROOM", "NAME"
        ],
        "{screen}"
    );
    let row = |id: &str| -> &str {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("no row for {id}:\n{screen}"))
    };
    // Each figure ends where its header ends (right-aligned), whole.
    let end_of = |header_word: &str| -> usize {
        header.find(&format!(" {header_word}")).unwrap() + 1 + header_word.len()
    };
    let cell = |line: &str, word: &str| -> String {
        let end = end_of(word);
        line[..end].rsplit(' ').next().unwrap().to_string()
    };
    let sku2 = row("sku-2");
    assert_eq!(cell(sku2, "LEFT"), "297/300", "{screen}");
    assert_eq!(cell(sku2, "RESV"), "3", "{screen}");
    assert_eq!(cell(sku2, "SW"), "off", "{screen}");
    assert_eq!(cell(sku2, "LAG"), "3", "{screen}");
    assert_eq!(cell(sku2, "PEND"), "0", "{screen}");
    assert_eq!(cell(sku2, "ROOM"), "-", "{screen}");
    assert!(cell(sku2, "WINDOW").starts_with("2h"), "{screen}");
    assert_eq!(cell(row("sku-5"), "SW"), "ON", "{screen}");
    let moutai = row("moutai");
    assert_eq!(cell(moutai, "LEFT"), "100k/100k", "{screen}");
    // One joined, nobody admitted: no admitter runs.
    assert_eq!(cell(moutai, "ROOM"), "0/1", "{screen}");
    // Only the name is cut, with an ellipsis; the id and every figure are whole.
    assert!(sku2.ends_with('…') && sku2.contains(" Pro Max"), "{sku2}");
    // The rows left say what needs a person.
    assert!(
        screen.contains("sku-5: kill switch ON by alice: \"price typo\""),
        "{screen}"
    );
    assert!(
        screen.contains("moutai: this room needs `seckill queue admit --loop` (a bucketed"),
        "{screen}"
    );
    term.keys("C-c");
    term.until("Ctrl-C ends it with exit 0", |s| s.contains("EXITED 0"));
}

fn orders_in_db(file: &CampaignFile) -> usize {
    sqlite_order_ids(&sqlite_path(file)).len()
}

#[test]
fn drain_shows_a_bar_on_a_terminal_that_ctrl_c_and_the_end_clear() {
    let server = RedisServer::start();
    let file = campaign("bar").item("1", 100_000).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    // One order per transaction: slow enough to watch.
    let drain = ["consume", "--drain", "--batch", "1"];
    buy_many(&server, &file, "1", "a", 3000);
    let term = Tmux::run(&file, &server.url(), &drain);
    let bar = term.until("the bar", |s| {
        s.contains("orders stored [") || s.contains("EXITED")
    });
    let line = bar
        .lines()
        .find(|l| l.contains("orders stored ["))
        .unwrap_or_else(|| panic!("no bar: {bar}"));
    assert!(
        line.contains("/3,000 (") && line.contains("%)") && line.contains("ETA"),
        "{line}"
    );
    term.keys("C-c");
    let screen = term.until("Ctrl-C ends the drain", |s| s.contains("EXITED"));
    assert!(screen.contains("EXITED 0"), "{screen}");
    assert!(
        !screen.contains("ETA") && !screen.contains("orders stored ["),
        "the bar stays: {screen}"
    );
    assert!(
        screen.contains("seckill consume: stopped after"),
        "{screen}"
    );
    drop(term);
    let stored = orders_in_db(&file);
    assert!(stored < 3000, "Ctrl-C came after the end ({stored} stored)");

    // The rest, to the end: the bar is gone then too.
    let term = Tmux::run(&file, &server.url(), &drain);
    let screen = term.until("the drain ends", |s| s.contains("EXITED"));
    assert!(
        screen.contains("EXITED 0") && !screen.contains("ETA"),
        "{screen}"
    );
    assert!(
        screen.contains("seckill consume: drained after"),
        "{screen}"
    );
    drop(term);
    assert_eq!(orders_in_db(&file), 3000, "every order stored once");

    // Quiet on a terminal, and piped: no bar at all.
    buy_many(&server, &file, "1", "b", 300);
    let term = Tmux::run(
        &file,
        &server.url(),
        &["consume", "--drain", "--batch", "1", "-q"],
    );
    let mut saw_bar = false;
    wait_until("the quiet drain ends", || {
        let screen = term.screen();
        saw_bar |= screen.contains("ETA");
        screen.contains("EXITED")
    });
    assert!(!saw_bar, "a bar under -q");
    drop(term);
    buy_many(&server, &file, "1", "c", 300);
    let piped = seckill(&drain).campaign(&file).redis(&server).succeeds();
    let stderr = piped.stderr();
    assert!(
        !stderr.contains("ETA") && !stderr.contains('\x1b'),
        "{stderr}"
    );
    assert_eq!(orders_in_db(&file), 3600);
}

#[test]
fn reconcile_shows_a_bar_on_a_terminal_that_ctrl_c_and_the_end_clear() {
    let server = RedisServer::start();
    let file = campaign("rbar").item("1", 1_000_000).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    // The schema, then orders not consumed yet: the walk looks up every one
    // of them (in flight, balanced), slow enough to watch.
    seckill(&["consume", "--drain"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    buy_many(&server, &file, "1", "r", 60_000);
    let term = Tmux::run(&file, &server.url(), &["reconcile"]);
    let bar = term.until("the bar", |s| {
        s.contains("stream entries checked [") || s.contains("EXITED")
    });
    let line = bar
        .lines()
        .find(|l| l.contains("stream entries checked ["))
        .unwrap_or_else(|| panic!("no bar: {bar}"));
    assert!(
        line.contains("/60,000 (") && line.contains("%)") && line.contains("ETA"),
        "{line}"
    );
    let screen = term.until("the end", |s| s.contains("EXITED"));
    assert!(screen.contains("EXITED 0"), "{screen}");
    assert!(!screen.contains("ETA"), "the bar stays: {screen}");
    drop(term);

    let term = Tmux::run(&file, &server.url(), &["reconcile"]);
    term.until("the bar", |s| s.contains("stream entries checked ["));
    term.keys("C-c");
    let screen = term.until("Ctrl-C ends it", |s| s.contains("EXITED"));
    assert!(screen.contains("EXITED 1"), "{screen}");
    assert!(screen.contains("reconcile interrupted"), "{screen}");
    assert!(!screen.contains("ETA"), "the bar stays: {screen}");
    drop(term);

    let piped = seckill(&["reconcile"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let stderr = piped.stderr();
    assert!(
        !stderr.contains("ETA") && !stderr.contains('\x1b'),
        "{stderr}"
    );
}
