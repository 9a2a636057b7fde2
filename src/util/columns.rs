//! Lists that fit the terminal the way `kubectl get` does: short headers in
//! capitals, columns two spaces apart, figures right-aligned under their
//! header and never cut; when the line is too long, only the column marked
//! [`Fit::Cut`] (a name, a free-text summary) is cut, ending in `…`, and
//! the detail is left to `-v` or `--format json`. A last column marked
//! [`Fit::Wrap`] wraps between words under itself instead (what `-v` shows
//! in full).
//!
//! The width is [`output::width`]: `COLUMNS`, else the terminal's; unlimited
//! when stdout is a pipe and `COLUMNS` is unset.

use super::output;

/// Columns between two columns.
const GAP: usize = 2;

/// Where a cell sits in its column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    /// Figures: their last digits line up under the header's end.
    Right,
}

/// What a column does when the line is too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fit {
    /// Ids, figures, verdicts: always whole.
    Whole,
    /// Cut to what is left, ending in `…` (never narrower than its header).
    Cut,
    /// The last column only: wrapped between words, continuation lines
    /// under the column's start (a word longer than the column, such as a
    /// long key name, is broken where the column ends).
    Wrap,
}

/// One column: its header, alignment and fit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Column<'a> {
    pub(crate) header: &'a str,
    pub(crate) align: Align,
    pub(crate) fit: Fit,
}

impl<'a> Column<'a> {
    /// A left-aligned column that stays whole (an id, a verdict).
    pub(crate) fn whole(header: &'a str) -> Column<'a> {
        Column {
            header,
            align: Align::Left,
            fit: Fit::Whole,
        }
    }

    /// A right-aligned column of figures, whole.
    pub(crate) fn figure(header: &'a str) -> Column<'a> {
        Column {
            header,
            align: Align::Right,
            fit: Fit::Whole,
        }
    }

    /// The column cut first when the line is too long.
    pub(crate) fn cut(header: &'a str) -> Column<'a> {
        Column {
            header,
            align: Align::Left,
            fit: Fit::Cut,
        }
    }

    /// The last column, wrapped between words when the line is too long.
    pub(crate) fn wrap(header: &'a str) -> Column<'a> {
        Column {
            header,
            align: Align::Left,
            fit: Fit::Wrap,
        }
    }
}

/// A list as text, and which of its rows lost text to a cut column (their
/// callers may spell those out in full below).
#[derive(Debug)]
pub(crate) struct Listing {
    /// The header line and one line per row (more for a wrapped cell), each
    /// ending in a newline.
    pub(crate) text: String,
    /// Per row: a cell of it was cut.
    pub(crate) cut: Vec<bool>,
}

/// The header and `rows` under `columns`, fitted to the terminal's width.
pub(crate) fn list(columns: &[Column], rows: &[Vec<String>]) -> Listing {
    list_within(columns, rows, output::width().map(usize::from))
}

/// [`list`] within `limit` columns (`None`: no limit).
pub(crate) fn list_within(
    columns: &[Column],
    rows: &[Vec<String>],
    limit: Option<usize>,
) -> Listing {
    let cell = |row: &Vec<String>, c: usize| -> String { row.get(c).cloned().unwrap_or_default() };
    let mut widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(c, column)| {
            rows.iter()
                .map(|row| width(&cell(row, c)))
                .chain([width(column.header)])
                .max()
                .unwrap_or(0)
        })
        .collect();
    if let Some(limit) = limit {
        let total =
            |widths: &[usize]| widths.iter().sum::<usize>() + GAP * widths.len().saturating_sub(1);
        // The flexible columns give up what the line has too much, the last first.
        for (c, column) in columns.iter().enumerate().rev() {
            let excess = total(&widths).saturating_sub(limit);
            if excess == 0 {
                break;
            }
            let floor = match column.fit {
                Fit::Whole => continue,
                Fit::Cut | Fit::Wrap => width(column.header).max(2),
            };
            widths[c] = widths[c].saturating_sub(excess).max(floor);
        }
    }
    let last = columns.len().saturating_sub(1);
    let indent: usize = widths[..last].iter().map(|w| w + GAP).sum();
    let mut text = String::new();
    let mut cut = Vec::with_capacity(rows.len());
    let header: Vec<String> = columns.iter().map(|c| c.header.to_string()).collect();
    for (r, row) in std::iter::once(&header).chain(rows).enumerate() {
        let mut line = String::new();
        let mut lost = false;
        let mut wrapped: Vec<String> = Vec::new();
        for (c, column) in columns.iter().enumerate() {
            let mut value = cell(row, c);
            if width(&value) > widths[c] {
                match column.fit {
                    Fit::Wrap if c == last => {
                        wrapped = wrap(&value, widths[c]);
                        value = wrapped.remove(0);
                    }
                    Fit::Whole => {}
                    Fit::Cut | Fit::Wrap => {
                        value = cut_words(&value, widths[c]);
                        lost = true;
                    }
                }
            }
            if c > 0 {
                line.push_str(&" ".repeat(GAP));
            }
            let fill = " ".repeat(widths[c].saturating_sub(width(&value)));
            match column.align {
                Align::Right => line.push_str(&format!("{fill}{value}")),
                Align::Left if c == last => line.push_str(&value),
                Align::Left => line.push_str(&format!("{value}{fill}")),
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
        for more in wrapped {
            text.push_str(&" ".repeat(indent));
            text.push_str(&more);
            text.push('\n');
        }
        if r > 0 {
            cut.push(lost);
        }
    }
    Listing { text, cut }
}

/// `text` cut to `max` columns with `…`: after its last whole word, before
/// a parenthesis the cut would open, when that keeps more than half of the
/// room (`on every node …`, not `on every node (1 m…`).
fn cut_words(text: &str, max: usize) -> String {
    let hard = output::truncate(text, to_u16(max));
    let kept = hard.trim_end_matches('…');
    let mut end = kept.rfind(' ').unwrap_or(0);
    if let Some(open) = kept[..end].rfind('(')
        && !kept[open..end].contains(')')
    {
        end = open;
    }
    let words = kept[..end].trim_end();
    if width(words) * 2 > max {
        format!("{words} …")
    } else {
        hard
    }
}

/// `text` in lines of at most `max` columns, broken between words; a word
/// longer than `max` is broken where the line ends.
fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && width(&line) + 1 + width(word) > max {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        for c in word.chars() {
            if width(&line) + width(c.encode_utf8(&mut [0; 4])) > max {
                lines.push(std::mem::take(&mut line));
            }
            line.push(c);
        }
    }
    lines.push(line);
    lines
}

fn width(text: &str) -> usize {
    usize::from(output::display_width(text))
}

fn to_u16(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows_of(cells: &[&[&str]]) -> Vec<Vec<String>> {
        cells
            .iter()
            .map(|row| row.iter().map(|c| c.to_string()).collect())
            .collect()
    }

    #[test]
    fn only_the_cut_column_gives_way_and_figures_stay_right_aligned() {
        let columns = [
            Column::whole("ITEM"),
            Column::figure("LEFT"),
            Column::cut("NAME"),
        ];
        let rows = rows_of(&[
            &["sku-1", "7", "a name far too long (to fit the line) whole"],
            &["sku-22", "1000", "short"],
        ]);
        let listing = list_within(&columns, &rows, Some(30));
        let lines: Vec<&str> = listing.text.lines().collect();
        assert_eq!(lines[0], "ITEM    LEFT  NAME");
        assert_eq!(lines[1], "sku-1      7  a name far too …");
        assert_eq!(lines[2], "sku-22  1000  short");
        assert!(lines.iter().all(|l| l.chars().count() <= 30), "{lines:?}");
        // A cut inside a parenthesis ends before it.
        let listing = list_within(&columns, &rows, Some(39));
        assert_eq!(
            listing.text.lines().nth(1),
            Some("sku-1      7  a name far too long …")
        );
        assert_eq!(listing.cut, [true, false]);
        // Without a limit nothing is cut.
        let whole = list_within(&columns, &rows, None);
        assert!(whole.text.contains("(to fit the line) whole"));
        assert_eq!(whole.cut, [false, false]);
    }

    #[test]
    fn a_wrapped_last_column_continues_under_itself() {
        let columns = [Column::whole("CHECK"), Column::wrap("SEEN")];
        let rows = rows_of(&[&["eviction", "noeviction on every node of the cluster"]]);
        let text = list_within(&columns, &rows, Some(30)).text;
        assert_eq!(
            text,
            "CHECK     SEEN\neviction  noeviction on every\n          node of the cluster\n"
        );
        // A word longer than the column is broken where the line ends.
        let rows = rows_of(&[&["acl", "no access to 'seckill:{campaign-2026:1001}:buyers'"]]);
        let text = list_within(&columns, &rows, Some(30)).text;
        assert_eq!(
            text,
            "CHECK  SEEN\nacl    no access to\n       'seckill:{campaign-2026\n       :1001}:buyers'\n"
        );
    }
}
