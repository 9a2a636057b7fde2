//! `-q/--quiet` for cron: success prints nothing, drift and refusals still do,
//! and the exit code never changes.

use crate::support::RedisServer;
use crate::support::spec::{campaign, seckill};

use seckill::model::exit_codes::{DRIFT_FOUND, DUPLICATE};

#[test]
fn quiet_success_is_silent_and_drift_still_speaks() {
    let server = RedisServer::start();
    let file = campaign("q").item("1", 3).named("Bottle").write();
    let run = |args: &[&str]| seckill(args).campaign(&file).redis(&server);
    assert_eq!(run(&["-q", "preheat"]).succeeds().stdout(), "");
    run(&["buy", "--item", "1", "--user", "a", "--quiet"]).succeeds();
    assert_eq!(run(&["consume", "--drain", "-q"]).succeeds().stdout(), "");
    assert_eq!(run(&["reconcile", "-q"]).succeeds().stdout(), "");
    // A refused outcome is not a success: it prints, quiet or not.
    let text = run(&["buy", "--item", "1", "--user", "a", "-q"])
        .fails_with(DUPLICATE)
        .stdout();
    assert!(text.contains("duplicate"), "{text}");
    // Drift prints the order ids, quiet or not.
    let () = redis::cmd("SET")
        .arg(seckill::model::keys::ItemKeys::live("q", "1").stock)
        .arg(1)
        .query(&mut server.conn())
        .unwrap();
    let text = run(&["reconcile", "-q"]).fails_with(DRIFT_FOUND).stdout();
    assert!(!text.is_empty());
}
