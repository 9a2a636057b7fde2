//! Progress of long work, for people at a terminal: a bar with counts, rate
//! and ETA (or a spinner when the amount is unknown), drawn on stderr only
//! when stderr is a terminal and `-q` is off — nothing when piped, so logs
//! and cron mail stay clean. Dropping it clears the bar, so an error, a
//! Ctrl-C or an early return never leaves half a bar on the screen.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};

/// A bar (or spinner) on stderr, or nothing.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
}

/// How often the bar redraws itself even when nothing moved (ETA, spinner).
const TICK: Duration = Duration::from_millis(200);

impl Progress {
    /// Whether a bar would be drawn: stderr is a terminal and `-q` is off.
    pub(crate) fn wanted() -> bool {
        std::io::stderr().is_terminal() && !crate::util::output::quiet()
    }

    /// A bar of `total` units labelled `what` (e.g. "orders stored").
    pub(crate) fn bar(total: u64, what: &str) -> Progress {
        Progress::drawn(
            ProgressBar::new(total),
            what,
            "{msg:.bold} [{bar:30}] {human_pos}/{human_len} ({percent}%) {per_sec} ETA {eta}",
        )
    }

    /// A spinner with a message, for work of unknown size.
    pub(crate) fn spinner(what: &str) -> Progress {
        Progress::drawn(ProgressBar::new_spinner(), what, "{spinner} {msg}")
    }

    fn drawn(bar: ProgressBar, what: &str, template: &str) -> Progress {
        if !Progress::wanted() {
            return Progress { bar: None };
        }
        bar.set_draw_target(ProgressDrawTarget::term_like_with_hz(Box::new(Stderr), 20));
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(what.to_string());
        bar.enable_steady_tick(TICK);
        Progress { bar: Some(bar) }
    }

    /// True when something is drawn.
    pub(crate) fn shown(&self) -> bool {
        self.bar.is_some()
    }

    /// `done` units so far, of `total` (the total may grow as work arrives).
    pub(crate) fn set(&self, done: u64, total: u64) {
        if let Some(bar) = &self.bar {
            bar.set_length(total.max(done));
            bar.set_position(done);
        }
    }

    /// `more` units of work found (the total grows, e.g. the next item's entries).
    pub(crate) fn grow(&self, more: u64) {
        if let Some(bar) = &self.bar {
            bar.inc_length(more);
        }
    }

    /// `units` more done.
    pub(crate) fn advance(&self, units: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(units);
        }
    }

    /// Replace the message (a spinner's text, or a bar's label).
    pub(crate) fn message(&self, text: String) {
        if let Some(bar) = &self.bar {
            bar.set_message(text);
        }
    }

    /// Run `print` (a log line) with the bar lifted off the screen.
    pub(crate) fn above(&self, print: impl FnOnce()) {
        match &self.bar {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
    }
}

/// Stderr as indicatif draws on it, three columns narrower than the
/// terminal: indicatif pads the bar's line to the full width, so the `^C` a
/// terminal echoes on Ctrl-C would wrap to a new line, and clearing the bar
/// would then clear that line and leave the bar standing above it.
#[derive(Debug)]
struct Stderr;

impl Stderr {
    fn write(text: &str) -> std::io::Result<()> {
        std::io::stderr().lock().write_all(text.as_bytes())
    }

    /// Move the cursor `n` places (`direction`: ANSI `A` up, `B` down, `C` right, `D` left).
    fn cursor(n: usize, direction: char) -> std::io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        Stderr::write(&format!("\x1b[{n}{direction}"))
    }
}

impl TermLike for Stderr {
    fn width(&self) -> u16 {
        crate::util::output::stderr_width()
            .unwrap_or(80)
            .saturating_sub(3)
            .max(20)
    }

    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        Stderr::cursor(n, 'A')
    }

    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        Stderr::cursor(n, 'B')
    }

    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        Stderr::cursor(n, 'C')
    }

    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        Stderr::cursor(n, 'D')
    }

    fn write_line(&self, s: &str) -> std::io::Result<()> {
        Stderr::write(&format!("{s}\n"))
    }

    fn write_str(&self, s: &str) -> std::io::Result<()> {
        Stderr::write(s)
    }

    fn clear_line(&self) -> std::io::Result<()> {
        Stderr::write("\r\x1b[2K")
    }

    fn flush(&self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
