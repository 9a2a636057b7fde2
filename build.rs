//! Build script: stamps `seckill --version` with the git commit it was built
//! from (`0.1.0 (3f2a9c1d7e 2026-11-30)`), so an operator can say exactly
//! which build ran a sale. Without git or a repository (a source tarball,
//! `cargo install` from a registry) the version is the package version alone.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?.trim().to_string();
    (output.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
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
