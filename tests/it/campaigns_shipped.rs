//! Issue 25 item 20: every shipped campaign file runs in the order the
//! README and the guide show it. After the README's first session,
//! `moutai-queue.yaml` and `moutai-reservations.yaml` were refused as
//! typos of `moutai-1111` (all sold item 1001 on the same Redis), and the
//! guide's "Hot items on a cluster" ran `loadtest` on the cluster where
//! `moutai-cluster` was live (refused: a load test never competes with a
//! live sale). Here every `preheat` the documents show runs on ONE Redis,
//! in document order, with the registry's collision check on; and the
//! cluster block's `seckill` lines run in their order on a cluster.

use std::path::Path;

use crate::support::RedisServer;
use crate::support::cluster::RedisCluster;
use crate::support::spec::seckill;
use seckill::model::campaign::Campaign;
use seckill::model::exit_codes::PREHEAT_REFUSED;

/// Shipped files a standalone Redis serves (the cluster file names its own nodes).
const STANDALONE: [&str; 7] = [
    "campaigns/moutai.yaml",
    "campaigns/iphone.yaml",
    "campaigns/concert.yaml",
    "campaigns/moutai-queue.yaml",
    "campaigns/moutai-tickets.yaml",
    "campaigns/moutai-reservations.yaml",
    "campaigns/concert-seats.yaml",
];

/// Every `$ seckill -c campaigns/... preheat ...` of the text blocks of
/// `file`, in order, without the `$ `.
fn preheats_shown(file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut in_text = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_text = !in_text && line == "```text";
            continue;
        }
        if let Some(command) = line.strip_prefix("$ seckill -c campaigns/")
            && in_text
            && command.split_whitespace().nth(1) == Some("preheat")
        {
            found.push(format!("-c campaigns/{command}"));
        }
    }
    found
}

/// `command` (`-c FILE ARGS...`, a `# comment` dropped) as arguments.
fn words(command: &str) -> Vec<String> {
    let command = command.split(" #").next().unwrap();
    command.split_whitespace().map(str::to_string).collect()
}

fn copy_campaigns(to: &Path) {
    std::fs::create_dir_all(to.join("campaigns")).unwrap();
    for entry in std::fs::read_dir("campaigns").unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join("campaigns").join(entry.file_name())).unwrap();
    }
}

#[test]
fn the_standalone_shipped_files_sell_different_item_ids() {
    let mut seen: Vec<(String, String)> = Vec::new();
    for file in STANDALONE {
        let campaign = Campaign::load(Path::new(file)).unwrap();
        for item in &campaign.items {
            if let Some((other, _)) = seen.iter().find(|(_, id)| *id == item.id) {
                panic!("{file} and {other} both sell item {}", item.id);
            }
            seen.push((file.to_string(), item.id.clone()));
        }
    }
}

#[test]
fn every_preheat_the_docs_show_runs_in_order_on_one_redis() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    copy_campaigns(dir.path());
    let mut shown = preheats_shown("README.md");
    shown.extend(preheats_shown("docs/guide.md"));
    // scripts/rehearse-reservations.sh and the guide's step 10 come last.
    shown.push("-c campaigns/moutai-reservations.yaml preheat".to_string());
    for needed in [
        "moutai.yaml",
        "iphone.yaml",
        "moutai-queue.yaml",
        "moutai-tickets.yaml",
    ] {
        assert!(
            shown.iter().any(|c| c.contains(needed)),
            "no preheat of {needed} shown: {shown:?}"
        );
    }
    // The regions campaign's preheat loads both its regions: each gets its
    // own throwaway server, never the ports the shipped file names.
    let regions = [RedisServer::start(), RedisServer::start()];
    for command in &shown {
        let ran = seckill(&[])
            .args(words(command).as_slice())
            .redis(&server)
            .env("SECKILL_REDIS_URL_BJ", &regions[0].url())
            .env("SECKILL_REDIS_URL_SH", &regions[1].url())
            .current_dir(dir.path())
            .runs();
        assert_eq!(
            ran.code(),
            0,
            "`seckill {command}` after the commands before it: {}",
            ran.describe()
        );
    }
    let listed = seckill(&["campaigns"])
        .redis(&server)
        .json()
        .succeeds()
        .json();
    let live: Vec<&str> = listed["live"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["campaign"].as_str().unwrap())
        .collect();
    for id in [
        "iphone-launch",
        "moutai-1111",
        "moutai-pay-1111",
        "moutai-queue-1111",
        "moutai-tickets-1111",
    ] {
        assert!(live.contains(&id), "{id} not live: {listed}");
    }
    // The collision check still stands: a typo'd id of a shipped sale.
    let typo = std::fs::read_to_string("campaigns/moutai.yaml")
        .unwrap()
        .replace("campaign: moutai-1111", "campaign: moutai-111");
    std::fs::write(dir.path().join("campaigns/typo.yaml"), typo).unwrap();
    let stderr = seckill(&["-c", "campaigns/typo.yaml", "preheat"])
        .redis(&server)
        .current_dir(dir.path())
        .fails_with(PREHEAT_REFUSED)
        .stderr();
    assert!(stderr.contains("a typo of that campaign's id"), "{stderr}");
}

/// The `seckill` lines of the guide's "Hot items: buckets" block, in order,
/// on a cluster (its seeds replace the file's 21001–21003 through
/// `SECKILL_REDIS_URL`).
#[test]
fn the_guide_cluster_block_runs_in_its_order() {
    let text = std::fs::read_to_string("docs/guide.md").unwrap();
    let section = &text[text.find("\n### Hot items: buckets\n").expect("heading")..];
    let block = &section[section.find("```sh\n").expect("block") + 6..];
    let block = &block[..block.find("```").expect("block end")];
    let commands: Vec<&str> = block
        .lines()
        .filter_map(|l| l.strip_prefix("seckill "))
        .collect();
    assert!(commands.len() >= 4, "{block}");
    assert!(
        commands.iter().any(|c| c.contains("loadtest")),
        "the block lost its load test: {block}"
    );
    let cluster = RedisCluster::start();
    let dir = tempfile::tempdir().unwrap();
    copy_campaigns(dir.path());
    for command in commands {
        let ran = seckill(&[])
            .args(words(command).as_slice())
            .redis_url(&cluster.urls())
            .current_dir(dir.path())
            .runs();
        assert_eq!(
            ran.code(),
            0,
            "`seckill {command}` after the lines before it: {}",
            ran.describe()
        );
    }
}
