//! `scripts/quickstart.sh`, the first thing a newcomer runs (issue 25, item
//! 24): every command of its demo runs without a warning on stderr (its own
//! campaign files name its throwaway Redis, which persists like a sale's).

use std::process::Command;

#[test]
fn the_quickstart_demo_says_no_warning() {
    let output = Command::new("bash")
        .arg("scripts/quickstart.sh")
        .env("SECKILL_BIN", assert_cmd::cargo::cargo_bin("seckill"))
        .env("QUICKSTART_SKIP_LOADTEST", "1")
        .env("COLUMNS", "80")
        .env_remove("SECKILL_REDIS_URL")
        .env_remove("SECKILL_CAMPAIGN")
        .env_remove("SECKILL_ORDERS_DB")
        .output()
        .expect("run scripts/quickstart.sh");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("$ seckill -c campaigns/moutai.yaml reconcile"),
        "{stdout}"
    );
    assert!(!stdout.contains("(exit code 1)"), "{stdout}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
    assert!(warnings.is_empty(), "{warnings:#?}\n{stderr}");
}
