//! `seckill man --out DIR` installs the pages where the README says, e.g.
//! `/usr/local/share/man/man1/`, which a fresh machine may not have yet: the
//! directory is created like `install -D` would, and every page lands in it.

#[test]
fn man_out_creates_the_directory_and_writes_every_page() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("share/man/man1");
    let output = assert_cmd::Command::cargo_bin("seckill")
        .unwrap()
        .args(["man", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    for (name, page) in seckill::cmd::man::pages(seckill::cli::definition()).unwrap() {
        assert_eq!(std::fs::read(dir.join(&name)).unwrap(), page, "{name}");
    }
}
