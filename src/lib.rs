//! `seckill`: run a flash sale on Redis without ever selling one item too many.

pub mod cli;
pub mod cmd;
pub mod domain;
pub mod features;
pub mod invocation;
pub mod model;
pub mod redis_client;
pub mod util;
