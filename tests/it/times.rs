//! Times as the campaign file writes them (issue 25, item 26): a file in
//! `+08:00` is read back in `+08:00` by every table (`--tz` chooses another
//! offset or UTC); JSON stays UTC for scripts. And `-v` shows every seed of
//! a URL list, passwords hidden.

use chrono::{FixedOffset, SecondsFormat, Utc};

use crate::support::RedisServer;
use crate::support::spec::seckill;

/// Now plus `seconds`, as a file in Beijing time writes it.
fn beijing(seconds: i64) -> String {
    let east8 = FixedOffset::east_opt(8 * 3600).unwrap();
    (Utc::now() + chrono::Duration::seconds(seconds))
        .with_timezone(&east8)
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Every RFC 3339 time (`2026-…T…`) in `text`.
fn times_in(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '│' | '┆' | ',' | '(' | ')' | ';'))
        .map(|word| word.trim_end_matches([':', '.', '"']))
        .filter(|word| word.len() >= 16 && word.as_bytes()[4] == b'-' && word.contains('T'))
        .map(str::to_string)
        .collect()
}

fn assert_all_at(text: &str, suffix: &str) {
    let times = times_in(text);
    assert!(!times.is_empty(), "no time in:\n{text}");
    assert!(
        times.iter().all(|t| t.ends_with(suffix)),
        "a time not in {suffix}: {times:?}\n{text}"
    );
}

#[test]
fn a_file_in_plus_eight_is_read_back_in_plus_eight() {
    let server = RedisServer::start();
    let open = crate::support::campaign_file(&format!(
        "campaign: tz8\nstarts_at: {}\nends_at: {}\nper_user_limit: 1\n\
         items:\n  - {{ id: \"1\", name: one, price: \"1.00\", stock: 5 }}\n",
        beijing(-3600),
        beijing(3600)
    ));
    let run = |args: &[&str]| seckill(args).campaign(&open).redis(&server).columns(200);
    run(&["preheat"]).succeeds();
    run(&["buy", "--item", "1", "--user", "a"]).succeeds();
    run(&["shutdown-switch", "on", "--reason", "drill", "--by", "t"]).succeeds();
    for command in [
        &["status"][..],
        &["campaigns"],
        &["shutdown-switch", "status"],
    ] {
        assert_all_at(&run(command).succeeds().stdout(), "+08:00");
    }
    run(&["shutdown-switch", "off", "--by", "t"]).succeeds();
    let doctor = run(&["doctor"]).runs().stdout();
    assert_all_at(&doctor, "+08:00");
    // --tz: UTC, or any offset.
    assert_all_at(&run(&["--tz", "utc", "status"]).succeeds().stdout(), "Z");
    assert_all_at(
        &run(&["status", "--tz", "-05:30"]).succeeds().stdout(),
        "-05:30",
    );
    // JSON is for scripts: UTC whatever the file says.
    let json = run(&["status"]).json().succeeds().stdout();
    assert_all_at(&json.replace('"', " "), "Z");

    // A sale not open yet: buy says when it opens, in the file's offset.
    let later = crate::support::campaign_file(&format!(
        "campaign: tz8-later\nstarts_at: {}\nper_user_limit: 1\n\
         items:\n  - {{ id: \"2\", name: two, price: \"1.00\", stock: 5 }}\n",
        beijing(7200)
    ));
    let run = |args: &[&str]| seckill(args).campaign(&later).redis(&server).columns(200);
    run(&["preheat"]).succeeds();
    let ran = run(&["buy", "--item", "2", "--user", "a"]).runs();
    assert!(ran.stdout().contains("not_started"), "{}", ran.describe());
    assert_all_at(&ran.stdout(), "+08:00");
}

#[test]
fn a_bad_tz_is_a_usage_error_naming_the_choices() {
    let ran = seckill(&["--tz", "Asia/Shanghai", "campaigns"]).fails_with(2);
    assert!(
        ran.stderr().contains("utc, file or an offset like +08:00"),
        "{}",
        ran.describe()
    );
}

#[test]
fn verbose_shows_every_seed_with_its_password_hidden() {
    let seeds = "redis://app:first-secret@127.0.0.1:1,redis://app:second-secret@127.0.0.1:2";
    let ran = seckill(&["-v", "--redis", seeds, "campaigns"]).runs();
    let stderr = ran.stderr();
    assert!(
        stderr.contains("--redis = redis://app:***@127.0.0.1:1,redis://app:***@127.0.0.1:2"),
        "{}",
        ran.describe()
    );
    assert!(!stderr.contains("secret"), "{}", ran.describe());
}
