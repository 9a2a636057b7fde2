//! Campaign files: the shipped ones load, and every file in
//! `tests/bad_campaigns/` is refused with exit code 2 and the exact message
//! its first line (`# expect: ...`) promises, before any Redis is contacted.

use std::path::Path;

use seckill::model::campaign::Campaign;
use seckill::model::exit_codes::USAGE_ERROR;

use crate::support::spec::seckill;

#[test]
fn shipped_campaigns_are_valid() {
    for name in ["moutai", "concert", "iphone"] {
        let path = Path::new("campaigns").join(format!("{name}.yaml"));
        let campaign = Campaign::load(&path).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert!(!campaign.items.is_empty());
    }
    let moutai = Campaign::load(Path::new("campaigns/moutai.yaml")).unwrap();
    assert_eq!(moutai.id, "moutai-1111");
    assert_eq!(moutai.items[0].stock, 1000);
    assert_eq!(moutai.items[0].price_cents, 149_900);
    let concert = Campaign::load(Path::new("campaigns/concert.yaml")).unwrap();
    assert!(concert.items.iter().map(|i| i.stock).sum::<i64>() >= 10_000);
    assert!(concert.ends_at_ms.unwrap() > concert.starts_at_ms.unwrap());
    let iphone = Campaign::load(Path::new("campaigns/iphone.yaml")).unwrap();
    assert!(iphone.items.len() >= 10);
}

#[test]
fn every_bad_campaign_is_refused_with_its_location_and_reason() {
    let mut entries: Vec<_> = std::fs::read_dir("tests/bad_campaigns")
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    assert!(entries.len() >= 15, "the corpus shrank");
    for path in entries {
        let text = std::fs::read_to_string(&path).unwrap();
        let expected = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{} lacks its '# expect:' line", path.display()));
        let name = path.file_name().unwrap().to_str().unwrap();
        // A port nothing listens on: the file must be rejected before connecting.
        let stderr = seckill(&["--redis", "redis://127.0.0.1:1/0", "-c", name, "preheat"])
            .current_dir("tests/bad_campaigns")
            .fails_with(USAGE_ERROR)
            .stderr();
        assert!(
            stderr.contains(expected),
            "{}:\n  expected: {expected}\n  got: {stderr}",
            path.display()
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_missing_file_is_a_usage_error_naming_it() {
    let stderr = seckill(&["-c", "no/such/campaign.yaml", "preheat"])
        .fails_with(USAGE_ERROR)
        .stderr();
    assert!(
        stderr.contains("cannot read campaign file no/such/campaign.yaml"),
        "{stderr}"
    );
}

#[test]
fn no_campaign_flag_explains_how_to_pass_one() {
    let refused = seckill(&["buy", "--item", "1", "--user", "u"]).fails_with(USAGE_ERROR);
    assert!(refused.stderr().contains("pass -c FILE"));
}
