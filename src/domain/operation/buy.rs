//! Buy (or reserve, on a campaign with `payment_timeout`): one attempt, as
//! a shopper's request makes it — checked, run through the item layer
//! (one script for a plain item; the home bucket, and a sweep when it is
//! short, for a bucketed one), then, when asked, WAIT until replicas hold it.

use std::time::Duration;

use super::failure::Misdirected;
use super::{Failure, Invalid, Retry, check_id, item_of, limits};
use crate::domain::item::answer::PurchaseAnswer;
use crate::domain::item::{Attempt, SaleItem};
use crate::domain::slot::{BuyRequest, Outcome, TicketClaim};
use crate::model::campaign::{Campaign, Item};
use crate::model::limits::identity_digest;
use crate::model::regions::home_region;
use crate::model::seats::{MAX_SEATS_PER_BUY, SeatAsk};
use crate::redis_client::conn::Conn;
use crate::redis_client::multiplexed::NotSent;
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
    /// The shop's hash of the shopper's identity document (`per_identity_limit`,
    /// docs/limits.md); Redis keeps only a digest of it.
    pub identity: Option<&'a str>,
    /// A seat buy: one attendee identity per seat (the shop's hashes of
    /// their documents), each counted against the item's
    /// `per_identity_limit` (docs/seats.md, "Attendees"); empty: none.
    pub attendees: &'a [String],
    /// A seat item (docs/seats.md): what the buyer asks for, as the door
    /// received it; checked against the item's map by [`Buy::check`].
    pub seats: SeatWish<'a>,
}

/// A seat buy as a door receives it: named seats (`A-12-7`), or the best
/// block of `qty` in a section or a tier; all empty on an item without seats
/// (the best block in any section on one with).
#[derive(Debug, Clone, Default)]
pub struct SeatWish<'a> {
    pub named: &'a [String],
    pub section: Option<&'a str>,
    pub tier: Option<&'a str>,
}

impl SeatWish<'_> {
    /// A buy's qty: named seats are their own count (a qty of 1, the
    /// default of both doors, stands for "as many as named"; any other qty
    /// must match them, which [`Buy::check`] says).
    pub fn qty_of(asked: u32, named: &[String]) -> u32 {
        match (asked, named.len()) {
            (1, n) if n > 1 => n as u32,
            _ => asked,
        }
    }
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
        self.checked(campaign).map(|(item, _)| item)
    }

    /// [`Buy::check`], and the seats asked for on a seat item.
    fn checked<'c>(&self, campaign: &'c Campaign) -> Result<(&'c Item, Option<SeatAsk>), Failure> {
        let item = item_of(campaign, self.item)?;
        check_id("user", self.user, true)?;
        check_id("request_id", self.request_id, false)?;
        if let Some(identity) = self.identity {
            check_id("identity", identity, false)?;
        }
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
        if let Some(here) = &campaign.region
            && let Some(home) = home_region(&campaign.id, &campaign.regions, self.user)
            && &home.name != here
        {
            return Err(Failure::invalid(Invalid::WrongRegion(Box::new(
                Misdirected {
                    user: self.user.to_string(),
                    home: home.name.clone(),
                    here: here.clone(),
                },
            ))));
        }
        if !self.attendees.is_empty() {
            if item.seating.is_none() {
                return Err(Failure::invalid(Invalid::Field {
                    field: "attendees",
                    value: None,
                    problem: format!("are for a seat item; item {} has no seats", item.id),
                }));
            }
            if self.attendees.len() != self.qty as usize {
                return Err(Failure::invalid(Invalid::Field {
                    field: "attendees",
                    value: None,
                    problem: format!(
                        "name {} identities for {} seats: one attendee per seat",
                        self.attendees.len(),
                        self.qty
                    ),
                }));
            }
            for attendee in self.attendees {
                check_id("attendees", attendee, false)?;
            }
        }
        let seats = self.seat_ask(item).map_err(|(field, value, problem)| {
            Failure::invalid(Invalid::Field {
                field,
                value,
                problem,
            })
        })?;
        Ok((item, seats))
    }

    /// The seats asked for, checked against `item`'s map: named seats in one
    /// section, each once, as many as `qty`; a section or tier the map has.
    fn seat_ask(
        &self,
        item: &Item,
    ) -> Result<Option<SeatAsk>, (&'static str, Option<String>, String)> {
        let wish = &self.seats;
        let Some(seating) = &item.seating else {
            if !wish.named.is_empty() || wish.section.is_some() || wish.tier.is_some() {
                return Err((
                    "seats",
                    None,
                    format!(
                        "is for a seat item; item {} has no seats (no `seats:` in the campaign file)",
                        item.id
                    ),
                ));
            }
            return Ok(None);
        };
        if self.qty > MAX_SEATS_PER_BUY {
            return Err((
                "qty",
                Some(self.qty.to_string()),
                format!("is more seats than one buy takes ({MAX_SEATS_PER_BUY})"),
            ));
        }
        if !wish.named.is_empty() {
            if wish.section.is_some() || wish.tier.is_some() {
                return Err((
                    "seats",
                    None,
                    "take no section or tier: the seats say where".to_string(),
                ));
            }
            let mut seats = Vec::with_capacity(wish.named.len());
            for text in wish.named {
                let seat = seating
                    .seat(text)
                    .map_err(|why| ("seats", Some(text.clone()), why))?;
                if seats.contains(&seat) {
                    return Err(("seats", Some(text.clone()), "is named twice".to_string()));
                }
                if let Some(first) = seats
                    .first()
                    .filter(|f: &&crate::model::seats::Seat| f.section != seat.section)
                {
                    return Err((
                        "seats",
                        Some(text.clone()),
                        format!(
                            "is in section {}, {} in section {}: one buy takes seats of one section",
                            seating.sections[seat.section].id,
                            wish.named[0],
                            seating.sections[first.section].id
                        ),
                    ));
                }
                seats.push(seat);
            }
            if seats.len() != self.qty as usize {
                return Err((
                    "qty",
                    Some(self.qty.to_string()),
                    format!("is not the {} seats named", seats.len()),
                ));
            }
            return Ok(Some(SeatAsk::Named(seats)));
        }
        let section = match wish.section {
            Some(id) => Some(seating.section(id).ok_or_else(|| {
                let ids: Vec<&str> = seating.sections.iter().map(|s| s.id.as_str()).collect();
                (
                    "section",
                    Some(id.to_string()),
                    format!(
                        "is not a section of item {} (sections: {})",
                        item.id,
                        ids.join(", ")
                    ),
                )
            })?),
            None => None,
        };
        if let Some(tier) = wish.tier {
            if !seating.tiers().contains(&tier) {
                return Err((
                    "tier",
                    Some(tier.to_string()),
                    format!(
                        "is not a tier of item {} (tiers: {})",
                        item.id,
                        seating.tiers().join(", ")
                    ),
                ));
            }
            if let Some(s) = section.filter(|&s| seating.sections[s].tier != tier) {
                return Err((
                    "tier",
                    Some(tier.to_string()),
                    format!(
                        "is not the tier of section {} ({})",
                        seating.sections[s].id, seating.sections[s].tier
                    ),
                ));
            }
        }
        Ok(Some(SeatAsk::Best {
            tier: wish.tier.map(String::from),
            section,
        }))
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
            // The seats only: the rest was checked before (a request of a
            // wrong buy is never sent), and a region's home is a hash.
            seats: campaign
                .item(self.item)
                .ok()
                .and_then(|item| self.seat_ask(item).ok().flatten()),
        }
    }

    /// Whether the attempt is one script call and nothing after it — an item
    /// whose attempt [is one call](SaleItem::is_one_call), no `wait` — so a
    /// door that answers many requests on few threads makes it with
    /// [`Buy::run_async`], with no blocking worker. A sweep and WAIT (on a
    /// connection of their own) stay with [`Buy::run`].
    /// An item under a limit above it (docs/limits.md) claims first, and a
    /// presented identity is checked against the account's binding: more
    /// than one call.
    pub fn is_one_call(&self, campaign: &Campaign) -> bool {
        self.wait.is_none()
            && self.identity.is_none()
            && self.attendees.is_empty()
            && campaign.item(self.item).is_ok_and(|item| {
                SaleItem::is_one_call_live(item) && !limits::has_limits(campaign, item)
            })
    }

    /// Make the attempt on `conn` (Redis at `at`). With `wait`, `conn` must be
    /// one nobody else writes on: WAIT counts this connection's writes.
    ///
    /// An item under a limit above it claims the limit first and releases
    /// the claim when the item refuses for good (the CLAIM protocol,
    /// [`limits`]).
    pub fn run(&self, campaign: &Campaign, conn: &mut Conn, at: &str) -> Result<Bought, Failure> {
        let item = self.check(campaign)?;
        let request = self.request(campaign);
        let fail = |error| Failure::of(error, at, self.retry());
        // Attendees, one per seat, count in place of the buyer's identity.
        let attendees: Vec<String> = self
            .attendees
            .iter()
            .map(|a| identity_digest(&campaign.id, a))
            .collect();
        let identity = if attendees.is_empty() {
            match limits::resolve_identity(conn, campaign, item, self.user, self.identity)
                .map_err(fail)?
            {
                Ok(identity) => identity,
                Err(refusal) => return Ok(refused(campaign, &request, refusal)),
            }
        } else {
            None
        };
        let claims = limits::Claims::of(
            campaign,
            item,
            self.user,
            self.request_id,
            self.qty,
            identity.as_deref(),
            &attendees,
        );
        let sale = SaleItem::live(campaign, item);
        let attempt = match limits::reserve_claimed(
            conn,
            &sale,
            &claims,
            &request,
            campaign.payment_timeout_ms(),
        )
        .map_err(fail)?
        {
            Ok(attempt) => attempt,
            Err(refusal) => return Ok(refused(campaign, &request, refusal)),
        };
        let waited = match (self.wait, attempt.reply.outcome) {
            (Some((wanted, timeout)), Outcome::Ok) => {
                let written: Vec<&str> = attempt.written.iter().map(String::as_str).collect();
                let acked =
                    replicas::wait_after_buy(conn, &written, wanted, timeout).map_err(|error| {
                        let order = attempt.reply.order_id.as_deref().unwrap_or("-");
                        let error = error.context(format!(
                            "bought order {order} at {at}, but could not wait for replicas"
                        ));
                        Failure::of(error, at, self.retry())
                    })?;
                Some(Waited {
                    wanted,
                    acked,
                    round_trips: written.len() as u32,
                })
            }
            _ => None,
        };
        Ok(answered(campaign, &request, attempt, waited))
    }

    /// [`Buy::run`] on an async connection (`seckill serve`'s shared one) for
    /// an attempt that [is one call](Buy::is_one_call): the same check,
    /// request and answer; only the wait for the script's reply differs. Any
    /// other attempt is refused before anything is sent (`NotSent`).
    pub async fn run_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        campaign: &Campaign,
        conn: &mut C,
        at: &str,
    ) -> Result<Bought, Failure> {
        let item = self.check(campaign)?;
        let request = self.request(campaign);
        let attempt = match self.wait {
            Some((wanted, _)) => Err(anyhow::Error::new(NotSent).context(format!(
                "waiting for {wanted} replicas needs a connection of its own, not a shared one"
            ))),
            None if !self.is_one_call(campaign) => {
                Err(anyhow::Error::new(NotSent).context(format!(
                    "item {} is under a limit above it or the buy carries an identity: \
                     its claims run on a blocking connection",
                    self.item
                )))
            }
            None => {
                SaleItem::live(campaign, item)
                    .reserve_async(conn, &request, campaign.payment_timeout_ms())
                    .await
            }
        }
        .map_err(|error| Failure::of(error, at, self.retry()))?;
        Ok(answered(campaign, &request, attempt, None))
    }

    /// How a client may try again when the attempt may have run.
    fn retry(&self) -> Retry {
        Retry::SameRequestId(self.request_id.to_string())
    }
}

/// The answer of a buy a limit above the item refused: nothing was bought.
fn refused(campaign: &Campaign, request: &BuyRequest, refusal: limits::Refusal) -> Bought {
    let mut answer =
        PurchaseAnswer::refused(request, refusal.outcome).opening(campaign.starts_at_ms);
    answer.problem = Some(refusal.problem);
    Bought {
        answer,
        round_trips: 1,
    }
}

/// The replicas that confirmed an `ok`, how many were asked for, and the
/// WAITs it took.
struct Waited {
    wanted: u32,
    acked: i64,
    round_trips: u32,
}

/// The answer of `attempt` (and of the WAIT after it), with its cost.
fn answered(
    campaign: &Campaign,
    request: &BuyRequest,
    attempt: Attempt,
    waited: Option<Waited>,
) -> Bought {
    let Attempt { reply, cost, .. } = attempt;
    let (outcome, replicas_acked, waits) = match waited {
        Some(w) if w.acked < i64::from(w.wanted) => {
            (Outcome::Unreplicated, Some(w.acked), w.round_trips)
        }
        Some(w) => (reply.outcome, Some(w.acked), w.round_trips),
        None => (reply.outcome, None, 0),
    };
    Bought {
        answer: PurchaseAnswer::of(request, reply, outcome, replicas_acked)
            .opening(campaign.starts_at_ms),
        round_trips: cost.round_trips + waits,
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
                seats: SeatWish::default(),
                identity: None,
                attendees: &[],
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
            seats: SeatWish::default(),
            identity: None,
            attendees: &[],
        }
        .check(&campaign)
        .unwrap_err();
        assert!(matches!(
            unknown.kind,
            FailureKind::Invalid(Invalid::UnknownItem(_))
        ));
    }
}
