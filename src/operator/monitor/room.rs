//! The waiting-room line of `seckill status` (docs/waiting-room.md): an
//! item's room at the same sample as its stock — joined, admitted, active,
//! the rate, a pause, the wait at the tail. One read-only script call per
//! item with a room (`lua/queue_read.lua`); none for an item without one.

use anyhow::Result;
use redis::ConnectionLike;
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::util::text::human_duration_ms;

/// An item's room, for `status`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RoomView {
    /// The settings, for people ("rate 500/s, admissions last 2m").
    pub(crate) settings: String,
    /// Users who joined.
    pub(crate) joined: i64,
    /// The last position admitted.
    pub(crate) serving: i64,
    /// max_active: admitted places not given back.
    pub(crate) active: i64,
    pub(crate) paused: bool,
    /// The wait of someone joining now, ms.
    pub(crate) tail_eta_ms: i64,
    /// Whether Redis holds the room (preheat writes it).
    pub(crate) present: bool,
}

/// The room of `item`, when the file gives it one.
pub(crate) fn read<C: ConnectionLike>(conn: &mut C, item: &SaleItem) -> Result<Option<RoomView>> {
    let Some(room) = item.room() else {
        return Ok(None);
    };
    let (figures, _) = room.read(conn, &[])?;
    Ok(Some(RoomView {
        settings: room.settings.describe(),
        joined: figures.joined,
        serving: figures.serving,
        active: figures.active,
        paused: figures.paused,
        tail_eta_ms: figures.tail_eta_ms,
        present: figures.present,
    }))
}

impl RoomView {
    /// "1,204 joined · 800 admitted · tail waits about 3s · rate 500/s, ...".
    pub(crate) fn describe(&self) -> String {
        if !self.present {
            return format!("{} — not in Redis yet (preheat writes it)", self.settings);
        }
        format!(
            "{} joined · {} admitted{} · tail waits about {}{} · {}",
            self.joined,
            self.serving,
            if self.active > 0 {
                format!(" · {} active", self.active)
            } else {
                String::new()
            },
            human_duration_ms(self.tail_eta_ms),
            if self.paused { " · PAUSED" } else { "" },
            self.settings
        )
    }
}
