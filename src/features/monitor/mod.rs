//! Watching a live sale: [`status`] reads each item in one read-only script
//! per slot, [`metrics`] writes it (and a consume process's counters) as
//! Prometheus text and serves `/metrics`; [`room`] adds an item's waiting room.

pub(crate) mod metrics;
pub(crate) mod room;
pub(crate) mod status;
