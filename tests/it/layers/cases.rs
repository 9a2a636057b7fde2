//! The checker on small in-memory trees: one that keeps the map, and one
//! break of each kind, each found and named.

use super::check::{Files, check};
use super::map::{self, DOMAIN_ORDER, FOLDERS};

/// A small tree that keeps the map, with the traps a text-level reader
/// falls into: paths in comments, docs and literals, lifetimes beside
/// character literals, `super::super`, `self` and `as` in groups, an
/// alias used later, `$crate` in a macro, a test module's `super::*`.
const KEEPS_THE_MAP: &[(&str, &str)] = &[
    (
        "lib.rs",
        "pub mod cmd;\npub mod domain;\npub mod model;\npub mod util;\n",
    ),
    ("main.rs", "fn main() {\n    seckill::cmd::run();\n}\n"),
    ("util/mod.rs", UTIL),
    (
        "util/text.rs",
        "pub fn width(text: &str) -> usize {\n    text.len()\n}\n",
    ),
    (
        "model/mod.rs",
        "//! May import: util.\n\nuse crate::util::text;\n",
    ),
    ("domain/mod.rs", DOMAIN),
    (
        "domain/kill_switch.rs",
        "//! May import: model.\n\nuse crate::model::Campaign;\n",
    ),
    ("domain/slot.rs", SLOT),
    ("domain/item/mod.rs", ITEM),
    ("domain/item/shape.rs", SHAPE),
    (
        "domain/registry.rs",
        "//! May import: nothing of the crate.\n\npub struct Registry;\n",
    ),
    (
        "cmd/mod.rs",
        "//! May import: domain, model, util.\n\npub mod buy;\npub mod status;\n",
    ),
    ("cmd/buy.rs", BUY),
    ("cmd/status.rs", STATUS),
    ("README.md", ""),
];

const UTIL: &str = "//! Helpers every layer uses.
//!
//! May import: nothing of the crate.

pub mod text;

#[macro_export]
macro_rules! width {
    ($text:expr) => {
        $crate::util::text::width($text)
    };
}
";

const DOMAIN: &str = "//! The sale.
//! May import: redis_client, model, util.

pub mod item;
pub mod kill_switch;
pub mod registry;
pub mod slot;
";

const SLOT: &str = "//! One hash tag's keys; never asks crate::domain::item.
//! May import: domain::kill_switch, model, util.

use super::kill_switch::{self, Switch};
use crate::model::{self as m};

/// Unlike [`crate::domain::item::SaleItem::buy`], one slot.
pub fn buy<'a>(name: &'a str) -> &'a str {
    let _quote = '\"';
    let _tick = '\\'';
    /* crate::cmd::buy /* nested */ crate::cmd */
    let _raw = r#\"super::super::cmd \"quoted\" \"#;
    let _ = m::Campaign::load(\"crate::cmd::buy::run\");
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::text::width;
}
";

const ITEM: &str = "//! May import: domain::slot, domain::kill_switch, util.

mod shape;

use crate::domain::{
    kill_switch::Switch,
    slot::{self, Buy},
};
use crate::util::text;

pub struct SaleItem;
";

const SHAPE: &str = "use super::super::slot::Buy;
use super::SaleItem;

pub(in crate::domain) enum Shape {
    Plain,
    Bucketed,
}
";

const BUY: &str = "//! May import: domain, util.

use crate::domain::item::{self, SaleItem};
use crate::util;

pub struct Args;

fn name<'a>(text: &'a str) -> &'a str {
    util::text::width(text);
    text
}
";

const STATUS: &str = "use super::buy::Args;
use crate::domain::item;

fn show() {
    let _ = item::shape::Shape::Plain;
}
";

/// [`KEEPS_THE_MAP`] with some files written anew (or added).
fn changed(files: &[(&str, &str)]) -> Files {
    KEEPS_THE_MAP
        .iter()
        .chain(files)
        .map(|(path, text)| (path.to_string(), text.to_string()))
        .collect()
}

/// The one finding of a tree; fails when there are none or more.
fn the_finding(files: &Files) -> String {
    let findings = check(files);
    assert_eq!(
        findings.len(),
        1,
        "expected one finding, got:\n{}",
        findings.join("\n")
    );
    findings.into_iter().next().unwrap()
}

#[test]
fn a_tree_that_keeps_the_map_passes_whatever_its_comments_and_literals_say() {
    let findings = check(&changed(&[]));
    assert!(findings.is_empty(), "{}", findings.join("\n"));
}

#[test]
fn an_upward_super_super_import_fails() {
    let shape = "use super::super::slot::Buy;\nuse super::super::super::cmd::buy::Args;\n";
    assert_eq!(
        the_finding(&changed(&[("domain/item/shape.rs", shape)])),
        "src/domain/item/shape.rs:2 imports super::super::super::cmd::buy::Args: domain may \
         import redis_client, model, util — not cmd"
    );

    // From a test module, `super` is the file's own module, one more is its folder.
    let slot = "//! May import: domain::kill_switch.

#[cfg(test)]
mod tests {
    use super::super::registry::Registry;
}
";
    let found = the_finding(&changed(&[("domain/slot.rs", slot)]));
    assert!(
        found.starts_with(
            "src/domain/slot.rs:5 imports super::super::registry::Registry: in the domain's \
             inner order registry is above slot"
        ),
        "{found}"
    );

    let text = "use super::super::super::anywhere;\n";
    assert_eq!(
        the_finding(&changed(&[("util/text.rs", text)])),
        "src/util/text.rs:1 imports super::super::super::anywhere: its `super`s climb above \
         the crate root"
    );
}

#[test]
fn a_folder_the_map_does_not_know_fails() {
    let found = the_finding(&changed(&[(
        "features/serve/mod.rs",
        "pub fn serve() {}\n",
    )]));
    assert!(
        found.starts_with("src/features/ is a folder the map does not know (the map: cli, cmd,"),
        "{found}"
    );
    let found = the_finding(&changed(&[("helpers.rs", "pub fn help() {}\n")]));
    assert!(
        found.starts_with("src/helpers.rs is a top-level module the map does not know"),
        "{found}"
    );
    for path in ["domain/cart.rs", "domain/cart/mod.rs"] {
        let found = the_finding(&changed(&[(path, "use super::slot::Buy;\n")]));
        let place = path.trim_end_matches("mod.rs");
        assert!(
            found.starts_with(&format!(
                "src/{place} is a domain module the inner order does not place (bottom → top: \
                 kill_switch, slot,"
            )),
            "{found}"
        );
    }
    // What imports a folder off the map breaks the map too.
    let status = "use crate::features::serve;\n";
    let findings = check(&changed(&[
        ("features/serve/mod.rs", "pub fn serve() {}\n"),
        ("cmd/status.rs", status),
    ]));
    assert_eq!(findings.len(), 2, "{}", findings.join("\n"));
    assert!(findings[1].ends_with("not features, which is no folder of the map"));
}

#[test]
fn a_domain_import_against_the_inner_order_fails() {
    let upward = "//! May import: domain::kill_switch.\n\nuse crate::domain::registry::Registry;\n";
    let found = the_finding(&changed(&[("domain/slot.rs", upward)]));
    assert_eq!(
        found,
        format!(
            "src/domain/slot.rs:3 imports crate::domain::registry::Registry: in the domain's \
             inner order registry is above slot (a domain module imports only the modules \
             below it; bottom → top: {})",
            DOMAIN_ORDER.join(", ")
        )
    );

    // The alias of the domain's root, then a path through it.
    let alias = "//! May import: domain::kill_switch.

use crate::domain;

fn open() {
    domain::registry::Registry::open();
}
";
    let found = the_finding(&changed(&[("domain/slot.rs", alias)]));
    assert!(
        found.starts_with(
            "src/domain/slot.rs:6 imports domain::registry::Registry::open: in the domain's \
             inner order registry is above slot"
        ),
        "{found}"
    );

    // Through the domain's root, a module's rank is out of sight.
    let root = "//! May import: domain::kill_switch.\n\nuse super::Registry;\n";
    assert_eq!(
        the_finding(&changed(&[("domain/slot.rs", root)])),
        "src/domain/slot.rs:3 imports super::Registry: crate::domain::Registry is no domain \
         module: a domain module imports the others by their own paths, not through the \
         domain's root"
    );
}

#[test]
fn a_may_import_line_the_code_breaks_fails() {
    let slot = "//! May import: domain::kill_switch, model.\n\nuse crate::redis_client::conn;\n";
    assert_eq!(
        the_finding(&changed(&[("domain/slot.rs", slot)])),
        "src/domain/slot.rs:3 imports crate::redis_client::conn: redis_client is missing from \
         the `//! May import:` line at src/domain/slot.rs:1"
    );
    let model = "//! May import: nothing of the crate.\n\nuse crate::util::text;\n";
    assert_eq!(
        the_finding(&changed(&[("model/mod.rs", model)])),
        "src/model/mod.rs:3 imports crate::util::text: util is missing from the `//! May \
         import:` line at src/model/mod.rs:1"
    );
    // A folder's line speaks for every file in it; a file's own line for that file.
    let status = "use crate::redis_client::conn;\n";
    let found = the_finding(&changed(&[("cmd/status.rs", status)]));
    assert!(found.ends_with("at src/cmd/mod.rs:1"), "{found}");
    let buy = "//! May import: domain.\n\nuse crate::util::text;\n";
    let found = the_finding(&changed(&[("cmd/buy.rs", buy)]));
    assert!(found.ends_with("at src/cmd/buy.rs:1"), "{found}");
}

#[test]
fn a_may_import_line_is_there_once_and_lists_only_what_the_map_allows() {
    let found = the_finding(&changed(&[(
        "cmd/mod.rs",
        "pub mod buy;\npub mod status;\n",
    )]));
    assert!(
        found.starts_with(
            "src/cmd/mod.rs has no `//! May import:` line; its files import today: `//! May \
             import: domain, util.` (the map allows cmd: http, invocation, operator, domain, \
             redis_client, model, util)"
        ),
        "{found}"
    );
    let twice = "//! May import: nothing of the crate.\n//! May import: model.\n";
    let found = the_finding(&changed(&[("domain/registry.rs", twice)]));
    assert!(
        found.starts_with(
            "src/domain/registry.rs has 2 `//! May import` lines (lines 1, 2); it takes exactly \
             one; its files import today: `//! May import: nothing of the crate.`"
        ),
        "{found}"
    );
    let upward = "//! May import: util, domain.\n";
    assert_eq!(
        the_finding(&changed(&[("model/mod.rs", upward)])),
        "src/model/mod.rs:1 `//! May import:` lists domain, which the map forbids: model may \
         import util"
    );
    let inner = "//! May import: domain::item, model.\n";
    let found = the_finding(&changed(&[("domain/slot.rs", inner)]));
    assert!(
        found.starts_with(
            "src/domain/slot.rs:1 `//! May import:` lists domain::item, which the map forbids: \
             domain::slot may import domain::kill_switch, redis_client, model, util"
        ),
        "{found}"
    );
    let prose = "//! May import: everything below (model, ...); only main.rs imports it\n";
    let found = the_finding(&changed(&[("cmd/mod.rs", prose)]));
    assert!(
        found.starts_with(&format!(
            "src/cmd/mod.rs:1 `{}` is not of the form",
            prose.trim()
        )),
        "{found}"
    );
    let mut no_root = changed(&[]);
    no_root.remove("cmd/mod.rs");
    assert_eq!(
        the_finding(&no_root),
        "src/cmd/ has no mod.rs to carry its `//! May import:` line"
    );
}

#[test]
fn an_import_circle_fails() {
    let buy = "//! May import: domain, util.\n\nuse super::status::show;\n";
    assert_eq!(
        the_finding(&changed(&[("cmd/buy.rs", buy)])),
        "import circle: src/cmd/buy.rs:3 -> src/cmd/status.rs:1 -> src/cmd/buy.rs"
    );
    // Three files, each through another path form.
    let registry = "//! May import: domain::slot.\n\nuse super::slot;\n";
    let slot = "//! May import: domain::kill_switch.\n\nuse super::kill_switch::{self};\n";
    let kill_switch = "//! May import: nothing of the crate.\n\nfn f() {\n    crate::domain::registry::Registry::new();\n}\n";
    let findings = check(&changed(&[
        ("domain/registry.rs", registry),
        ("domain/slot.rs", slot),
        ("domain/kill_switch.rs", kill_switch),
    ]));
    assert!(
        findings.contains(
            &"import circle: src/domain/kill_switch.rs:4 -> src/domain/registry.rs:3 -> \
              src/domain/slot.rs:3 -> src/domain/kill_switch.rs"
                .to_string()
        ),
        "{}",
        findings.join("\n")
    );
}

#[test]
fn a_grouped_import_reaching_up_fails_whatever_its_nesting() {
    let model = "//! May import: util.

use crate::{
    util::{text::{self, width}},
    domain::{registry::{self, Registry}},
};
";
    assert_eq!(
        the_finding(&changed(&[("model/mod.rs", model)])),
        "src/model/mod.rs:5 imports crate::domain::registry::Registry (and 2 more like it): \
         model may import util — not domain"
    );
    let slot = "//! May import: domain::kill_switch.

use crate::domain::{kill_switch::{self, Switch}, registry::{Registry as Names}};
";
    let found = the_finding(&changed(&[("domain/slot.rs", slot)]));
    assert!(
        found.starts_with(
            "src/domain/slot.rs:3 imports crate::domain::registry::Registry (and 1 more like \
             it): in the domain's inner order registry is above slot"
        ),
        "{found}"
    );
}

#[test]
fn a_macro_reaching_up_through_dollar_crate_fails() {
    let util = UTIL.replace("$crate::util::text::width", "$crate::model::width");
    let found = the_finding(&changed(&[("util/mod.rs", &util)]));
    assert_eq!(
        found,
        "src/util/mod.rs:10 imports crate::model::width: util may import nothing of the crate \
         — not model"
    );
}

#[test]
fn the_rendered_map_lines_up_and_names_every_place() {
    let text = map::map_text();
    let columns: Vec<usize> = text
        .lines()
        .filter_map(|l| l.find("may import: "))
        .collect();
    assert_eq!(columns.len(), FOLDERS.len(), "{text}");
    assert!(columns.iter().all(|c| *c == columns[0]), "{text}");
    for folder in &FOLDERS {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{:<13}", folder.name)))
        );
    }
    assert!(text.ends_with(&DOMAIN_ORDER.join(", ")), "{text}");
}
