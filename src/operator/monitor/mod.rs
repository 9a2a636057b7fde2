//! Watching a live sale: [`status`] reads each item in one read-only script
//! per slot, [`check`] turns a status into the problems a probe reports,
//! [`metrics`] writes it as Prometheus text, [`service`] serves `/metrics`
//! and `/healthz` (over [`http`]) for the long-running commands,
//! [`watch`] samples for `status --watch`, and [`room`] adds an item's
//! waiting room.

pub(crate) mod check;
pub(crate) mod metrics;
pub(crate) mod room;
pub(crate) mod service;
pub(crate) mod status;
pub(crate) mod watch;
