//! What one invocation of `seckill` gets from below the command line.

pub mod context;
pub mod help;
pub mod report;
