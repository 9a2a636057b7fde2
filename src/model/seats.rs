//! A seat item's map (docs/seats.md): its sections, each `rows` ×
//! `seats_per_row` seats with a tier, a price and the seats that are never
//! sold (`blocked`), and the one way a seat is named, `<section>-<row>-<seat>`
//! (1-based, e.g. `A-12-7`). Each section is one slot in Redis: one
//! byte per seat, row after row (lua/lib/seat_pick.lua).
//!
//! May import: nothing of the crate.

use serde::Deserialize;
use serde_saphyr::Spanned;
use std::path::Path;

use anyhow::Result;

use crate::model::fields::{at, parse_price};

/// Most sections one seat item may have (each is a slot of its own).
pub const MAX_SECTIONS: usize = 64;
/// Most rows, and most seats in a row, of one section.
pub const MAX_ROWS: i64 = 1_000;
/// Most seats of one section: its state is one string of this many bytes,
/// scanned by one script call.
pub const MAX_SECTION_SEATS: i64 = 20_000;
/// Most seats one best-available or named buy takes (a group, not a block booking).
pub const MAX_SEATS_PER_BUY: u32 = 20;

/// A seat's state as one byte of its section's string in Redis.
pub const FREE: u8 = b'.';
pub const HELD: u8 = b'h';
pub const SOLD: u8 = b's';
pub const BLOCKED: u8 = b'x';

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSeats {
    sections: Spanned<Vec<RawSection>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSection {
    id: Spanned<String>,
    rows: Spanned<i64>,
    seats_per_row: Spanned<i64>,
    #[serde(default)]
    tier: Option<Spanned<String>>,
    #[serde(default)]
    price: Option<Spanned<String>>,
    #[serde(default)]
    blocked: Vec<Spanned<String>>,
    /// `front` (row 1 first, the default) or `back`: the order best-available fills rows.
    #[serde(default)]
    prefer: Option<Spanned<String>>,
}

/// The seat map of one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seating {
    /// In file order: section `i` is the item's slot `i`.
    pub sections: Vec<Section>,
}

/// One section: a block of rows with one tier and price.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub id: String,
    pub rows: u32,
    pub seats_per_row: u32,
    /// The tier a best-available buy asks for (the section id when unset).
    pub tier: String,
    pub price_cents: i64,
    /// Seats never sold, as indexes (row-major, 0-based), sorted.
    pub blocked: Vec<u32>,
    /// Best-available fills the last row first.
    pub back_first: bool,
}

/// What a seat buy asks for (docs/seats.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeatAsk {
    /// These seats, all in one section: all or none.
    Named(Vec<Seat>),
    /// The buy's qty side by side in one row: in `section`, else in the
    /// sections of `tier`, else in any, sections in file order.
    Best {
        tier: Option<String>,
        section: Option<usize>,
    },
}

/// One seat: its section (index in [`Seating::sections`]) and its index in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seat {
    pub section: usize,
    pub index: u32,
}

impl Section {
    /// Every seat of the section, blocked ones too.
    pub fn seats(&self) -> u32 {
        self.rows * self.seats_per_row
    }

    /// The seats that can be sold.
    pub fn sellable(&self) -> i64 {
        i64::from(self.seats()) - self.blocked.len() as i64
    }

    /// `A-12-7` of seat `index`.
    pub fn label(&self, index: u32) -> String {
        format!(
            "{}-{}-{}",
            self.id,
            index / self.seats_per_row + 1,
            index % self.seats_per_row + 1
        )
    }

    /// The index of 1-based `row` and `seat`, if they are in the section.
    pub fn index_of(&self, row: u32, seat: u32) -> Option<u32> {
        ((1..=self.rows).contains(&row) && (1..=self.seats_per_row).contains(&seat))
            .then(|| (row - 1) * self.seats_per_row + seat - 1)
    }

    /// The section's initial state: free, with its blocked seats.
    pub fn initial_state(&self) -> Vec<u8> {
        let mut state = vec![FREE; self.seats() as usize];
        for &b in &self.blocked {
            state[b as usize] = BLOCKED;
        }
        state
    }
}

impl Seating {
    /// Every seat's count over every section, blocked ones left out.
    pub fn sellable(&self) -> i64 {
        self.sections.iter().map(Section::sellable).sum()
    }

    /// The section with this id.
    pub fn section(&self, id: &str) -> Option<usize> {
        self.sections.iter().position(|s| s.id == id)
    }

    /// The tiers, in file order, each once.
    pub fn tiers(&self) -> Vec<&str> {
        let mut tiers: Vec<&str> = Vec::new();
        for section in &self.sections {
            if !tiers.contains(&section.tier.as_str()) {
                tiers.push(&section.tier);
            }
        }
        tiers
    }

    /// The sections a best-available buy tries, in order.
    pub fn candidates(&self, tier: Option<&str>, section: Option<usize>) -> Vec<usize> {
        match (section, tier) {
            (Some(section), _) => vec![section],
            (None, Some(tier)) => (0..self.sections.len())
                .filter(|&i| self.sections[i].tier == tier)
                .collect(),
            (None, None) => (0..self.sections.len()).collect(),
        }
    }

    /// The seat `text` names (`A-12-7`), or why it names none (said after
    /// the seat: "is blocked: it is never sold").
    pub fn seat(&self, text: &str) -> std::result::Result<Seat, String> {
        let (section_id, row, seat) = split_label(text)
            .ok_or_else(|| "is not <section>-<row>-<seat>, like A-12-7".to_string())?;
        let section = self.section(section_id).ok_or_else(|| {
            let ids: Vec<&str> = self.sections.iter().map(|s| s.id.as_str()).collect();
            format!(
                "names no section of the item (sections: {})",
                ids.join(", ")
            )
        })?;
        let s = &self.sections[section];
        let index = s.index_of(row, seat).ok_or_else(|| {
            format!(
                "is outside section {} ({} rows of {} seats)",
                s.id, s.rows, s.seats_per_row
            )
        })?;
        if s.blocked.binary_search(&index).is_ok() {
            return Err("is blocked: it is never sold".to_string());
        }
        Ok(Seat { section, index })
    }
}

/// `("A", 12, 7)` of `A-12-7`: the last two `-` parts are numbers.
fn split_label(text: &str) -> Option<(&str, u32, u32)> {
    let (rest, seat) = text.rsplit_once('-')?;
    let (section, row) = rest.rsplit_once('-')?;
    let number = |s: &str| {
        (!s.is_empty() && s.len() <= 6 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    Some((section, number(row)?, number(seat)?))
}

/// A section id: 1..16 letters, digits or `_` (no `-`: it separates a seat's parts).
fn is_section_id(id: &str) -> bool {
    (1..=16).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The seat map of item `item`, validated; `default_price` is the item's
/// `price`, for sections that name none.
pub(crate) fn validate(
    path: &Path,
    raw: &RawSeats,
    item: &str,
    default_price: Option<i64>,
) -> Result<Seating> {
    let raw_sections = &raw.sections;
    if raw_sections.value.is_empty() {
        return Err(at(
            path,
            raw_sections,
            format!("seats.sections of item {item} must list at least one section"),
        ));
    }
    if raw_sections.value.len() > MAX_SECTIONS {
        return Err(at(
            path,
            raw_sections,
            format!(
                "item {item} has {} sections; at most {MAX_SECTIONS} (each is a slot of its own)",
                raw_sections.value.len()
            ),
        ));
    }
    let mut sections: Vec<Section> = Vec::new();
    for raw in &raw_sections.value {
        let id = &raw.id.value;
        if !is_section_id(id) {
            return Err(at(
                path,
                &raw.id,
                format!("section id {id:?} must be 1..16 letters, digits or '_' (no '-')"),
            ));
        }
        if sections.iter().any(|s| &s.id == id) {
            return Err(at(path, &raw.id, format!("section {id} is listed twice")));
        }
        for (value, name) in [(&raw.rows, "rows"), (&raw.seats_per_row, "seats_per_row")] {
            if !(1..=MAX_ROWS).contains(&value.value) {
                return Err(at(
                    path,
                    value,
                    format!(
                        "{name} of section {id} must be between 1 and {MAX_ROWS}, got {}",
                        value.value
                    ),
                ));
            }
        }
        if raw.rows.value * raw.seats_per_row.value > MAX_SECTION_SEATS {
            return Err(at(
                path,
                &raw.rows,
                format!(
                    "section {id} has {} seats; at most {MAX_SECTION_SEATS} (split it into sections)",
                    raw.rows.value * raw.seats_per_row.value
                ),
            ));
        }
        let price_cents = match (&raw.price, default_price) {
            (Some(price), _) => parse_price(&price.value).map_err(|why| {
                at(
                    path,
                    price,
                    format!("price {:?} of section {id}: {why}", price.value),
                )
            })?,
            (None, Some(default)) => default,
            (None, None) => {
                return Err(at(
                    path,
                    &raw.id,
                    format!("section {id} has no price (give the section or the item a `price`)"),
                ));
            }
        };
        let tier = match &raw.tier {
            Some(tier) if !is_section_id(&tier.value) => {
                return Err(at(
                    path,
                    tier,
                    format!(
                        "tier {:?} of section {id} must be 1..16 letters, digits or '_'",
                        tier.value
                    ),
                ));
            }
            Some(tier) => tier.value.clone(),
            None => id.clone(),
        };
        let back_first = match raw.prefer.as_ref().map(|p| (p, p.value.as_str())) {
            None | Some((_, "front")) => false,
            Some((_, "back")) => true,
            Some((p, other)) => {
                return Err(at(
                    path,
                    p,
                    format!("prefer of section {id} is `front` or `back`, not {other:?}"),
                ));
            }
        };
        let mut section = Section {
            id: id.clone(),
            rows: raw.rows.value as u32,
            seats_per_row: raw.seats_per_row.value as u32,
            tier,
            price_cents,
            blocked: Vec::new(),
            back_first,
        };
        for entry in &raw.blocked {
            let indexes = blocked_range(&section, &entry.value)
                .map_err(|why| at(path, entry, format!("blocked seats of section {id}: {why}")))?;
            section.blocked.extend(indexes);
        }
        section.blocked.sort_unstable();
        section.blocked.dedup();
        if section.sellable() < 1 {
            return Err(at(
                path,
                &raw.id,
                format!("section {id} has every seat blocked: nothing to sell"),
            ));
        }
        sections.push(section);
    }
    Ok(Seating { sections })
}

/// The indexes of `A-1-1` or `A-1-1..A-1-4` (one row) in `section`.
fn blocked_range(section: &Section, text: &str) -> std::result::Result<Vec<u32>, String> {
    let one = |label: &str| -> std::result::Result<(u32, u32), String> {
        let (id, row, seat) = split_label(label.trim())
            .ok_or_else(|| format!("{label:?} is not <section>-<row>-<seat>, like A-1-1"))?;
        if id != section.id {
            return Err(format!("{label} is not in section {}", section.id));
        }
        section
            .index_of(row, seat)
            .map(|index| (row, index))
            .ok_or_else(|| {
                format!(
                    "{label} is outside the section ({} rows of {} seats)",
                    section.rows, section.seats_per_row
                )
            })
    };
    match text.split_once("..") {
        None => Ok(vec![one(text)?.1]),
        Some((from, to)) => {
            let ((row_a, a), (row_b, b)) = (one(from)?, one(to)?);
            if row_a != row_b || b < a {
                return Err(format!("{text}: a range runs left to right within one row"));
            }
            Ok((a..=b).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hall() -> Seating {
        let raw: RawSeats = serde_saphyr::from_str(
            "sections:\n  - { id: A, rows: 50, seats_per_row: 40, tier: vip, price: \"1880\" }\n  - { id: B, rows: 60, seats_per_row: 50, tier: standard, price: \"380\", blocked: [\"B-1-1..B-1-4\", B-2-9] }\n",
        )
        .unwrap();
        validate(Path::new("t.yaml"), &raw, "hall-a", None).unwrap()
    }

    #[test]
    fn seats_are_named_section_row_seat_and_blocked_ones_refused() {
        let hall = hall();
        assert_eq!(hall.sellable(), 2000 + 3000 - 5);
        assert_eq!(
            hall.seat("A-12-7"),
            Ok(Seat {
                section: 0,
                index: 11 * 40 + 6
            })
        );
        assert_eq!(hall.sections[0].label(11 * 40 + 6), "A-12-7");
        assert!(
            hall.seat("A-51-1")
                .unwrap_err()
                .contains("outside section A")
        );
        assert!(hall.seat("B-1-3").unwrap_err().contains("blocked"));
        assert!(hall.seat("C-1-1").unwrap_err().contains("no section"));
        assert!(hall.seat("A-0-1").unwrap_err().contains("outside"));
        assert!(hall.seat("A12-7").is_err());
        assert_eq!(hall.tiers(), vec!["vip", "standard"]);
        assert_eq!(hall.sections[1].blocked, vec![0, 1, 2, 3, 58]);
        assert_eq!(hall.sections[1].initial_state()[..5], *b"xxxx.");
    }
}
