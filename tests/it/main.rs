//! The one integration-test crate: every test runs the real binary or library
//! against real servers that `support` starts (one link instead of one per file).

mod support;

mod buckets;
mod buy;
mod campaign_files;
mod cli;
mod cluster;
mod completions;
mod exit_codes;
mod loadtest;
mod orders_cluster;
mod orders_faults;
mod orders_open;
mod orders_pipeline;
mod output;
mod reservations;
mod tls_auth;
