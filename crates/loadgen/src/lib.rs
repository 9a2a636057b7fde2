//! `seckill-loadgen`: the load-test engine behind `seckill loadtest`. It
//! drives a server as hard as it goes (closed loop) or on a schedule (open
//! loop) and measures what came back; it knows nothing of sales. What a
//! request says, how a reply counts and what a run proves are the caller's
//! scenario (`seckill`'s `operator::loadtest`); connecting (AUTH, TLS,
//! Cluster routing) is the caller's too: it hands the engine connected
//! sockets or blocking links ([`engine::Transport`]). Cargo keeps the
//! boundary: `seckill` depends on this crate, so this crate cannot import it.
//!
//! - [`scenario`]: what a scenario gives the engine — its wire protocol, one
//!   state machine per connection ([`scenario::Conversation`]) and what a
//!   worker counts ([`scenario::Counts`]).
//! - [`engine`]: runs a scenario: worker threads, the start line, progress,
//!   the merged [`measure::Tally`]. Every scenario runs on the one worker
//!   loop (`worker`): a `mio` event loop over non-blocking sockets, or the
//!   same loop over one blocking link per thread.
//! - [`pace`]: when each attempt is due (closed or open loop).
//! - [`histogram`]: the one histogram type every scenario records into, and
//!   its [`histogram::Percentiles`]; [`measure`]: a worker's tally.
//! - [`template`]: a request packed once, its numbers overwritten in place;
//!   [`resp`] and [`http`]: the two wire protocols (packing, reply framing).
//! - [`export`]: results other tools read (redis-benchmark's CSV columns,
//!   HdrHistogram's `.hgrm`).
//!
//! May import: nothing of `seckill` (Cargo enforces it).

pub mod engine;
pub mod export;
pub mod histogram;
pub mod http;
pub mod measure;
pub mod pace;
pub mod resp;
pub mod scenario;
pub mod template;
mod wire;
mod worker;

pub use engine::{BlockingLink, MAX_PEERS, Measured, Observer, Plan, Transport, run};
pub use histogram::{Histogram, Percentiles};
pub use measure::Tally;
pub use pace::{Attempt, Pace, Source};
pub use scenario::{Conversation, Counts, Next, Protocol, Scenario};
pub use template::{Field, Template};
