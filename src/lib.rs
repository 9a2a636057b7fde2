//! `seckill`: run a flash sale on Redis without ever selling one item too many.
//!
//! The binary (`main.rs`) is a thin shell around this library. The library
//! is built in layers, each a folder, each importing only from the layers
//! below it (`tests/it/layers.rs` fails naming the file and the import when
//! one reaches up, or when files import each other in a circle):
//!
//! ```text
//! cli          the command line: the clap parser and the dispatch
//!  └ cmd       one file per subcommand: flags in, a report out
//!     └ invocation   what every command gets: its context, the one output path, help
//!        └ features  above the domain: reconcile, the load test, monitoring, ACLs
//!           └ domain the sale: items (plain or bucketed), slots, buckets,
//!              │     orders and their stores, reservations, recovery
//!              └ redis_client  connections, the typed Lua script calls,
//!                 │            what a failure means, WAIT
//!                 └ model      campaign, keys, layout, exit codes, errors
//!                    └ util    output, log, retry, text, identity
//! ```

pub mod cli;
pub mod cmd;
pub mod domain;
pub mod features;
pub mod invocation;
pub mod model;
pub mod operator;
pub mod redis_client;
pub mod util;
