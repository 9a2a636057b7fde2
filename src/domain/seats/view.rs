//! How a seat item's sections stand: every section's state string read
//! (one GET each) and counted — free, held, sold, blocked — for `status`,
//! `reconcile` (seat by seat) and `serve`'s seat page; and the seat map an
//! operator reads at 80 columns.

use anyhow::{Context, Result};
use redis::{Commands, ConnectionLike};
use serde::Serialize;

use crate::model::layout::Layout;
use crate::model::seats::{BLOCKED, FREE, HELD, SOLD, Seating, Section};

/// One section as Redis holds it.
#[derive(Debug, Clone, Serialize)]
pub struct SectionView {
    pub section: String,
    pub tier: String,
    pub price_cents: i64,
    pub rows: u32,
    pub seats_per_row: u32,
    pub free: u32,
    pub held: u32,
    pub sold: u32,
    pub blocked: u32,
    /// Bytes that are none of the four states, or a string of the wrong
    /// length: the section is corrupt (said in `problem`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// One byte per seat, row after row: `.` free, `h` held, `s` sold, `x`
    /// blocked; empty when the section is not preheated.
    pub state: String,
}

impl SectionView {
    /// The seat's state byte, if the section holds it.
    pub fn at(&self, index: u32) -> Option<u8> {
        self.state.as_bytes().get(index as usize).copied()
    }
}

/// Every section of the item, in file order.
pub fn read<C: ConnectionLike>(
    conn: &mut C,
    layout: &Layout,
    seating: &Seating,
) -> Result<Vec<SectionView>> {
    seating
        .sections
        .iter()
        .enumerate()
        .map(|(i, section)| {
            let key = layout.bucket(i as u32).keys.seats;
            let state: Option<Vec<u8>> = conn
                .get(&key)
                .with_context(|| format!("cannot read {key}"))?;
            Ok(view_of(section, state.unwrap_or_default()))
        })
        .collect()
}

/// `section`'s counts from its state string.
pub fn view_of(section: &Section, state: Vec<u8>) -> SectionView {
    let count = |byte: u8| state.iter().filter(|&&b| b == byte).count() as u32;
    let strange = state
        .iter()
        .position(|b| ![FREE, HELD, SOLD, BLOCKED].contains(b));
    let problem = if !state.is_empty() && state.len() != section.seats() as usize {
        Some(format!(
            "holds {} bytes for {} rows of {} seats",
            state.len(),
            section.rows,
            section.seats_per_row
        ))
    } else {
        strange.map(|at| {
            format!(
                "seat {} is {:?}, not one of . h s x",
                section.label(at as u32),
                char::from(state[at])
            )
        })
    };
    SectionView {
        section: section.id.clone(),
        tier: section.tier.clone(),
        price_cents: section.price_cents,
        rows: section.rows,
        seats_per_row: section.seats_per_row,
        free: count(FREE),
        held: count(HELD),
        sold: count(SOLD),
        blocked: count(BLOCKED),
        problem,
        state: String::from_utf8_lossy(&state).into_owned(),
    }
}

/// Seats shown per row of the map before seats are drawn in groups.
const MAP_WIDTH: u32 = 70;

/// The section's map, one line per row, at most 80 columns: `row  12 |..hhss..|`.
/// A row longer than 70 seats is drawn k seats per character (said in the
/// header); a group shows `.` when any seat in it is free, else `h` when any
/// is held, else `s` when any is sold, else `x`.
pub fn map_lines(view: &SectionView) -> Vec<String> {
    let per_char = view.seats_per_row.div_ceil(MAP_WIDTH).max(1);
    let mut lines = vec![format!(
        "section {} ({}): {} free · {} held · {} sold · {} blocked{}",
        view.section,
        view.tier,
        view.free,
        view.held,
        view.sold,
        view.blocked,
        if per_char > 1 {
            format!(" · one mark per {per_char} seats")
        } else {
            String::new()
        }
    )];
    if view.state.len() != (view.rows * view.seats_per_row) as usize {
        lines.push("  (not preheated, or corrupt: no map)".to_string());
        return lines;
    }
    let bytes = view.state.as_bytes();
    for row in 0..view.rows {
        let start = (row * view.seats_per_row) as usize;
        let seats = &bytes[start..start + view.seats_per_row as usize];
        let marks: String = seats
            .chunks(per_char as usize)
            .map(|group| {
                [FREE, HELD, SOLD, BLOCKED]
                    .into_iter()
                    .find(|state| group.contains(state))
                    .map_or('?', char::from)
            })
            .collect();
        lines.push(format!("row {:>4} |{marks}|", row + 1));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(rows: u32, seats_per_row: u32) -> Section {
        Section {
            id: "A".into(),
            rows,
            seats_per_row,
            tier: "vip".into(),
            price_cents: 100,
            blocked: vec![],
            back_first: false,
        }
    }

    #[test]
    fn counts_and_a_map_within_80_columns() {
        let view = view_of(&section(2, 4), b"..hsx.s.".to_vec());
        assert_eq!(
            (view.free, view.held, view.sold, view.blocked),
            (4, 1, 2, 1)
        );
        assert!(view.problem.is_none());
        assert_eq!(
            map_lines(&view)[1..],
            ["row    1 |..hs|", "row    2 |x.s.|"]
        );
        let wide = view_of(&section(1, 200), vec![b's'; 200]);
        assert!(map_lines(&wide).iter().all(|l| l.chars().count() <= 80));
        let broken = view_of(&section(1, 4), b"..?.".to_vec());
        assert!(broken.problem.unwrap().contains("A-1-3"));
        assert!(view_of(&section(1, 4), b"...".to_vec()).problem.is_some());
    }
}
