//! The transfer side of a bucketed item's reconcile (`docs/buckets.md`,
//! "reconcile"): a debit (`xfer_out`) whose id is in no `xfer_in` of its
//! destination is in transit; a credit without its debit is drift (units
//! from nowhere), and so is a credit whose units or source disagree with its
//! debit. Slots are read one after another, so the transfer counts are read
//! again at the end and the whole reading repeated when a transfer happened
//! meanwhile. An item whose stock never moves between slots (a plain item)
//! reads its one snapshot and no log.

use serde::Serialize;

use super::Named;
use crate::domain::item::{Reading, Transfer};

/// The transfer side of a bucketed item's reconcile.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct TransferReport {
    pub(crate) buckets: u32,
    /// Transfers ever made (debits logged).
    pub(crate) transfers: u64,
    /// Units debited and not (yet) credited.
    pub(crate) in_transit_units: i64,
    /// Their transfer ids.
    pub(crate) in_transit: Named,
    /// Credits with no matching debit (units from nowhere): drift.
    pub(crate) unmatched_credits: Named,
    /// Transfers `--repair` settled (credited now, or only acked).
    pub(crate) settled: u64,
    pub(crate) per_bucket: Vec<BucketLine>,
}

/// One bucket's numbers.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct BucketLine {
    pub(crate) bucket: u32,
    pub(crate) initial_stock: i64,
    pub(crate) left: i64,
    pub(crate) stream_entries: u64,
    pub(crate) units_out: i64,
    pub(crate) units_in: i64,
}

/// Compare the debits and credits of a reading: what is in transit, what
/// was credited without its debit.
pub(crate) fn check(reading: &Reading, transfers: &mut TransferReport) {
    transfers.transfers = reading.debits.len() as u64;
    let mut in_transit: Vec<&Transfer> = reading
        .debits
        .values()
        .filter(|t| !reading.credits.contains_key(&t.id))
        .collect();
    in_transit.sort_by(|a, b| a.id.cmp(&b.id));
    for t in in_transit {
        transfers.in_transit_units += t.units;
        transfers.in_transit.push(format!(
            "{} ({} unit(s), bucket {} → {})",
            t.id, t.units, t.source, t.dest
        ));
    }
    let mut unmatched: Vec<&Transfer> = reading
        .credits
        .values()
        .filter(|c| reading.debits.get(&c.id) != Some(*c))
        .collect();
    unmatched.sort_by(|a, b| a.id.cmp(&b.id));
    for c in unmatched {
        transfers.unmatched_credits.push(format!(
            "{} ({} unit(s) credited to bucket {} from {})",
            c.id, c.units, c.dest, c.source
        ));
    }
}
