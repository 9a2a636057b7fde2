//! The test owns the map of `src/`: [`map`] holds it as data (the top-level
//! folders, what each may import, the domain's inner order), [`check`] reads
//! a source tree against it (every folder placed, every import pointing
//! down, every `//! May import:` line true, no import circles), [`cases`]
//! shows on small in-memory trees that each kind of break is caught, and
//! the tests here run it on the real `src/` and make `src/lib.rs` and
//! `ARCHITECTURE.md` quote the map that is checked.

mod cases;
mod check;
mod map;
mod source;

use std::path::Path;

use check::Files;

/// Every file under `dir`, by its path below `dir` with `/` between folders;
/// the text of the Rust files (the others count as places, not as code).
fn read_tree(dir: &Path) -> Files {
    fn walk(dir: &Path, prefix: &str, files: &mut Files) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = format!("{prefix}{}", path.file_name().unwrap().to_string_lossy());
            if path.is_dir() {
                walk(&path, &format!("{name}/"), files);
            } else {
                let is_rust = path.extension().is_some_and(|e| e == "rs");
                let text = if is_rust {
                    std::fs::read_to_string(&path).unwrap()
                } else {
                    String::new()
                };
                files.insert(name, text);
            }
        }
    }
    let mut files = Files::new();
    walk(dir, "", &mut files);
    files
}

#[test]
fn src_keeps_the_map() {
    let src = read_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(src.len() > 50, "read only {} files of src/", src.len());
    let findings = check::check(&src);
    assert!(
        findings.is_empty(),
        "src/ breaks the map of tests/it/layers/map.rs ({} findings):\n{}\n\nThe map:\n{}\n\n\
         A folder's `//! May import:` line reads {}",
        findings.len(),
        findings.join("\n"),
        map::map_text(),
        check::LINE_FORMAT
    );
}

#[test]
fn lib_rs_and_architecture_md_quote_the_checked_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = map::map_text();
    let lib_docs: String = std::fs::read_to_string(root.join("src/lib.rs"))
        .unwrap()
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("//!"))
        .map(|doc| doc.strip_prefix(' ').unwrap_or(doc))
        .collect::<Vec<_>>()
        .join("\n");
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md"));
    let mut stale = Vec::new();
    if !lib_docs.contains(&map) {
        stale.push("the `//!` docs of src/lib.rs do not quote it");
    }
    match &architecture {
        Ok(text) if text.contains(&map) => {}
        Ok(_) => stale.push("ARCHITECTURE.md does not quote it"),
        Err(_) => stale.push("ARCHITECTURE.md is missing"),
    }
    assert!(
        stale.is_empty(),
        "{}. The map as tests/it/layers/map.rs checks it, to quote verbatim \
         (in src/lib.rs as `//! ` lines):\n\n{map}\n",
        stale.join("; ")
    );
}
