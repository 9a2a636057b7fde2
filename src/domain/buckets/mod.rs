//! Buckets: one item's stock split over N hash tags, so a hot item's buys run
//! on several Redis Cluster masters instead of one (`docs/buckets.md` has the
//! design and why each guarantee holds).
//!
//! The layout itself (tags, home bucket, shares) is the model's
//! (`model::layout`); this folder holds what runs on it: the buy sweep, the
//! transfer scripts' calls, the transfer logs read as one ([`ledger`]), the
//! item-level state over every bucket, and the rebalancer. Only the item
//! layer (`domain::item`, through its shape) calls it.
//!
//! May import: domain::slot, redis_client, model.

pub mod buy;
pub(crate) mod ledger;
pub(crate) mod rebalance;
pub mod scripts;
pub(crate) mod state;
