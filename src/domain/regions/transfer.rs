//! Moving units between two regions (docs/regions.md, "The protocol").
//!
//! 1. **Debit** the source, atomically (`lua/region_debit.lua`): refused
//!    when short; else `stock −= n`, `out:<dest> += n` (grow-only).
//! 2. **Prove it durable**: WAIT, on the connection that debited, for every
//!    replica attached to the source's master. Short → no credit: the units
//!    stay in transit (counted by `reconcile --regions`), and the next
//!    settle tries again. A failover can then lose only a debit nobody
//!    credited: the units come back to the source, never twice.
//! 3. **Credit** the destination with the source's cumulative count V
//!    (`lua/region_credit.lua`): only `V − in:<source>` is added, so a
//!    repeated, duplicated or reordered credit changes nothing.
//!
//! A mover that restarts (a [`transfer`] of 0 units: a settle) never credits a V it did not prove
//! durable itself: it makes one write on the source (a debit of 0, which
//! answers the current V) and WAITs for it before crediting.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::model::keys::ItemKeys;
use crate::redis_client::node::NODE_PLACEHOLDER;
use crate::redis_client::replicas::wait_for_every_replica;
use crate::redis_client::scripts::region_credit::{self, Credit, RegionCredit};
use crate::redis_client::scripts::region_debit::{self, Debit, RegionDebit};
use crate::redis_client::scripts::{CorruptState, ScriptCall};

use super::RegionConn;

/// How one transfer (or settle) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// Debited, proven on every replica, credited (or already credited).
    Credited,
    /// Debited but not credited: a replica did not confirm in time, or the
    /// destination is fenced or unreachable. The units are in transit.
    InTransit,
    /// The source holds fewer units: nothing written.
    Short,
    /// The source is fenced: nothing written.
    SourceFenced,
    /// The item is not preheated in the source: nothing written.
    NotPreheated,
    /// A value in the source's slot is malformed (`why` names the key):
    /// nothing written.
    CorruptState,
}

/// One transfer, as it went.
#[derive(Debug, Clone, Serialize)]
pub struct Transfer {
    pub from: String,
    pub to: String,
    /// Units asked for (0 for a settle).
    pub units: i64,
    pub ending: Ending,
    /// The source's cumulative count to the destination after the debit.
    pub sent_total: i64,
    /// Units the destination added now (0 when it had them already).
    pub credited_now: i64,
    /// `(confirmed, attached)` replicas of the source's master.
    pub replicas: Option<(i64, i64)>,
    /// Why the units stay in transit, when they do.
    pub why: Option<String>,
    /// Debit to credit, wall time.
    pub elapsed_us: u64,
}

/// Move `units` from `from` to `to` (see the module header). `units` 0
/// settles: it credits whatever `from` sent `to` that `to` has not
/// credited, after a probe write on the source (a debit of 0, answering its
/// current count) and WAIT for every replica.
pub fn transfer(
    from: &mut RegionConn,
    to: &mut RegionConn,
    keys: &ItemKeys,
    units: i64,
    wait: Duration,
) -> Result<Transfer> {
    let started = Instant::now();
    let units_text = units.to_string();
    let reply = RegionDebit {
        meta: keys.meta.as_str(),
        stock: keys.stock.as_str(),
        peer: to.name.as_str(),
        units: units_text.as_str(),
        mode: "send",
        node: NODE_PLACEHOLDER,
    }
    .invoke(from.conn()?)
    .with_context(|| format!("debit of {units} units in region {} failed", from.name))?;
    let mut transfer = Transfer {
        from: from.name.clone(),
        to: to.name.clone(),
        units,
        ending: Ending::InTransit,
        sent_total: 0,
        credited_now: 0,
        replicas: None,
        why: None,
        elapsed_us: 0,
    };
    let sent = match region_debit::parse_reply(reply) {
        Ok(Debit::Sent { sent, .. }) => sent,
        Ok(Debit::Short { sent, .. }) => return Ok(ended(transfer, Ending::Short, sent, started)),
        Ok(Debit::Fenced { sent }) => {
            return Ok(ended(transfer, Ending::SourceFenced, sent, started));
        }
        Ok(Debit::NotPreheated) => return Ok(ended(transfer, Ending::NotPreheated, 0, started)),
        // The script refused before its first write: an outcome of its own
        // (exit 17, the key named), not a failure whose effect is unknown.
        Err(error) if error.downcast_ref::<CorruptState>().is_some() => {
            transfer.why = Some(format!("region {}: {error}", from.name));
            return Ok(ended(transfer, Ending::CorruptState, 0, started));
        }
        Err(error) => return Err(error.context(format!("region {}", from.name))),
    };
    transfer.sent_total = sent;
    let (confirmed, attached) = wait_for_every_replica(from.conn()?, &keys.meta, wait)
        .with_context(|| format!("region {}: the debit is in transit", from.name))?;
    transfer.replicas = Some((confirmed, attached));
    if confirmed < attached {
        transfer.why = Some(format!(
            "{confirmed} of {attached} replicas of region {} confirmed the debit within {}: \
             not credited, the units are in transit until a settle proves it",
            from.name,
            humantime::format_duration(wait)
        ));
        return Ok(ended(transfer, Ending::InTransit, sent, started));
    }
    let sent_text = sent.to_string();
    let credit = RegionCredit {
        meta: keys.meta.as_str(),
        stock: keys.stock.as_str(),
        peer: from.name.as_str(),
        sent: sent_text.as_str(),
        node: NODE_PLACEHOLDER,
    }
    .invoke_on(to);
    match credit {
        Ok(Credit::Credited { units, .. }) => {
            transfer.credited_now = units;
            Ok(ended(transfer, Ending::Credited, sent, started))
        }
        Ok(Credit::Stale { .. }) => Ok(ended(transfer, Ending::Credited, sent, started)),
        Ok(Credit::Fenced { .. }) => {
            transfer.why = Some(format!(
                "region {} is fenced: not credited until `seckill reconcile --fence --region {}`",
                to.name, to.name
            ));
            Ok(ended(transfer, Ending::InTransit, sent, started))
        }
        Ok(Credit::NotPreheated) => {
            transfer.why = Some(format!("the item is not preheated in region {}", to.name));
            Ok(ended(transfer, Ending::InTransit, sent, started))
        }
        Err(error) => {
            // The credit may or may not have run: either way the next settle
            // credits exactly the difference.
            transfer.why = Some(format!(
                "the credit in region {} failed ({:#}): in transit until a settle",
                to.name, error
            ));
            Ok(ended(transfer, Ending::InTransit, sent, started))
        }
    }
}

impl RegionCredit<&str> {
    /// The credit on `region`, its reply parsed (no connection: an error).
    fn invoke_on(&self, region: &mut RegionConn) -> Result<Credit> {
        let reply = self.invoke(region.conn()?)?;
        region_credit::parse_reply(reply)
    }
}

fn ended(mut transfer: Transfer, ending: Ending, sent: i64, started: Instant) -> Transfer {
    transfer.ending = ending;
    transfer.sent_total = sent;
    transfer.elapsed_us = started.elapsed().as_micros() as u64;
    transfer
}
