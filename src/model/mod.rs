//! The vocabulary everything else speaks: the [`campaign`] file (its
//! [`fields`]: places and value syntax), the Redis
//! [`keys`] of an item and the [`layout`] of a bucketed one, the [`limits`] above the item, an item's [`waiting_room`], the
//! [`regions`] of a sale over several Redis deployments, the
//! [`seats`] of a seat item, the
//! [`exit_codes`] and the [`error`] kinds that decide them.
//!
//! May import: util.

pub mod campaign;
pub mod error;
pub mod exit_codes;
pub mod fields;
pub mod keys;
pub mod layout;
pub mod limits;
pub mod regions;
pub mod role;
pub mod seats;
pub mod waiting_room;
