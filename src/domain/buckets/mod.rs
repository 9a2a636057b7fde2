//! Buckets: one item's stock split over N hash tags, so a hot item's buys run
//! on several Redis Cluster masters instead of one (`docs/buckets.md` has the
//! design and why each guarantee holds).
//!
//! The layout itself (tags, home bucket, shares) is the model's
//! (`model::layout`); this folder holds what runs on it: the buy sweep, the
//! transfer scripts' calls, the item-level state over every bucket, the
//! rebalancer, and each bucket's copy of the waiting room's admissions.
//! The item layer (`domain::item`) calls it; the waiting room's fan-out
//! (`domain::waiting_room::admit`) writes the admissions.

pub(crate) mod admissions;
pub mod buy;
pub(crate) mod rebalance;
pub mod scripts;
pub(crate) mod state;
