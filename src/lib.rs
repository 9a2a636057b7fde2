//! `seckill`: run a flash sale on Redis without ever selling one item too many.
//!
//! The binary (`main.rs`) is a thin shell around this library, which is
//! built in layers, each a folder importing only what its `//! May import:`
//! line says. The map below is quoted from `tests/it/layers/map.rs`, which
//! checks it against every import of `src/` (ARCHITECTURE.md walks it):
//!
//! ```text
//! cli          the command line: clap parser, dispatch         may import: cmd, http, invocation, operator, domain, redis_client, model, util
//! cmd          the CLI door: one file per subcommand           may import: http, invocation, operator, domain, redis_client, model, util
//! http         the HTTP door (`serve`) and the probe server    may import: operator, domain, redis_client, model, util
//!              (/healthz, /metrics) the services use
//! invocation   context, report (one output path), help         may import: domain, redis_client, model, util
//! operator     operator tools: doctor, acl, monitor,           may import: domain, redis_client, model, util
//!              loadtest (the sale's scenarios over the engine crate)
//! domain       the sale (inner order below)                    may import: redis_client, model, util
//! redis_client connections, typed Lua calls, failures, WAIT    may import: model, util
//! model        campaign, keys, layout, exit codes, errors      may import: util
//! util         output, log, retry, text, identity              may import: nothing of the crate
//!
//! domain, inner order, bottom → top (a domain module imports only modules below it):
//! kill_switch, slot, buckets, seats, waiting_room, item, regions, registry, orders, reservations, lookup, recovery, reconcile, preheat_plan, operation
//! ```

pub mod cli;
pub mod cmd;
pub mod domain;
pub mod http;
pub mod invocation;
pub mod model;
pub mod operator;
pub mod redis_client;
pub mod util;
