//! The map of `src/` as data: the top-level folders from the top down, each
//! with the folders it may import, and the domain's inner order from the
//! bottom up. The checker reads it, and `map_text` renders it for `lib.rs`
//! and `ARCHITECTURE.md` to quote, so the documents show the map that is
//! checked. Changing the map is changing this file.

/// A top-level folder of `src/`.
pub(super) struct Folder {
    pub(super) name: &'static str,
    /// What it holds, in the words of the rendered map (one entry a line).
    pub(super) holds: &'static [&'static str],
    /// The folders it may import besides itself.
    pub(super) may_import: &'static [&'static str],
}

/// From the top down.
pub(super) const FOLDERS: [Folder; 9] = [
    Folder {
        name: "cli",
        holds: &["the command line: clap parser, dispatch"],
        may_import: &[
            "cmd",
            "http",
            "invocation",
            "operator",
            "domain",
            "redis_client",
            "model",
            "util",
        ],
    },
    Folder {
        name: "cmd",
        holds: &["the CLI door: one file per subcommand"],
        may_import: &[
            "http",
            "invocation",
            "operator",
            "domain",
            "redis_client",
            "model",
            "util",
        ],
    },
    Folder {
        name: "http",
        holds: &[
            "the HTTP door (`serve`) and the probe server",
            "(/healthz, /metrics) the services use",
        ],
        may_import: &["operator", "domain", "redis_client", "model", "util"],
    },
    Folder {
        name: "invocation",
        holds: &["context, report (one output path), help"],
        may_import: &["domain", "redis_client", "model", "util"],
    },
    Folder {
        name: "operator",
        holds: &[
            "operator tools: doctor, acl, monitor,",
            "loadtest (the sale's scenarios over the engine crate)",
        ],
        may_import: &["domain", "redis_client", "model", "util"],
    },
    Folder {
        name: "domain",
        holds: &["the sale (inner order below)"],
        may_import: &["redis_client", "model", "util"],
    },
    Folder {
        name: "redis_client",
        holds: &["connections, typed Lua calls, failures, WAIT"],
        may_import: &["model", "util"],
    },
    Folder {
        name: "model",
        holds: &["campaign, keys, layout, exit codes, errors"],
        may_import: &["util"],
    },
    Folder {
        name: "util",
        holds: &["output, log, retry, text, identity"],
        may_import: &[],
    },
];

/// The domain's modules from the bottom up: each imports only those before it.
pub(super) const DOMAIN_ORDER: [&str; 15] = [
    "kill_switch",
    "slot",
    "buckets",
    "seats",
    "waiting_room",
    "item",
    "regions",
    "registry",
    "orders",
    "reservations",
    "lookup",
    "recovery",
    "reconcile",
    "preheat_plan",
    "operation",
];

/// How a folder that may import nothing says so, in the map and in its
/// `//! May import:` line.
pub(super) const NOTHING: &str = "nothing of the crate";

pub(super) fn folder(name: &str) -> Option<&'static Folder> {
    FOLDERS.iter().find(|f| f.name == name)
}

/// Where a domain module sits in the inner order (0 at the bottom).
pub(super) fn domain_rank(name: &str) -> Option<usize> {
    DOMAIN_ORDER.iter().position(|m| *m == name)
}

/// `a, b, c`, or `nothing of the crate` for an empty list.
pub(super) fn listed(names: &[impl AsRef<str>]) -> String {
    if names.is_empty() {
        return NOTHING.to_string();
    }
    names
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The map as the documents quote it.
pub(super) fn map_text() -> String {
    let mut lines = Vec::new();
    for folder in &FOLDERS {
        let (first, more) = folder
            .holds
            .split_first()
            .expect("a folder says what it holds");
        lines.push(format!(
            "{:<13}{first:<48}may import: {}",
            folder.name,
            listed(folder.may_import)
        ));
        lines.extend(more.iter().map(|line| format!("{:13}{line}", "")));
    }
    lines.push(String::new());
    lines.push(
        "domain, inner order, bottom → top (a domain module imports only modules below it):"
            .to_string(),
    );
    lines.push(listed(&DOMAIN_ORDER));
    lines.join("\n")
}

#[test]
fn the_map_points_down_and_names_only_its_own_folders() {
    for (at, folder) in FOLDERS.iter().enumerate() {
        for name in folder.may_import {
            let below = FOLDERS[at + 1..].iter().any(|f| f.name == *name);
            assert!(
                below,
                "{} may import {name}, which is not below it",
                folder.name
            );
        }
    }
    let domain = folder("domain").unwrap();
    assert!(domain.may_import.iter().all(|name| folder(name).is_some()));
}
