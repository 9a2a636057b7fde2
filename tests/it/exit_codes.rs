//! Exit codes are an interface: written once in `exit_codes`, documented in
//! the README table, and matched by every buy outcome.

use seckill::domain::slot::Outcome;
use seckill::model::exit_codes;

#[test]
fn the_readme_documents_every_exit_code() {
    let readme = std::fs::read_to_string("README.md").unwrap();
    for (code, name, meaning) in exit_codes::ALL {
        let row = format!("| {code} | `{name}` | {meaning} |");
        assert!(readme.contains(&row), "README.md lacks the row:\n{row}");
    }
}

#[test]
fn codes_are_distinct_and_buy_outcomes_use_their_named_code() {
    let mut codes: Vec<i32> = exit_codes::ALL.iter().map(|(c, _, _)| *c).collect();
    codes.sort();
    codes.dedup();
    assert_eq!(codes.len(), exit_codes::ALL.len());
    for outcome in Outcome::ALL {
        let (code, _, _) = exit_codes::ALL
            .iter()
            .find(|(_, name, _)| {
                *name == outcome.as_str() || (outcome == Outcome::Ok && *name == "success")
            })
            .unwrap_or_else(|| panic!("{outcome:?} has no named exit code"));
        assert_eq!(outcome.exit_code(), *code, "{outcome:?}");
    }
}
