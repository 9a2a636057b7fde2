//! Build script, two jobs:
//! * stamps `seckill --version` with the git commit it was built from
//!   (`0.1.0 (3f2a9c1d7e 2026-11-30)`), so an operator can say exactly which
//!   build ran a sale. Without git or a repository (a source tarball, `cargo
//!   install` from a registry) the version is the package version alone;
//! * builds every script of `lua/` from the shared library `lua/lib/`
//!   (`--- @include "lib/<name>"` lines resolved, docs/lua.md) into
//!   `$OUT_DIR/lua/`, the text the scripts' Rust homes embed and run.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "src/redis_client/scripts/library.rs"]
#[allow(dead_code)] // the unit tests use more of it than the build does
mod library;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?.trim().to_string();
    (output.status.success() && !text.is_empty()).then_some(text)
}

/// Resolve every `lua/*.lua` into `$OUT_DIR/lua/`; a script that does not
/// resolve fails the build, naming the file and line.
fn build_scripts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("lua");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("lua");
    std::fs::create_dir_all(&out).expect("OUT_DIR is writable");
    let scripts = library::scripts(&root).unwrap_or_else(|e| panic!("{e}"));
    for file in &scripts {
        let text = library::resolve(&root, file).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(out.join(file), text).expect("OUT_DIR is writable");
    }
    // A new, changed or removed script or library rebuilds them all.
    println!("cargo:rerun-if-changed=lua");
    println!("cargo:rerun-if-changed=lua/lib");
    for dir in [root.clone(), root.join("lib")] {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            println!("cargo:rerun-if-changed={}", entry.path().display());
        }
    }
    println!("cargo:rerun-if-changed=src/redis_client/scripts/library.rs");
}

fn main() {
    build_scripts();
    let package = env!("CARGO_PKG_VERSION");
    let version = match (
        git(&["rev-parse", "--short=10", "HEAD"]),
        git(&["log", "-1", "--format=%cs"]),
    ) {
        (Some(commit), Some(date)) => format!("{package} ({commit} {date})"),
        (Some(commit), None) => format!("{package} ({commit})"),
        _ => package.to_string(),
    };
    println!("cargo:rustc-env=SECKILL_VERSION={version}");
    // Rebuild the stamp when HEAD moves: HEAD itself (branch switches) and the
    // branch's ref (commits), which in a worktree live in different places.
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
    }
    if let (Some(common), Some(branch)) = (
        git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]),
        git(&["symbolic-ref", "-q", "HEAD"]),
    ) {
        let reference = Path::new(&common).join(&branch);
        if reference.exists() {
            println!("cargo:rerun-if-changed={}", reference.display());
        }
        // A missing file would make cargo rerun this script on every build.
        let packed = Path::new(&common).join("packed-refs");
        if packed.exists() {
            println!("cargo:rerun-if-changed={}", packed.display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
