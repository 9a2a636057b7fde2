//! How seckill talks to Redis.

pub mod conn;
pub mod failure;
pub mod replicas;
pub mod scripts;
