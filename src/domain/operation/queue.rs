//! The waiting room's door (docs/waiting-room.md): join an item's room, and
//! read where a user stands. Both are safe to repeat: a repeat join keeps
//! the place it was given.

use redis::ConnectionLike;
use serde::Serialize;

use super::{Failure, Retry, check_id, room_of};
use crate::domain::waiting_room::{JoinOutcome, RoomFigures, Standing};
use crate::model::campaign::Campaign;

/// Join `item`'s room as `user`.
#[derive(Debug, Clone)]
pub struct Join<'a> {
    pub item: &'a str,
    pub user: &'a str,
}

/// Read where `users` stand in `item`'s room (one script call for all).
#[derive(Debug, Clone)]
pub struct Position<'a> {
    pub item: &'a str,
    pub users: &'a [&'a str],
}

/// Where a user stands, as a door shows it.
#[derive(Debug, Clone, Serialize)]
pub struct InLine {
    pub item: String,
    pub user: String,
    /// The join's outcome (`joined`, `queued`, or a refusal); absent on a read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<JoinOutcome>,
    /// State, position, serving position, wait, admission.
    #[serde(flatten)]
    pub standing: Option<Standing>,
    /// Users ahead of this one (waiting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ahead: Option<i64>,
    /// Redis time of the join (Unix ms); absent on a read.
    #[serde(skip)]
    pub at_ms: Option<i64>,
}

impl InLine {
    fn of(
        item: &str,
        user: &str,
        outcome: Option<JoinOutcome>,
        standing: Option<Standing>,
    ) -> InLine {
        let ahead = standing
            .as_ref()
            .filter(|s| s.waits())
            .map(|s| (s.position - s.serving - 1).max(0));
        InLine {
            item: item.to_string(),
            user: user.to_string(),
            outcome,
            standing,
            ahead,
            at_ms: None,
        }
    }

    /// The wait to say (`Retry-After`), for a user still waiting.
    pub fn wait_ms(&self) -> Option<i64> {
        self.standing
            .as_ref()
            .filter(|s| s.waits())
            .map(|s| s.eta_ms)
    }

    /// The standing's state, or `not_queued` when the user has none.
    pub fn state(&self) -> &'static str {
        self.standing
            .as_ref()
            .map_or("not_queued", |s| s.state.as_str())
    }
}

impl Join<'_> {
    /// Join on `conn` (Redis at `at`).
    pub fn run<C: ConnectionLike>(
        &self,
        campaign: &Campaign,
        conn: &mut C,
        at: &str,
    ) -> Result<InLine, Failure> {
        check_id("user", self.user, true)?;
        let room = room_of(campaign, self.item)?;
        let reply = room
            .join(conn, self.user)
            .map_err(|error| Failure::of(error, at, Retry::Repeat))?;
        let mut line = InLine::of(self.item, self.user, Some(reply.outcome), reply.standing);
        line.at_ms = Some(reply.now_ms);
        Ok(line)
    }
}

impl Position<'_> {
    /// Read on `conn` (Redis at `at`): the room's figures, and each user's line.
    pub fn run<C: ConnectionLike>(
        &self,
        campaign: &Campaign,
        conn: &mut C,
        at: &str,
    ) -> Result<(RoomFigures, Vec<InLine>), Failure> {
        for user in self.users {
            check_id("user", user, true)?;
        }
        let room = room_of(campaign, self.item)?;
        let (figures, standings) = room
            .read(conn, self.users)
            .map_err(|error| Failure::of(error, at, Retry::Repeat))?;
        let lines = self
            .users
            .iter()
            .zip(standings)
            .map(|(user, standing)| InLine::of(self.item, user, None, Some(standing)))
            .collect();
        Ok((figures, lines))
    }
}
