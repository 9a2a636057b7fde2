//! One variant, start to finish: reset the namespace and set the stock up
//! through the domain, drive it on the engine, read the books back.
//!
//! Within loadtest it uses: connect, conversation, namespace, report.

use anyhow::{Context, Result};
use indicatif::ProgressBar;
use seckill_loadgen::Observer;

use super::connect::{self, CommandCounts, master_commands};
use super::conversation::VariantScenario;
use super::namespace;
use super::report::{self, Books, MasterShare};
use super::{Plan, Variant, VariantRun};
use crate::domain::slot::{self, PreheatMode};
use crate::redis_client::conn::{Conn, RedisTarget};

/// What the control connection sees of a run: the cluster's command counts
/// when the clock starts, and the progress bar.
struct Watch<'a> {
    control: &'a mut Conn,
    progress: &'a ProgressBar,
    commands_before: Option<Result<Option<CommandCounts>>>,
}

impl Observer for Watch<'_> {
    fn started(&mut self) {
        // Read after the workers connected: connecting costs a cluster node commands too.
        self.commands_before = Some(master_commands(self.control));
    }

    fn progress(&mut self, finished: u64) {
        self.progress.set_position(finished);
    }
}

/// Reset the namespace, set it up for `variant`, run it and read the result.
pub(crate) fn run_variant(
    target: &RedisTarget,
    plan: &Plan,
    variant: Variant,
    progress: &ProgressBar,
) -> Result<VariantRun> {
    let mut control = target.connect()?;
    namespace::reset(&mut control, &plan.keys, &plan.run_id)?;
    if variant == Variant::Full {
        let item = plan.campaign.item(&plan.item_id)?;
        slot::preheat_item(
            &mut control,
            &plan.keys.item,
            &plan.campaign,
            item,
            PreheatMode::Force,
            false,
        )?;
    } else {
        let () = redis::cmd("SET")
            .arg(&plan.keys.item.stock)
            .arg(plan.settings.stock)
            .query(&mut control)
            .with_context(|| format!("cannot set {}", plan.keys.item.stock))?;
    }
    let settings = &plan.settings;
    let engine = seckill_loadgen::Plan {
        pace: settings.pace,
        requests: settings.requests,
        connections: settings.connections,
        threads: settings.threads,
        stall_limit: target.response_timeout(),
        peer: "Redis".to_string(),
    };
    let scenario = VariantScenario { plan, variant };
    let mut watch = Watch {
        control: &mut control,
        progress,
        commands_before: None,
    };
    let measured = connect::with_transport(target, |transport| {
        seckill_loadgen::run(&scenario, &engine, transport, &mut watch)
    })?;
    let commands_before = watch.commands_before.transpose()?.flatten();
    let commands_after = master_commands(&mut control)?;
    let after = slot::item_state(&mut control, &plan.keys.item)?;
    let books = Books {
        final_stock: after.stock.unwrap_or(0),
        stream_len: after.stream_len,
    };
    let mut report = report::build(variant, plan, &measured, books);
    report.masters = shares(commands_before, commands_after);
    Ok(VariantRun {
        report,
        corrected: measured.tally.corrected,
        service: measured.tally.service,
    })
}

/// Each master's part of the commands processed between two readings.
fn shares(before: Option<CommandCounts>, after: Option<CommandCounts>) -> Option<Vec<MasterShare>> {
    let (before, after) = (before?, after?);
    let deltas: Vec<(String, u64)> = after
        .into_iter()
        .map(|(node, count)| {
            let earlier = before.iter().find(|(n, _)| *n == node).map_or(0, |b| b.1);
            (node, count.saturating_sub(earlier))
        })
        .collect();
    let total: u64 = deltas.iter().map(|d| d.1).sum();
    Some(
        deltas
            .into_iter()
            .map(|(node, commands)| MasterShare {
                node,
                commands,
                share: commands as f64 / total.max(1) as f64,
            })
            .collect(),
    )
}
