//! Why an operation gave no answer, typed so that each door says it its own
//! way (an exit code and a sentence naming flags; an HTTP status and JSON
//! naming fields) and neither has to guess from an error's text.
//!
//! What matters to the one who asked is whether the request ran: refused as
//! wrong before anything was sent, never sent, refused by Redis before
//! running, unknown (sent, reply lost), or run and failed. The first three
//! are safe to send again as new requests; the last two only the way
//! [`Retry`] says.

use crate::redis_client::failure::{self as redis_failure, Failure as RedisFailure};
use crate::redis_client::multiplexed::NotSent;

/// Longest id a shopper or the shop sends (user, request id).
pub const MAX_ID_BYTES: usize = 128;

/// A request that was wrong: nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// A field breaks its rule: `field` is its name (`user`, `request_id`,
    /// `qty`), `value` what was sent when worth showing, `problem` the rule.
    Field {
        field: &'static str,
        value: Option<String>,
        problem: String,
    },
    /// The campaign has no such item (the message lists those it has).
    UnknownItem(String),
    /// The item has no waiting room (the message says how to buy it).
    NoWaitingRoom(String),
    /// A campaign with regions: the user buys only at home, not here
    /// (docs/regions.md, "Home region").
    WrongRegion(Box<Misdirected>),
}

/// A request sent to a region that is not the user's home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misdirected {
    pub user: String,
    pub home: String,
    pub here: String,
}

impl Invalid {
    /// The sentence, with the field spelled by `spell` (`--user` or `user`).
    pub fn say(&self, spell: impl Fn(&str) -> String) -> String {
        match self {
            Invalid::Field {
                field,
                value,
                problem,
            } => match value {
                Some(value) => format!("{} {value:?} {problem}", spell(field)),
                None => format!("{} {problem}", spell(field)),
            },
            Invalid::UnknownItem(message) | Invalid::NoWaitingRoom(message) => message.clone(),
            Invalid::WrongRegion(misdirected) => {
                let Misdirected { user, home, here } = misdirected.as_ref();
                format!(
                    "wrong_region: user {user:?} buys in region {home}, not {here} (the home \
                 region of every user is fixed: `seckill regions home USER`); nothing was sent"
                )
            }
        }
    }
}

/// What happened to a request that got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureKind {
    /// The request was wrong; nothing was sent.
    Invalid(Invalid),
    /// No connection could be made: nothing reached Redis.
    NotSent,
    /// Redis refused it before running anything (the reason, e.g. `NOPERM`).
    NotExecuted(String),
    /// Sent, but the reply was lost: it may or may not have run.
    Unknown,
    /// Redis ran it and reported an error.
    Failed,
}

/// How the caller may send a request again after a failure it cannot rule out ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retry {
    /// Only with this request id, never a new one (a buy).
    SameRequestId(String),
    /// As it was: running it twice changes nothing more (pay, cancel, a join, a read).
    Repeat,
}

/// An operation's failure: what happened, where, why, and how to retry.
#[derive(Debug)]
pub struct Failure {
    pub kind: FailureKind,
    /// The Redis it was sent to (empty for an invalid request).
    pub at: String,
    /// The error and its causes, for the message.
    pub cause: anyhow::Error,
    pub retry: Retry,
}

impl Failure {
    /// A request refused as wrong.
    pub fn invalid(invalid: Invalid) -> Failure {
        let text = invalid.say(str::to_string);
        Failure {
            kind: FailureKind::Invalid(invalid),
            at: String::new(),
            cause: anyhow::anyhow!(text),
            retry: Retry::Repeat,
        }
    }

    /// What `error`, met while running a request on Redis at `at`, means for
    /// the one who sent it.
    pub fn of(error: anyhow::Error, at: &str, retry: Retry) -> Failure {
        let kind =
            if error.downcast_ref::<NotSent>().is_some() || redis_failure::was_not_sent(&error) {
                FailureKind::NotSent
            } else {
                match redis_failure::find(&error).map(redis_failure::classify) {
                    Some(RedisFailure::NotExecuted(code)) => FailureKind::NotExecuted(code),
                    Some(RedisFailure::Failed) => FailureKind::Failed,
                    Some(RedisFailure::Unknown) => FailureKind::Unknown,
                    // Not Redis's own error: a reply the caller could not read,
                    // a worker that stopped. Whether it ran is not known.
                    None => FailureKind::Unknown,
                }
            };
        Failure {
            kind,
            at: at.to_string(),
            cause: error,
            retry,
        }
    }

    /// Whether a new request is safe: nothing ran.
    pub fn nothing_ran(&self) -> bool {
        matches!(
            self.kind,
            FailureKind::Invalid(_) | FailureKind::NotSent | FailureKind::NotExecuted(_)
        )
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.cause)
    }
}

/// An id a shopper or the shop sends (`field`): 1..128 bytes of UTF-8, no
/// control characters; `show` puts the value in the message.
pub fn check_id(field: &'static str, id: &str, show: bool) -> Result<(), Failure> {
    if id.is_empty() || id.len() > MAX_ID_BYTES || id.chars().any(char::is_control) {
        return Err(Failure::invalid(Invalid::Field {
            field,
            value: show.then(|| id.to_string()),
            problem: format!(
                "must be 1..{MAX_ID_BYTES} bytes (UTF-8) without control characters, got {} bytes",
                id.len()
            ),
        }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked_and_named_by_each_door() {
        assert!(check_id("user", "u", true).is_ok());
        assert!(check_id("user", &"x".repeat(129), true).is_err());
        assert!(check_id("user", "a\u{7}b", true).is_err());
        let Err(failure) = check_id("request_id", "", false) else {
            panic!("an empty id passed");
        };
        let FailureKind::Invalid(invalid) = &failure.kind else {
            panic!("{failure:?}");
        };
        let flag = invalid.say(|f| format!("--{}", f.replace('_', "-")));
        assert!(
            flag.starts_with("--request-id must be 1..128 bytes"),
            "{flag}"
        );
        assert!(failure.nothing_ran());
    }

    #[test]
    fn io_errors_are_unknown_and_refusals_not_executed() {
        let io = redis::RedisError::from(std::io::Error::new(std::io::ErrorKind::TimedOut, "t"));
        let failure = Failure::of(anyhow::Error::new(io), "h:1", Retry::Repeat);
        assert_eq!(failure.kind, FailureKind::Unknown);
        assert!(!failure.nothing_ran());
        let refused = redis::RedisError::from((
            redis::ErrorKind::Server(redis::ServerErrorKind::NoPerm),
            "no permissions",
        ));
        let failure = Failure::of(anyhow::Error::new(refused), "h:1", Retry::Repeat);
        assert!(
            matches!(&failure.kind, FailureKind::NotExecuted(code) if code == "NOPERM"),
            "{failure:?}"
        );
        let unsent = anyhow::Error::new(NotSent).context("cannot connect");
        assert_eq!(
            Failure::of(unsent, "h:1", Retry::Repeat).kind,
            FailureKind::NotSent
        );
    }
}
