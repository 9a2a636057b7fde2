//! One sale over independent Redis deployments (docs/regions.md): each
//! region's slot of an item holds its own stock and grow-only counters of
//! what it sent to and credited from each peer; [`transfer`] moves units
//! between two regions (debit, WAIT on every replica of the source, credit
//! idempotently), [`books`] reads every region and proves the invariants,
//! [`scheduler`] decides which region gives to which (scheme C of the
//! source chapter).
//!
//! Nothing here opens a connection: the caller hands one [`RegionConn`]
//! per region.
//!
//! May import: redis_client, model, util.

pub mod books;
pub mod scheduler;
pub mod transfer;

use anyhow::{Context, Result};

use crate::model::campaign::Campaign;
use crate::model::keys::ItemKeys;
use crate::redis_client::conn::Conn;
use crate::redis_client::node::NODE_PLACEHOLDER;
use crate::redis_client::scripts::region_state::{self, RegionState, SlotLedger};
use crate::redis_client::scripts::{CorruptState, ScriptCall};

/// One region's connection, named; `None` while it cannot be reached
/// (`down` says why): the other regions go on without it.
pub struct RegionConn {
    pub name: String,
    pub conn: Option<Conn>,
    pub down: Option<String>,
}

impl RegionConn {
    /// The connection, or why there is none.
    pub fn conn(&mut self) -> Result<&mut Conn> {
        let name = &self.name;
        let down = &self.down;
        self.conn.as_mut().ok_or_else(|| {
            anyhow::anyhow!(
                "region {name} is not connected: {}",
                down.as_deref().unwrap_or("no connection yet")
            )
        })
    }
}

/// The keys of `item` in every region (the same names: each region is its
/// own Redis).
pub fn item_keys(campaign: &Campaign, item: &str) -> ItemKeys {
    ItemKeys::live(&campaign.id, item)
}

/// One region's slot of `keys`' item (`lua/region_state.lua`).
pub fn read_slot(conn: &mut Conn, keys: &ItemKeys) -> Result<SlotLedger> {
    let reply = RegionState {
        meta: keys.meta.as_str(),
        stock: keys.stock.as_str(),
        node: NODE_PLACEHOLDER,
    }
    .invoke(conn)
    .map_err(|error| match (error.code(), error.detail()) {
        // The script's own refusal names the key and the value: said once,
        // not wrapped in the client's rendering of a server error (which
        // repeats it).
        (Some("CORRUPT"), Some(detail)) => anyhow::Error::new(CorruptState(detail.to_string())),
        _ => anyhow::Error::new(error),
    })
    .with_context(|| format!("cannot read {}", keys.meta))?;
    region_state::parse_reply(reply)
}

/// Keep the "sold out everywhere" mark of `keys`' item (`lua/region_mark.lua`)
/// true to `books`: marked in every region once each is preheated, at 0,
/// with nothing in transit and every region read; cleared wherever it is
/// set otherwise. `serve` answers `sold_out` from memory only under the mark
/// (a regional zero is not a sell-out). Returns the regions whose mark
/// changed, with the mark now.
pub fn keep_sell_out_mark(
    keys: &ItemKeys,
    books: &books::ItemBooks,
    regions: &mut [RegionConn],
) -> Result<Vec<(String, bool)>> {
    use crate::redis_client::scripts::region_mark::{self, Marked, RegionMark};
    let everywhere = books.breaches.is_empty()
        && books.in_transit.is_empty()
        && books
            .regions
            .iter()
            .all(|r| r.slot.as_ref().is_some_and(|s| s.preheated && s.stock == 0));
    let mut changed = Vec::new();
    for (region, read) in regions.iter_mut().zip(&books.regions) {
        let Some(slot) = &read.slot else { continue };
        if slot.sold_out_everywhere == everywhere {
            continue;
        }
        let reply = RegionMark {
            meta: keys.meta.as_str(),
            stock: keys.stock.as_str(),
            mark: if everywhere { "1" } else { "0" },
        }
        .invoke(region.conn()?)
        .with_context(|| format!("cannot mark region {}", region.name))?;
        if matches!(
            region_mark::parse_reply(reply)?,
            Marked::Marked | Marked::Cleared
        ) {
            changed.push((region.name.clone(), everywhere));
        }
    }
    Ok(changed)
}
