//! Errors in sentences (issue 25, item 28): no Rust Debug text of a library
//! (`Aliases { aliases: 101 }`, `MySqlError { … }`, `- TypeError`) reaches
//! an operator. The database's refusal is checked in `refused_orders.rs`,
//! redis-rs's error kinds by `util::error_text`'s unit test.

use crate::support::spec::seckill;

#[test]
fn a_yaml_budget_breach_is_said_in_words() {
    let mut yaml = String::from(
        "campaign: aliases\nitems:\n  - &a { id: \"1\", name: one, price: \"1.00\", stock: 5 }\n",
    );
    for _ in 0..150 {
        yaml.push_str("  - *a\n");
    }
    let file = crate::support::campaign_file(&yaml);
    let ran = seckill(&["status"]).campaign(&file).fails_with(2);
    let said = ran.stderr();
    assert!(said.contains("(101 aliases; at most 100 aliases"), "{said}");
    assert!(!said.contains('{'), "{said}");
}
