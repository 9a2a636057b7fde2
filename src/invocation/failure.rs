//! How the command line says an operation's failure (`domain::operation`):
//! a wrong request is a usage error naming the flag (exit 2); a reply lost
//! after a buy was sent is "outcome unknown" with the request id to retry
//! with (exit 19); anything else is a runtime error (exit 1) saying whether
//! it ran and whether trying again is safe.

use crate::domain::operation::{Failure, FailureKind, Invalid, Retry};
use crate::model::error::{OutcomeUnknown, WrongRegion, usage};

/// A field as its flag: `request_id` → `--request-id`.
pub(crate) fn flag(field: &str) -> String {
    format!("--{}", field.replace('_', "-"))
}

/// `failure` as the error the command reports; `what` names the request
/// ("the attempt", "the payment").
pub(crate) fn say(failure: Failure, what: &str) -> anyhow::Error {
    let Failure {
        kind,
        at,
        cause,
        retry,
    } = failure;
    let again = match &retry {
        Retry::SameRequestId(id) => format!("retry with --request-id {id}, never a new one"),
        Retry::Repeat => "running it again is safe".to_string(),
    };
    match kind {
        FailureKind::Invalid(invalid @ Invalid::WrongRegion(_)) => {
            anyhow::Error::new(WrongRegion(invalid.say(flag)))
        }
        FailureKind::Invalid(invalid) => usage(invalid.say(flag)),
        FailureKind::NotSent => cause,
        FailureKind::NotExecuted(code) => cause.context(format!(
            "Redis at {at} refused {what}, it was not executed ({code}); nothing changed, a new attempt is safe"
        )),
        FailureKind::Unknown => {
            let message = format!(
                "outcome unknown: {what} was sent to Redis at {at} but its reply was lost ({}); {again}",
                crate::util::error_text::render(&cause)
            );
            match retry {
                Retry::SameRequestId(_) => anyhow::Error::new(OutcomeUnknown(message)),
                Retry::Repeat => cause.context(message),
            }
        }
        FailureKind::Failed => {
            cause.context(format!("Redis at {at} reported an error running {what}; {again}"))
        }
    }
}
