//! The model.

pub mod campaign;
pub mod error;
pub mod exit_codes;
pub mod keys;
pub mod layout;
