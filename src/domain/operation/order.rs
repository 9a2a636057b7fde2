//! Pay or cancel one reserved order (campaigns with `payment_timeout`): each
//! order ends paid or released, exactly once, and asking twice is safe.

use redis::ConnectionLike;

use super::{Failure, Invalid, Retry};
use crate::domain::reservations::{self, MAX_REASON_BYTES, OrderResult};
use crate::model::campaign::{Campaign, is_valid_id};

/// What to do with the order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change<'a> {
    Pay,
    /// Release it now, with a reason kept in its event.
    Cancel {
        reason: &'a str,
    },
}

/// The request: an order (found in `item`'s slots, or in every item's).
#[derive(Debug, Clone)]
pub struct OrderChange<'a> {
    pub order: &'a str,
    pub item: Option<&'a str>,
    pub change: Change<'a>,
}

impl OrderChange<'_> {
    /// The request checked: nothing is sent for a wrong one.
    pub fn check(&self, campaign: &Campaign) -> Result<(), Failure> {
        if !is_valid_id(self.order) {
            return Err(Failure::invalid(Invalid::Field {
                field: "order",
                value: Some(self.order.to_string()),
                problem: "is not an order id (1..64 letters, digits, '-' or '_')".into(),
            }));
        }
        if let Some(item) = self.item {
            super::item_of(campaign, item)?;
        }
        if let Change::Cancel { reason } = self.change
            && (reason.len() > MAX_REASON_BYTES || reason.chars().any(char::is_control))
        {
            return Err(Failure::invalid(Invalid::Field {
                field: "reason",
                value: None,
                problem: format!(
                    "must be at most {MAX_REASON_BYTES} bytes without control characters"
                ),
            }));
        }
        Ok(())
    }

    /// Apply the change on `conn` (Redis at `at`).
    pub fn run<C: ConnectionLike>(
        &self,
        campaign: &Campaign,
        conn: &mut C,
        at: &str,
    ) -> Result<OrderResult, Failure> {
        self.check(campaign)?;
        match self.change {
            Change::Pay => reservations::pay(conn, campaign, self.item, self.order),
            Change::Cancel { reason } => {
                reservations::cancel(conn, campaign, self.item, self.order, reason)
            }
        }
        .map_err(|error| Failure::of(error, at, Retry::Repeat))
    }
}
