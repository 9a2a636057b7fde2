//! The operator's tools above the sale: the launch-day [`doctor`], the
//! least-privilege roles of [`acl`] (proven with `ACL DRYRUN`), [`monitor`]
//! (a live sale's status, its checks and its Prometheus text), and
//! [`loadtest`] (the sale's load-test scenarios over the engine crate
//! `seckill-loadgen`), and [`credential`] (a job's credential proven on
//! every node before the sale: `serve --check-credential`, `buy --dry-run`).
//!
//! May import: domain, redis_client, model, util.

pub(crate) mod acl;
pub(crate) mod credential;
pub(crate) mod doctor;
pub(crate) mod loadtest;
pub(crate) mod monitor;
