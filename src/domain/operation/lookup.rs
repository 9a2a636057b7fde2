//! "Did I get it?": a user's result for one item, read in the slot their
//! orders live in, in one read-only script — no database.

use redis::ConnectionLike;
use serde::Serialize;

use super::{Failure, Retry, check_id, item_of};
use crate::domain::item::SaleItem;
use crate::model::campaign::Campaign;

/// The request: a user, and optionally one of their request ids.
#[derive(Debug, Clone)]
pub struct Lookup<'a> {
    pub item: &'a str,
    pub user: &'a str,
    pub request_id: Option<&'a str>,
}

/// A user's result for an item.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    pub item: String,
    pub user: String,
    /// `ok` (bought), `none`, or — said by a door that knows — `pending`
    /// (that request id's attempt is running now).
    pub result: &'static str,
    /// Units the user holds of the item.
    pub units: i64,
    /// The user's latest order.
    pub order_id: Option<String>,
    /// The order of `request_id`, when it bought.
    pub request_order_id: Option<String>,
    /// `confirmed`, or a reservation's `reserved` / `paid` / `expired` / `cancelled`.
    pub state: Option<String>,
    /// A reservation's payment deadline (Unix ms, Redis clock).
    pub deadline_ms: Option<i64>,
}

impl Lookup<'_> {
    /// The request checked: nothing is sent for a wrong one.
    pub fn check(&self, campaign: &Campaign) -> Result<(), Failure> {
        item_of(campaign, self.item)?;
        check_id("user", self.user, true)?;
        if let Some(id) = self.request_id {
            check_id("request_id", id, false)?;
        }
        Ok(())
    }

    /// Read the user's result on `conn` (Redis at `at`).
    pub fn run<C: ConnectionLike>(
        &self,
        campaign: &Campaign,
        conn: &mut C,
        at: &str,
    ) -> Result<Found, Failure> {
        self.check(campaign)?;
        let item = item_of(campaign, self.item)?;
        let home = SaleItem::live(campaign, item).home(self.user);
        let found = crate::domain::lookup::look_up(conn, &home.keys, self.user, self.request_id)
            .map_err(|error| Failure::of(error, at, Retry::Repeat))?;
        Ok(Found {
            item: self.item.to_string(),
            user: self.user.to_string(),
            result: if found.units > 0 || found.request_order_id.is_some() {
                "ok"
            } else {
                "none"
            },
            units: found.units,
            order_id: found.latest_order_id,
            request_order_id: found.request_order_id,
            state: found.state,
            deadline_ms: found.deadline_ms,
        })
    }
}
