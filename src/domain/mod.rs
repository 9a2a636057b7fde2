//! The sale's domain.

pub mod buckets;
pub mod item;
pub mod kill_switch;
pub mod orders;
pub mod recovery;
pub mod reservations;
pub mod slot;
