//! The one integration-test crate: every test runs the real binary or library
//! against real servers that `support` starts (one link instead of one per file).

mod support;

mod bucket_failures;
mod buckets;
mod buy;
mod campaign_files;
mod campaign_fuzz;
mod cli;
mod cluster;
mod completions;
mod corrupt_state;
mod data_loss;
mod errors_say_what_to_do;
mod exit_codes;
mod failover;
mod go_no_go;
mod help;
mod hostile_input;
mod kill_switch_audit;
mod layers;
mod loadtest;
mod loadtest_engine;
mod man;
mod man_out;
mod nothing_misleads;
mod orders_cluster;
mod orders_faults;
mod orders_open;
mod orders_pipeline;
mod outcomes;
mod output;
mod quiet;
mod readme_session;
mod reconcile_content;
mod refused_orders;
mod replicas;
mod replicas_cluster;
mod replicas_loadtest;
mod reservations;
mod security;
mod serve;
mod status;
mod tls_auth;
mod transient_store_errors;
mod waiting_room;
