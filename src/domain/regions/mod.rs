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
