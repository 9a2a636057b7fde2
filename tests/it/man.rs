//! The committed manual pages in `man/` are exactly what the clap definition
//! generates (so they agree with `--help`); regenerate with
//! `scripts/update-completions.sh`.

use crate::support::spec::seckill;

#[test]
fn man_pages_are_current_and_cover_every_subcommand() {
    let pages = seckill::cmd::man::pages(seckill::cli::definition()).unwrap();
    let dir = seckill::cmd::man::committed_dir();
    for (name, generated) in &pages {
        let committed = std::fs::read(dir.join(name)).unwrap_or_default();
        assert!(
            &committed == generated,
            "man/{name} is stale: run scripts/update-completions.sh and commit the result"
        );
    }
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    on_disk.sort();
    let mut expected: Vec<String> = pages.iter().map(|(n, _)| n.clone()).collect();
    expected.sort();
    assert_eq!(on_disk, expected, "man/ holds a page of no subcommand");
    for sub in [
        "status",
        "preheat",
        "shutdown-switch",
        "consume",
        "reconcile",
    ] {
        assert!(expected.contains(&format!("seckill-{sub}.1")), "{sub}");
    }
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let version = seckill(&["--version"]).succeeds().stdout();
    assert!(version.starts_with(&format!("seckill {}", env!("CARGO_PKG_VERSION"))));
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=10", "HEAD"])
        .output();
    // A source tarball has no commit to show; a checkout must show its own.
    if let Some(head) = head.ok().filter(|h| h.status.success()) {
        let head = String::from_utf8(head.stdout).unwrap();
        assert!(version.contains(head.trim()), "{version} lacks {head}");
    }
}
