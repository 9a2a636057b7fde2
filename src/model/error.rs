//! Error kinds that decide the exit code.
//!
//! Everything is an `anyhow::Error` with context; the only distinction `main`
//! needs is "the user asked for something wrong" (exit 2) versus "something
//! failed at run time" (exit 1). A [`UsageError`] anywhere in the chain means 2.

use std::fmt;

/// A mistake in the command line or the campaign file: exit code 2.
#[derive(Debug)]
pub(crate) struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A request was sent and its reply lost: it may or may not have run.
/// Exit code [`crate::model::exit_codes::OUTCOME_UNKNOWN`].
#[derive(Debug)]
pub(crate) struct OutcomeUnknown(pub String);

impl fmt::Display for OutcomeUnknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OutcomeUnknown {}

/// `preheat` refused to write an item because loading it would sell units
/// again (sales in the order database, a Redis that persists nothing under
/// `--require-durable`). Exit code [`crate::model::exit_codes::PREHEAT_REFUSED`],
/// distinct from a Redis that cannot be reached.
#[derive(Debug)]
pub(crate) struct PreheatRefused(pub String);

impl fmt::Display for PreheatRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PreheatRefused {}

/// A buy sent to a region that is not the user's home (docs/regions.md).
/// Exit code [`crate::model::exit_codes::WRONG_REGION`].
#[derive(Debug)]
pub(crate) struct WrongRegion(pub String);

impl fmt::Display for WrongRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WrongRegion {}

/// Shorthand: `return Err(preheat_refused(format!(..)))`.
pub(crate) fn preheat_refused(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(PreheatRefused(message.into()))
}

/// Shorthand: `return Err(usage(format!(..)))`.
pub(crate) fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

/// The exit code an error maps to.
pub fn exit_code_for(error: &anyhow::Error) -> i32 {
    if error
        .chain()
        .any(|cause| cause.downcast_ref::<UsageError>().is_some())
    {
        crate::model::exit_codes::USAGE_ERROR
    } else if error
        .chain()
        .any(|cause| cause.downcast_ref::<OutcomeUnknown>().is_some())
    {
        crate::model::exit_codes::OUTCOME_UNKNOWN
    } else if error
        .chain()
        .any(|cause| cause.downcast_ref::<WrongRegion>().is_some())
    {
        crate::model::exit_codes::WRONG_REGION
    } else if error
        .chain()
        .any(|cause| cause.downcast_ref::<PreheatRefused>().is_some())
    {
        crate::model::exit_codes::PREHEAT_REFUSED
    } else {
        crate::model::exit_codes::RUNTIME_ERROR
    }
}
