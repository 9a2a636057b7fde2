//! How a script of `lua/` is built from the shared Lua library `lua/lib/`:
//! each `--- @include "lib/<name>"` line (the BullMQ convention) is replaced
//! by that library file, itself resolved first, so every script becomes one
//! self-contained EVALSHA body. `build.rs` runs this at build time (the
//! scripts' Rust homes embed its output); the unit tests of `scripts` run it
//! again to check what was embedded.
//!
//! The rules (docs/lua.md):
//! * an include line is exactly `--- @include "lib/<name>"`, `<name>` in
//!   `[a-z0-9_]`; the file is `lua/lib/<name>.lua`;
//! * a library is pasted once per script, where it is first included; a
//!   library's own includes are pasted before it, so whatever it uses is
//!   defined above it (Lua `local`s must be); an include circle is an error;
//! * line 1 of a script stays line 1: Redis reads a `#!lua` shebang only
//!   there, so no include may sit on it, and a library has no shebang;
//! * the embedded text is what runs, so its SHA1 is the script's EVALSHA
//!   handle: a changed library changes the SHA of every script that includes
//!   it, and two builds with different libraries never share a SHA.
//!
//! No imports from the crate: `build.rs` compiles this file on its own.

use std::collections::BTreeSet;
use std::path::Path;

/// The prefix of an include line, before the quoted library path.
pub(crate) const INCLUDE: &str = "--- @include \"";

/// The library path an include line names (`lib/corrupt`), or None when the
/// line is not an include. A line that starts like one but is malformed is
/// an error, never silently Lua comment.
pub(crate) fn included(line: &str) -> Result<Option<&str>, String> {
    let Some(rest) = line.trim_end().strip_prefix(INCLUDE) else {
        if line.trim_start().starts_with("--- @include") {
            return Err(format!("malformed include line {line:?}"));
        }
        return Ok(None);
    };
    let name = rest
        .strip_suffix('"')
        .ok_or_else(|| format!("include line {line:?} does not end with '\"'"))?;
    let valid = name.strip_prefix("lib/").is_some_and(|base| {
        !base.is_empty()
            && base
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    });
    if !valid {
        return Err(format!(
            "include {name:?}: a library is \"lib/<name>\", <name> of a-z, 0-9, _"
        ));
    }
    Ok(Some(name))
}

/// The script `lua/<file>` with every include resolved, or what is wrong
/// (naming the file and line). `root` is the `lua/` directory.
pub(crate) fn resolve(root: &Path, file: &str) -> Result<String, String> {
    let source = read(root, file)?;
    if let Some(line) = source.lines().next()
        && included(line)?.is_some()
    {
        return Err(format!(
            "lua/{file}:1: an include on line 1 would push a `#!lua` shebang off it"
        ));
    }
    let mut pasted = BTreeSet::new();
    let mut out = String::with_capacity(source.len() * 4);
    paste(root, file, &source, &mut Vec::new(), &mut pasted, &mut out)?;
    Ok(out)
}

/// The library paths `source` includes directly, in order.
pub(crate) fn includes_of(source: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for line in source.lines() {
        if let Some(name) = included(line)? {
            names.push(name.to_string());
        }
    }
    Ok(names)
}

fn read(root: &Path, file: &str) -> Result<String, String> {
    std::fs::read_to_string(root.join(file)).map_err(|e| format!("cannot read lua/{file}: {e}"))
}

/// Append `source` (the text of `lua/<file>`) to `out`, each include
/// replaced by its library unless already pasted. `open` is the chain of
/// libraries being pasted, to refuse a circle.
fn paste(
    root: &Path,
    file: &str,
    source: &str,
    open: &mut Vec<String>,
    pasted: &mut BTreeSet<String>,
    out: &mut String,
) -> Result<(), String> {
    for (number, line) in source.split_inclusive('\n').enumerate() {
        let Some(name) = included(line).map_err(|e| format!("lua/{file}:{}: {e}", number + 1))?
        else {
            out.push_str(line);
            continue;
        };
        if open.iter().any(|o| o == name) {
            return Err(format!(
                "lua/{file}:{}: include circle {} -> {name}",
                number + 1,
                open.join(" -> ")
            ));
        }
        if pasted.contains(name) {
            continue;
        }
        let library = format!("{name}.lua");
        let text = read(root, &library).map_err(|e| format!("lua/{file}:{}: {e}", number + 1))?;
        if text.starts_with("#!") {
            return Err(format!("lua/{library}: a library has no shebang"));
        }
        open.push(name.to_string());
        paste(root, &library, &text, open, pasted, out)?;
        open.pop();
        pasted.insert(name.to_string());
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(())
}

/// The scripts of `lua/` (file names, not the libraries of `lua/lib/`), sorted.
pub(crate) fn scripts(root: &Path) -> Result<Vec<String>, String> {
    let mut files: Vec<String> = std::fs::read_dir(root)
        .map_err(|e| format!("cannot list lua/: {e}"))?
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.path().is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".lua"))
        .collect();
    files.sort();
    Ok(files)
}
