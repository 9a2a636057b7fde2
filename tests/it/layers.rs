//! The layers of `src/` (see `src/lib.rs`) point one way: a file imports
//! only from its own layer or the layers below, one feature never from
//! another, and no files import each other in a circle. Read from the
//! source text (`crate::` and `super::` paths), so a test, not a reviewer,
//! says which file reaches where.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// From the bottom up.
const LAYERS: [&str; 8] = [
    "util",
    "model",
    "redis_client",
    "domain",
    "features",
    "invocation",
    "cmd",
    "cli",
];

/// Every `.rs` file under `src/` as its module path (`["domain", "item"]`).
fn modules(dir: &Path, prefix: &[String], out: &mut BTreeMap<Vec<String>, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let mut module = prefix.to_vec();
        if path.is_dir() {
            module.push(name);
            modules(&path, &module, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            if matches!(name.as_str(), "lib" | "main") && prefix.is_empty() {
                continue; // the crate root declares the layers; main.rs uses `seckill::`
            }
            if name != "mod" {
                module.push(name);
            }
            out.insert(module, std::fs::read_to_string(&path).unwrap());
        }
    }
}

/// The module paths a source text names: `crate::a::b`, `super::c`, and each
/// member of a `crate::a::{b, c::d}` group.
fn imports(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let text: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    for (start, root) in text
        .match_indices("crate::")
        .chain(text.match_indices("super::"))
    {
        if text[..start].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut base = match root {
            "crate::" => Vec::new(),
            _ => module[..module.len().saturating_sub(1)].to_vec(),
        };
        let rest = &text[start + root.len()..];
        let path: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        base.extend(
            path.split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
        if let Some(group) = rest[path.len()..].strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for member in group
                .split(',')
                .map(|m| m.trim())
                .filter(|m| !m.is_empty() && *m != "self")
            {
                let mut full = base.clone();
                full.extend(member.split("::").map(|s| s.trim().to_string()));
                found.push(full);
            }
        }
        found.push(base);
    }
    found
}

#[test]
fn layers_point_down_and_no_files_import_each_other_in_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    modules(&src, &[], &mut files);
    let file_of = |path: &[String]| {
        (0..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|m| files.contains_key(m))
    };
    let rank = |module: &[String]| {
        module
            .first()
            .and_then(|top| LAYERS.iter().position(|l| l == top))
    };
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    let mut wrong = Vec::new();
    for (module, text) in &files {
        for path in imports(text, module) {
            let Some(target) = file_of(&path) else {
                continue;
            };
            if target == *module || module.starts_with(&target) {
                // Its own module, or its parent's (a folder's `mod.rs` and
                // its files are one unit, as for `import-circles`).
                continue;
            }
            let (from, to) = (rank(module), rank(&target));
            let across_features = module.len() > 1
                && target.len() > 1
                && module[0] == "features"
                && target[0] == "features"
                && module[1] != target[1];
            if from.is_some() && (to > from || across_features) {
                wrong.push(format!(
                    "src/{}.rs imports crate::{} (a layer above or beside it)",
                    module.join("/"),
                    path.join("::")
                ));
            }
            edges.entry(module.clone()).or_default().insert(target);
        }
    }
    // A circle: a file that reaches itself again through the imports.
    for start in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<Vec<Vec<String>>> = vec![vec![start.clone()]];
        while let Some(trail) = todo.pop() {
            for next in edges.get(trail.last().unwrap()).into_iter().flatten() {
                if next == start && trail.iter().all(|m| m >= start) {
                    let names: Vec<String> = trail
                        .iter()
                        .chain([start])
                        .map(|m| format!("src/{}", m.join("/")))
                        .collect();
                    wrong.push(format!("import circle: {}", names.join(" -> ")));
                } else if seen.insert(next.clone()) {
                    todo.push([trail.clone(), vec![next.clone()]].concat());
                }
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "the layers of src/lib.rs are broken:\n{}",
        wrong.join("\n")
    );
    assert!(files.len() > 50, "read only {} files of src/", files.len());
}
