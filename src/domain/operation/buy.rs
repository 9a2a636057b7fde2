//! Buy (or reserve, on a campaign with `payment_timeout`): one attempt, as
//! a shopper's request makes it — checked, run through the item layer
//! (one script for a plain item; the home bucket, and a sweep when it is
//! short, for a bucketed one), then, when asked, WAIT until replicas hold it.

use std::time::Duration;

use super::{Failure, Invalid, Retry, check_id, item_of};
use crate::domain::item::answer::PurchaseAnswer;
use crate::domain::item::{Attempt, SaleItem};
use crate::domain::slot::{BuyRequest, Outcome, TicketClaim};
use crate::model::campaign::{Campaign, Item};
use crate::redis_client::conn::Conn;
use crate::redis_client::replicas;

/// One attempt's request.
#[derive(Debug, Clone)]
pub struct Buy<'a> {
    pub item: &'a str,
    pub user: &'a str,
    pub qty: u32,
    /// The idempotency key: the same id again answers the first attempt's
    /// `ok` and buys nothing more.
    pub request_id: &'a str,
    /// After an `ok`, WAIT until this many replicas confirmed it, at most
    /// this long; fewer is the outcome `unreplicated`.
    pub wait: Option<(u32, Duration)>,
    /// A ticket room: the shopper's ticket, verified by the door.
    pub ticket: Option<TicketClaim>,
}

/// What the attempt decided, and what it cost.
#[derive(Debug)]
pub struct Bought {
    pub answer: PurchaseAnswer,
    /// Round trips, transfers and sweeps the attempt took.
    pub round_trips: u32,
}

impl Buy<'_> {
    /// The request checked against `campaign`: nothing is sent for a wrong one.
    pub fn check<'c>(&self, campaign: &'c Campaign) -> Result<&'c Item, Failure> {
        let item = item_of(campaign, self.item)?;
        check_id("user", self.user, true)?;
        check_id("request_id", self.request_id, false)?;
        let problem = match self.qty {
            0 => Some("0 is not at least 1".to_string()),
            qty if qty > campaign.per_user_limit => Some(format!(
                "{qty} is more than per_user_limit {} of campaign {}",
                campaign.per_user_limit, campaign.id
            )),
            _ => None,
        };
        if let Some(problem) = problem {
            return Err(Failure::invalid(Invalid::Field {
                field: "qty",
                value: None,
                problem,
            }));
        }
        Ok(item)
    }

    /// The request as the item layer takes it.
    pub fn request<'r>(&'r self, campaign: &'r Campaign) -> BuyRequest<'r> {
        BuyRequest {
            campaign: &campaign.id,
            item: self.item,
            user: self.user,
            qty: self.qty,
            request_id: Some(self.request_id),
            ticket: self.ticket.clone(),
        }
    }

    /// Make the attempt on `conn` (Redis at `at`). With `wait`, `conn` must be
    /// one nobody else writes on: WAIT counts this connection's writes.
    pub fn run(&self, campaign: &Campaign, conn: &mut Conn, at: &str) -> Result<Bought, Failure> {
        let item = self.check(campaign)?;
        let request = self.request(campaign);
        let retry = || Retry::SameRequestId(self.request_id.to_string());
        let Attempt {
            reply,
            cost,
            written,
        } = SaleItem::live(campaign, item)
            .reserve(conn, &request, campaign.payment_timeout_ms())
            .map_err(|error| Failure::of(error, at, retry()))?;
        let (outcome, replicas_acked, mut round_trips) = match (self.wait, reply.outcome) {
            (Some((wanted, timeout)), Outcome::Ok) => {
                let written: Vec<&str> = written.iter().map(String::as_str).collect();
                let acked =
                    replicas::wait_after_buy(conn, &written, wanted, timeout).map_err(|error| {
                        let order = reply.order_id.as_deref().unwrap_or("-");
                        let error = error.context(format!(
                            "bought order {order} at {at}, but could not wait for replicas"
                        ));
                        Failure::of(error, at, retry())
                    })?;
                let outcome = match acked < i64::from(wanted) {
                    true => Outcome::Unreplicated,
                    false => Outcome::Ok,
                };
                (outcome, Some(acked), written.len() as u32)
            }
            _ => (reply.outcome, None, 0),
        };
        round_trips += cost.round_trips;
        Ok(Bought {
            answer: PurchaseAnswer::of(&request, reply, outcome, replicas_acked)
                .opening(campaign.starts_at_ms),
            round_trips,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::operation::FailureKind;

    fn campaign() -> Campaign {
        Campaign::parse(
            "campaign: t\nper_user_limit: 1\nitems:\n  - { id: \"1\", name: one, price: \"1.00\", stock: 5 }\n",
            std::path::Path::new("t.yaml"),
        )
        .unwrap()
    }

    /// What the buy checks before anything is sent, field by field.
    #[test]
    fn requests_are_checked_field_by_field() {
        let campaign = campaign();
        let check = |user: &str, qty, request_id: &str| {
            Buy {
                item: "1",
                user,
                qty,
                request_id,
                wait: None,
                ticket: None,
            }
            .check(&campaign)
            .map(|_| ())
            .map_err(|f| f.kind)
        };
        assert!(check("u", 1, "r").is_ok());
        assert!(check("", 1, "r").is_err());
        assert!(check("u", 1, "").is_err());
        assert!(check("u", 2, "r").is_err());
        assert!(check("u", 0, "r").is_err());
        assert!(check(&"x".repeat(129), 1, "r").is_err());
        assert!(check("a\u{7}b", 1, "r").is_err());
        let unknown = Buy {
            item: "nope",
            user: "u",
            qty: 1,
            request_id: "r",
            wait: None,
            ticket: None,
        }
        .check(&campaign)
        .unwrap_err();
        assert!(matches!(
            unknown.kind,
            FailureKind::Invalid(Invalid::UnknownItem(_))
        ));
    }
}
