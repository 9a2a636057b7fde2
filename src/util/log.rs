//! Log lines of the long-running commands on stderr, timestamped.

/// A log line on stderr: `<UTC time> seckill <command>: <message>`.
pub(crate) fn line(command: &str, message: impl std::fmt::Display) {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    crate::util::output::say(format!("{now} seckill {command}: {message}"));
}
