//! How results are shown: tables for people, JSON for scripts.
//!
//! Tables fit the terminal (`COLUMNS`, else the terminal's width; unlimited
//! when stdout is a pipe and `COLUMNS` is unset): ids, numbers and verdicts
//! never wrap inside a token, only the columns marked free text wrap, and
//! only between words. Everything reaches stdout through [`write_stdout`], so
//! a reader that exits early (`| head -1`) ends the program quietly.

use std::io::Write;

use anyhow::Context as _;
use comfy_table::{
    ColumnConstraint, ContentArrangement, Table, Width, presets::UTF8_FULL_CONDENSED,
};

/// `-q/--quiet`: a command that succeeded prints nothing for people (for
/// cron, which mails whatever is printed): no table, no warning, no log or
/// retry line. What a script asked for (`--format json`) is still written,
/// and so is the error that ends a command. Set once by the command line.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Turn `-q/--quiet` on for this process.
pub(crate) fn set_quiet(quiet: bool) {
    QUIET.store(quiet, std::sync::atomic::Ordering::Relaxed);
}

/// Whether `-q/--quiet` is on.
pub(crate) fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum Format {
    /// Human-readable table.
    #[default]
    Table,
    /// One JSON document on stdout, for scripts.
    Json,
    /// Comma-separated values (loadtest: redis-benchmark's columns first).
    Csv,
    /// Prometheus text exposition format (`status` only: node_exporter's textfile collector).
    Prometheus,
}

/// A table with the house style and these column headers, as wide as the
/// terminal allows. Call [`fit`] once the rows are in.
pub(crate) fn table<I: IntoIterator<Item = S>, S: Into<comfy_table::Cell>>(header: I) -> Table {
    let mut table = headless_table();
    table.set_header(header);
    table
}

fn headless_table() -> Table {
    let mut table = Table::new();
    table
        .load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    if let Some(width) = columns_from_env() {
        table.set_width(width);
    }
    table
}

/// A whole table as text: `header`, `rows`, fitted (see [`fit`]), newline-terminated.
pub(crate) fn grid(header: &[&str], rows: Vec<Vec<String>>, free_text: &[usize]) -> String {
    let mut table = table(header);
    for row in rows {
        table.add_row(row);
    }
    fit(&mut table, free_text);
    format!("{table}\n")
}

/// One `field | value` row per pair, no header: for a single record whose
/// values (ids to copy) must stay whole on a narrow terminal.
pub(crate) fn fields(rows: &[(&str, String)]) -> String {
    let mut table = headless_table();
    for (field, value) in rows {
        table.add_row(vec![field.to_string(), value.clone()]);
    }
    fit(&mut table, &[]);
    format!("{table}\n")
}

/// Let only the `free_text` columns wrap, between words (never narrower than
/// their longest word); every other column keeps each cell on one line.
pub(crate) fn fit(table: &mut Table, free_text: &[usize]) {
    let mut longest_word = vec![0u16; table.column_count()];
    for row in table.row_iter() {
        for (i, cell) in row.cell_iter().enumerate() {
            let word = cell
                .content()
                .split_whitespace()
                .map(display_width)
                .max()
                .unwrap_or(0);
            longest_word[i] = longest_word[i].max(word);
        }
    }
    let constraints: Vec<ColumnConstraint> = longest_word
        .iter()
        .enumerate()
        .map(|(i, &word)| {
            if free_text.contains(&i) {
                // The boundary counts the cell's padding, one space each side.
                ColumnConstraint::LowerBoundary(Width::Fixed(word.max(1) + 2))
            } else {
                ColumnConstraint::ContentWidth
            }
        })
        .collect();
    table.set_constraints(constraints);
}

/// `text` and a newline, wrapped between words to the table width (a word
/// longer than the width, such as an id, gets a line of its own, whole).
pub(crate) fn paragraph(text: &str) -> String {
    hanging(text, 0)
}

/// [`paragraph`] whose continuation lines are indented by `indent` columns
/// (a label's text wrapped under itself). Spaces in `text` are kept as typed.
pub(crate) fn hanging(text: &str, indent: u16) -> String {
    let Some(width) = width() else {
        return format!("{text}\n");
    };
    let mut out = String::new();
    let mut line_width = 0u16;
    for (i, word) in text.split(' ').enumerate() {
        let word_width = display_width(word);
        if i > 0 && line_width > indent && line_width + 1 + word_width > width {
            out.push('\n');
            out.push_str(&" ".repeat(usize::from(indent)));
            line_width = indent;
        } else if i > 0 {
            out.push(' ');
            line_width += 1;
        }
        out.push_str(word);
        line_width += word_width;
    }
    out.push('\n');
    out
}

/// The width text should fit: `COLUMNS`, else the terminal's; `None` (no
/// limit) when stdout is a pipe and `COLUMNS` is unset.
pub(crate) fn width() -> Option<u16> {
    columns_from_env().or_else(terminal_width)
}

/// (rows, columns) of the terminal stdout is, if it is one.
pub(crate) fn terminal_size() -> Option<(u16, u16)> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    window_size(libc::STDOUT_FILENO)
}

/// Columns of the terminal stderr is, if it is one (where progress bars go).
pub(crate) fn stderr_width() -> Option<u16> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    window_size(libc::STDERR_FILENO).map(|(_, columns)| columns)
}

/// (rows, columns) of the terminal open on `fd`.
fn window_size(fd: libc::c_int) -> Option<(u16, u16)> {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ fills the winsize it is given and nothing else.
    let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_row > 0 && size.ws_col > 0).then_some((size.ws_row, size.ws_col))
}

/// `text` cut to `width` terminal columns, ending in `…` when cut.
pub(crate) fn truncate(text: &str, width: u16) -> String {
    if display_width(text) <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0u16;
    for c in text.chars() {
        let w = if is_wide(c) { 2 } else { 1 };
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// The terminal's width when stdout is one.
fn terminal_width() -> Option<u16> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    Table::new().width()
}

/// `COLUMNS`, when set to a usable width.
fn columns_from_env() -> Option<u16> {
    std::env::var("COLUMNS")
        .ok()?
        .trim()
        .parse::<u16>()
        .ok()
        .filter(|&w| w >= 20)
}

/// Columns a string takes on a terminal (CJK ideographs take two).
pub(crate) fn display_width(text: &str) -> u16 {
    let width: usize = text.chars().map(|c| if is_wide(c) { 2 } else { 1 }).sum();
    u16::try_from(width).unwrap_or(u16::MAX)
}

fn is_wide(c: char) -> bool {
    matches!(u32::from(c),
        0x1100..=0x115F | 0x2E80..=0xA4CF | 0xAC00..=0xD7A3 | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F | 0xFF00..=0xFF60 | 0xFFE0..=0xFFE6 | 0x20000..=0x3FFFD)
}

/// Write `text` to stdout. A closed stdout (the reader exited, e.g. `| head
/// -1`) is not an error: there is no one left to tell, so it returns
/// `Ok(false)` and the caller exits with the code it would have had.
pub(crate) fn write_stdout(text: &str) -> anyhow::Result<bool> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(error) => Err(error).context("cannot write to stdout"),
    }
}

/// A line on stderr; a closed stderr is ignored (nothing else could report it).
pub(crate) fn say(line: impl std::fmt::Display) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// A warning on stderr ([`say`]), unless `-q` silenced it: a warning is
/// advice, and cron mails every line it sees.
pub(crate) fn warn(line: impl std::fmt::Display) {
    if !quiet() {
        say(line);
    }
}
