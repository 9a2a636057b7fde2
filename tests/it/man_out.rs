//! `seckill man --out DIR` installs the pages where the README says, e.g.
//! `/usr/local/share/man/man1/`, which a fresh machine may not have yet: the
//! directory is created like `install -D` would, and every page lands in it.

use crate::support::spec::seckill;

#[test]
fn man_out_creates_the_directory_and_writes_every_page() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("share/man/man1");
    seckill(&["man", "--out", dir.to_str().unwrap()]).succeeds();
    for (name, page) in seckill::cmd::man::pages(seckill::cli::definition()).unwrap() {
        assert_eq!(std::fs::read(dir.join(&name)).unwrap(), page, "{name}");
    }
}
