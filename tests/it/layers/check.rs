//! The layer check: pure functions from an in-memory file set (paths below
//! `src/` → text) to the findings, one sentence each, empty when the tree
//! keeps the map of [`super::map`]. Four things are checked:
//! - every top-level folder or file, and every domain module, has a place
//!   on the map;
//! - every import keeps to the map: a folder imports itself and its
//!   may-import set, a domain module itself and the modules below it;
//! - each top-level folder's root (`mod.rs`) and each domain module's root
//!   (`mod.rs`, or its file) has exactly one `//! May import:` line, which
//!   lists only what the map allows and everything the folder's files
//!   import; a line in any other file is checked the same way for that file;
//! - no files import each other in a circle.

use std::collections::{BTreeMap, BTreeSet};

use super::map::{self, DOMAIN_ORDER, FOLDERS, Folder};
use super::source::{self, Reference};

/// A source tree: path below `src/` (`"domain/slot.rs"`) → text.
pub(super) type Files = BTreeMap<String, String>;

type Module = Vec<String>;

/// How a folder's line reads: `//! May import: a, b, c.`
pub(super) const LINE_FORMAT: &str =
    "`//! May import: a, b, c.` (or `//! May import: nothing of the crate.`)";

struct Source<'a> {
    path: &'a str,
    module: Module,
    text: &'a str,
    references: Vec<Reference>,
}

/// What `src/` breaks of the map, one sentence a finding; empty when it keeps it.
pub(super) fn check(files: &Files) -> Vec<String> {
    let sources: Vec<Source> = files
        .iter()
        .filter_map(|(path, text)| {
            let module = module_of(path)?;
            let references = source::references(&source::code_only(text), &module);
            Some(Source {
                path,
                module,
                text,
                references,
            })
        })
        .collect();
    let domain_modules: BTreeSet<&str> = sources
        .iter()
        .filter(|s| s.module.len() > 1 && s.module[0] == "domain")
        .map(|s| s.module[1].as_str())
        .collect();
    let mut findings = Vec::new();
    for mut group in [
        unknown_places(files),
        imports_against_the_map(&sources, &domain_modules),
        may_import_lines(&sources, &domain_modules),
        circles(&sources),
    ] {
        group.sort_by_cached_key(|finding| file_and_line(finding));
        group.dedup();
        findings.extend(group);
    }
    findings
}

/// A finding's order: by file, then by line (`src/a.rs:9` before `src/a.rs:10`).
fn file_and_line(finding: &str) -> (String, usize, String) {
    let end = finding.find([':', ' ']).unwrap_or(finding.len());
    let line = finding[end..]
        .strip_prefix(':')
        .map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().unwrap_or(0)
        })
        .unwrap_or(0);
    (finding[..end].to_string(), line, finding.to_string())
}

/// One finding per file and reason: its first import, and how many more
/// break the map the same way.
fn per_file_and_reason(found: Vec<(&str, &Reference, String)>) -> Vec<String> {
    let mut groups: BTreeMap<(&str, String), Vec<&Reference>> = BTreeMap::new();
    for (path, reference, why) in found {
        groups.entry((path, why)).or_default().push(reference);
    }
    groups
        .into_iter()
        .map(|((path, why), references)| {
            // The earliest, and of one line the longest: `a::b::c` over its group's `a::b`.
            let first = references
                .iter()
                .min_by_key(|r| (r.line, std::cmp::Reverse(r.written.len())))
                .unwrap();
            let written: BTreeSet<&str> = references.iter().map(|r| r.written.as_str()).collect();
            let more = match written.len() - 1 {
                0 => String::new(),
                n => format!(" (and {n} more like it)"),
            };
            format!(
                "src/{path}:{} imports {}{more}: {why}",
                first.line, first.written
            )
        })
        .collect()
}

/// `domain/item/mod.rs` → `["domain", "item"]`; `None` for the crate root
/// (`lib.rs`, `main.rs`) and for files that are not Rust.
fn module_of(path: &str) -> Option<Module> {
    let mut module: Module = path
        .strip_suffix(".rs")?
        .split('/')
        .map(str::to_string)
        .collect();
    if module == ["lib"] || module == ["main"] {
        return None;
    }
    if module.last().is_some_and(|last| last == "mod") {
        module.pop();
    }
    Some(module)
}

fn unknown_places(files: &Files) -> Vec<String> {
    let folders = map::listed(&FOLDERS.iter().map(|f| f.name).collect::<Vec<_>>());
    let mut findings = Vec::new();
    for path in files.keys() {
        let parts: Vec<&str> = path.split('/').collect();
        match parts.as_slice() {
            [file] => {
                if let Some(name) = file.strip_suffix(".rs")
                    && !matches!(name, "lib" | "main")
                    && map::folder(name).is_none()
                {
                    findings.push(format!(
                        "src/{file} is a top-level module the map does not know (the map: {folders})"
                    ));
                }
            }
            [folder, ..] if map::folder(folder).is_none() => findings.push(format!(
                "src/{folder}/ is a folder the map does not know (the map: {folders})"
            )),
            ["domain", file] => {
                if let Some(name) = file.strip_suffix(".rs")
                    && name != "mod"
                    && map::domain_rank(name).is_none()
                {
                    findings.push(format!(
                        "src/domain/{file} is a domain module the inner order does not place \
                         (bottom → top: {})",
                        map::listed(&DOMAIN_ORDER)
                    ));
                }
            }
            ["domain", folder, _, ..] if map::domain_rank(folder).is_none() => {
                findings.push(format!(
                    "src/domain/{folder}/ is a domain module the inner order does not place \
                     (bottom → top: {})",
                    map::listed(&DOMAIN_ORDER)
                ));
            }
            _ => {}
        }
    }
    findings
}

/// Where a module sits on the map.
#[derive(Clone, Copy)]
enum Place {
    /// A top-level folder; for the domain, only its root (`domain/mod.rs`).
    Folder(&'static Folder),
    /// A domain module, by its rank in the inner order.
    Domain(usize),
}

impl Place {
    /// `None` off the map (reported as an unknown place) and for the crate root.
    fn of(module: &[String]) -> Option<Place> {
        let folder = map::folder(module.first()?)?;
        match module.get(1) {
            Some(inner) if folder.name == "domain" => map::domain_rank(inner).map(Place::Domain),
            _ => Some(Place::Folder(folder)),
        }
    }

    /// How its `//! May import:` line names it.
    fn name(self) -> String {
        match self {
            Place::Folder(folder) => folder.name.to_string(),
            Place::Domain(rank) => format!("domain::{}", DOMAIN_ORDER[rank]),
        }
    }

    /// Everything its `//! May import:` line may list, as the line names it.
    fn may_import(self) -> Vec<String> {
        let names = |folder: &Folder| folder.may_import.iter().map(|n| n.to_string());
        match self {
            Place::Folder(folder) => names(folder).collect(),
            Place::Domain(rank) => DOMAIN_ORDER[..rank]
                .iter()
                .rev()
                .map(|m| format!("domain::{m}"))
                .chain(names(map::folder("domain").unwrap()))
                .collect(),
        }
    }

    /// What an import of `target` (from the crate root) is called in its
    /// line; `None` for the domain's root as seen from a domain module.
    fn name_of(self, target: &[String]) -> Option<String> {
        match (self, target) {
            (Place::Domain(_), [top, inner, ..]) if top == "domain" => {
                Some(format!("domain::{inner}"))
            }
            (Place::Domain(_), [top]) if top == "domain" => None,
            (_, [top, ..]) => Some(top.clone()),
            (_, []) => None,
        }
    }
}

/// Whether the map lets `module` import `target`; the reason when not.
/// `domain_modules`: the domain's modules the tree has, on the map or not.
fn map_allows(
    module: &[String],
    target: Option<&Vec<String>>,
    domain_modules: &BTreeSet<&str>,
) -> Result<(), String> {
    let Some(target) = target else {
        return Err("its `super`s climb above the crate root".to_string());
    };
    let Some(top) = target.first() else {
        return Ok(());
    };
    let Some(folder) = map::folder(&module[0]) else {
        return Ok(()); // off the map: reported as an unknown place
    };
    if *top != folder.name {
        if folder.may_import.contains(&top.as_str()) {
            return Ok(());
        }
        let what = if map::folder(top).is_some() {
            String::new()
        } else {
            ", which is no folder of the map".to_string()
        };
        return Err(format!(
            "{} may import {} — not {top}{what}",
            folder.name,
            map::listed(folder.may_import)
        ));
    }
    let (Some(Place::Domain(from)), Some(inner)) = (Place::of(module), target.get(1)) else {
        return Ok(()); // the domain's root, or a module off the inner order (reported as such)
    };
    match map::domain_rank(inner) {
        Some(to) if to <= from => Ok(()),
        Some(_) => Err(format!(
            "in the domain's inner order {inner} is above {} (a domain module imports only \
             the modules below it; bottom → top: {})",
            DOMAIN_ORDER[from],
            map::listed(&DOMAIN_ORDER)
        )),
        None if domain_modules.contains(inner.as_str()) => Ok(()), // reported as an unknown place
        None => Err(format!(
            "crate::domain::{inner} is no domain module: a domain module imports the others \
             by their own paths, not through the domain's root"
        )),
    }
}

fn imports_against_the_map(sources: &[Source], domain_modules: &BTreeSet<&str>) -> Vec<String> {
    let mut found = Vec::new();
    for source in sources {
        for reference in &source.references {
            if let Err(why) = map_allows(&source.module, reference.path.as_ref(), domain_modules) {
                found.push((source.path, reference, why));
            }
        }
    }
    per_file_and_reason(found)
}

/// The `//! May import` lines of a text, with their line numbers; malformed
/// ones too, so that one of them counts as a line that is there.
fn declared_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            line.trim_start()
                .strip_prefix("//!")
                .is_some_and(|doc| doc.trim_start().to_lowercase().starts_with("may import"))
        })
        .map(|(at, line)| (at + 1, line.trim()))
        .collect()
}

/// The names a `//! May import:` line lists; `None` when it is not of the
/// form [`LINE_FORMAT`].
fn parse_line(line: &str) -> Option<Vec<String>> {
    let list = line
        .trim()
        .strip_prefix("//! May import: ")?
        .strip_suffix('.')?;
    if list == map::NOTHING {
        return Some(Vec::new());
    }
    let names: Vec<String> = list.split(", ").map(str::to_string).collect();
    let well_formed = |name: &String| {
        let segments: Vec<&str> = name.split("::").collect();
        segments.len() <= 2
            && segments.iter().all(|s| {
                s.starts_with(|c: char| c.is_ascii_lowercase())
                    && s.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            })
    };
    names.iter().all(well_formed).then_some(names)
}

fn may_import_lines(sources: &[Source], domain_modules: &BTreeSet<&str>) -> Vec<String> {
    let mut findings = Vec::new();
    let modules: BTreeSet<&Module> = sources.iter().map(|s| &s.module).collect();
    // Each folder on the map, and each domain module, needs a root to carry its line.
    for source in sources {
        let Some(place) = Place::of(&source.module) else {
            continue;
        };
        let root = match place {
            Place::Folder(folder) => vec![folder.name.to_string()],
            Place::Domain(rank) => vec!["domain".to_string(), DOMAIN_ORDER[rank].to_string()],
        };
        if !modules.contains(&root) {
            findings.push(format!(
                "src/{}/ has no mod.rs to carry its `//! May import:` line",
                root.join("/")
            ));
        }
    }
    for source in sources {
        let Some(place) = Place::of(&source.module) else {
            continue;
        };
        let is_root = source.module.len() == 1
            || (matches!(place, Place::Domain(_)) && source.module.len() == 2);
        let imported = imported(sources, domain_modules, (source, place));
        let file = format!("src/{}", source.path);
        let lines = declared_lines(source.text);
        let line = match lines.as_slice() {
            [] if !is_root => continue,
            [(at, line)] => parse_line(line)
                .ok_or(format!(
                    "{file}:{at} `{line}` is not of the form {LINE_FORMAT}"
                ))
                .map(|names| (*at, names)),
            [] => Err(format!("{file} has no `//! May import:` line")),
            more => Err(format!(
                "{file} has {} `//! May import` lines (lines {}); it takes exactly one",
                more.len(),
                more.iter()
                    .map(|(at, _)| at.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
        let (at, names) = match line {
            Ok(line) => line,
            Err(wrong) => {
                let today: Vec<&String> = imported.iter().map(|(name, _)| name).collect();
                findings.push(format!(
                    "{wrong}; its files import today: `//! May import: {}.` (the map allows {}: \
                     {})",
                    map::listed(&today),
                    place.name(),
                    map::listed(&place.may_import())
                ));
                continue;
            }
        };
        let allowed = place.may_import();
        for name in &names {
            if *name == place.name() {
                findings.push(format!(
                    "{file}:{at} `//! May import:` lists {name} itself (a module always may)"
                ));
            } else if !allowed.contains(name) {
                findings.push(format!(
                    "{file}:{at} `//! May import:` lists {name}, which the map forbids: {} may \
                     import {}",
                    place.name(),
                    map::listed(&allowed)
                ));
            }
        }
        let unlisted = imported
            .into_iter()
            .filter(|(name, _)| !names.contains(name))
            .flat_map(|(name, by)| {
                let why =
                    format!("{name} is missing from the `//! May import:` line at {file}:{at}");
                by.into_iter()
                    .map(move |(path, reference)| (path, reference, why.clone()))
            })
            .collect();
        findings.extend(per_file_and_reason(unlisted));
    }
    findings
}

/// What the files of `root` (it and the files below it) import that the
/// map allows, named as `place`'s `//! May import:` line names it (in the
/// map's order), with each import of it.
fn imported<'a>(
    sources: &'a [Source],
    domain_modules: &BTreeSet<&str>,
    (root, place): (&Source, Place),
) -> Vec<(String, Vec<(&'a str, &'a Reference)>)> {
    let order = place.may_import();
    let mut by_name: BTreeMap<(usize, String), Vec<(&str, &Reference)>> = BTreeMap::new();
    for inside in sources
        .iter()
        .filter(|s| s.module.starts_with(&root.module))
    {
        for reference in &inside.references {
            let Some(target) = &reference.path else {
                continue;
            };
            if map_allows(&inside.module, Some(target), domain_modules).is_err() {
                continue; // reported against the map itself
            }
            if let Some(name) = place.name_of(target).filter(|n| *n != place.name()) {
                let rank = order.iter().position(|n| *n == name).unwrap_or(order.len());
                by_name
                    .entry((rank, name))
                    .or_default()
                    .push((inside.path, reference));
            }
        }
    }
    by_name
        .into_iter()
        .map(|((_, name), by)| (name, by))
        .collect()
}

/// Circles of imports between files. A file's imports of its own folder's
/// root (`mod.rs`) and above do not count: a folder and its files are one
/// unit, as for `import-circles`.
fn circles(sources: &[Source]) -> Vec<String> {
    let by_module: BTreeMap<&Module, &Source> = sources.iter().map(|s| (&s.module, s)).collect();
    let edges = file_imports(sources);
    let name = |module: &Module| format!("src/{}", by_module[module].path);
    strongly_connected(&edges)
        .into_iter()
        .filter(|group| group.len() > 1)
        .map(|group| {
            let trail = shortest_circle(&edges, &group);
            let mut steps: Vec<String> = trail
                .windows(2)
                .map(|pair| format!("{}:{}", name(pair[0]), edges[pair[0]][pair[1]]))
                .collect();
            steps.push(name(trail[0]));
            let mut finding = format!("import circle: {}", steps.join(" -> "));
            let others: Vec<String> = group
                .iter()
                .filter(|m| !trail.contains(m))
                .map(|m| name(m))
                .collect();
            if !others.is_empty() {
                finding += &format!(
                    " (one of the circles among {} files; also in it: {})",
                    group.len(),
                    others.join(", ")
                );
            }
            finding
        })
        .collect()
}

/// Which file imports which (`from` → `to` → the first line of `from`
/// that does), each path taken to the file that defines the module it
/// names, or the nearest module above that has a file.
fn file_imports<'a>(sources: &'a [Source]) -> Edges<'a> {
    let by_module: BTreeMap<&Module, &Source> = sources.iter().map(|s| (&s.module, s)).collect();
    let file_of = |path: &[String]| {
        (1..=path.len()).rev().find_map(|n| {
            by_module
                .get_key_value(&path[..n].to_vec())
                .map(|(m, _)| *m)
        })
    };
    let mut edges = Edges::new();
    for source in sources {
        for reference in &source.references {
            let Some(target) = reference.path.as_deref().and_then(file_of) else {
                continue;
            };
            if !source.module.starts_with(target) {
                let line = edges.entry(&source.module).or_default().entry(target);
                let first = line.or_insert(reference.line);
                *first = (*first).min(reference.line);
            }
        }
    }
    edges
}

/// from → to → the first line of `from` that imports `to`
type Edges<'a> = BTreeMap<&'a Module, BTreeMap<&'a Module, usize>>;

/// The shortest circle through the first (smallest) module of `group`,
/// as the modules it passes, that one at both ends.
fn shortest_circle<'a>(edges: &Edges<'a>, group: &[&'a Module]) -> Vec<&'a Module> {
    let start = group[0];
    let mut came_from: BTreeMap<&Module, &Module> = BTreeMap::new();
    let mut todo = std::collections::VecDeque::from([start]);
    while let Some(at) = todo.pop_front() {
        for &next in edges.get(at).into_iter().flat_map(|e| e.keys()) {
            if next == start {
                let mut trail = vec![at];
                while let Some(&before) = came_from.get(trail.last().unwrap()) {
                    trail.push(before);
                }
                trail.reverse();
                trail.push(start);
                return trail;
            }
            if group.contains(&next) && next != start && !came_from.contains_key(next) {
                came_from.insert(next, at);
                todo.push_back(next);
            }
        }
    }
    unreachable!("a strongly connected group has a circle through each member")
}

/// Tarjan's strongly connected components, each sorted, in module order.
fn strongly_connected<'a>(edges: &Edges<'a>) -> Vec<Vec<&'a Module>> {
    struct Walk<'a, 'e> {
        edges: &'e Edges<'a>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        groups: Vec<Vec<&'a Module>>,
    }
    impl<'a> Walk<'a, '_> {
        fn visit(&mut self, at: &'a Module) {
            let number = self.index.len();
            self.index.insert(at, number);
            self.low.insert(at, number);
            self.stack.push(at);
            for &next in self.edges.get(at).into_iter().flat_map(|e| e.keys()) {
                if !self.index.contains_key(next) {
                    self.visit(next);
                    self.low.insert(at, self.low[at].min(self.low[next]));
                } else if self.stack.contains(&next) {
                    self.low.insert(at, self.low[at].min(self.index[next]));
                }
            }
            if self.low[at] == self.index[at] {
                let split = self.stack.iter().position(|m| *m == at).unwrap();
                let mut group = self.stack.split_off(split);
                group.sort();
                self.groups.push(group);
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        groups: Vec::new(),
    };
    for &module in edges.keys() {
        if !walk.index.contains_key(module) {
            walk.visit(module);
        }
    }
    walk.groups.sort();
    walk.groups
}
