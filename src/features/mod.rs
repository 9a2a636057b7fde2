//! What is built on the domain: the launch-day [`doctor`], the nightly
//! [`reconcile`] proof, the [`loadtest`] engine and its scenarios,
//! [`monitor`] (a live sale's status, its probes and its Prometheus
//! metrics), [`acl`] (least-privilege Redis users per campaign, proven with
//! `ACL DRYRUN`) and [`serve`] (the shop's HTTP door).
//!
//! May import: domain, redis_client, model, util; features do not import
//! each other.

pub(crate) mod acl;
pub(crate) mod doctor;
pub(crate) mod monitor;
pub(crate) mod reconcile;
pub(crate) mod serve;
