//! `lua/buy.lua`, the whole purchase: kill switch, window, rate limit, dedupe,
//! stock and order stream in one atomic step (`lua/lib/purchase.lua`), and
//! the waiting room's admission when the item has one (`lua/lib/admission.lua`).
//! Its call, outcomes and reply.

use anyhow::{Result, bail};
use redis::Value;
use serde::Serialize;

use crate::model::exit_codes;

super::script_call! {
    /// One purchase attempt: KEYS then ARGV of `lua/buy.lua`.
    Buy = "buy.lua", Sale;
    roles { buyer, operator }
    keys { meta, stock, buyers, buyer_orders, requests, orders, rate, reservations, deadlines, reservation_counts }
    optional { room, queue, registered, risk, admitted, active, shuffled, passes, revoked }
    argv { user, qty, request_id, order_id, campaign, item, payment_timeout_ms, arrival_ms, ticket_key, node }
}

/// What the buy script decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    SoldOut,
    Duplicate,
    RateLimited,
    Closed,
    NotStarted,
    Ended,
    NotPreheated,
    /// A stored value the script reads is malformed; nothing was written.
    CorruptState,
    /// The request id already bought another qty; the original order is named.
    RequestIdReused,
    /// `--wait-replicas`: bought, but fewer replicas confirmed it in time
    /// (decided after the script by WAIT; the script never returns it).
    Unreplicated,
    /// The item's waiting room takes registered users only, and this one is not.
    NotRegistered,
    /// The item has a waiting room and the user never joined it.
    NotQueued,
    /// The user is in the waiting room, not admitted yet (position, serving
    /// position and wait are in [`BuyReply::waiting`]).
    NotAdmitted,
    /// The user's admission ran out (`admission_ttl`) before a buy.
    AdmissionExpired,
    /// The item's Redis is not the process preheat loaded the stock on (a
    /// failover, a restart, a restore): nothing is sold until `seckill
    /// reconcile --fence` (docs/failover.md, "The fence"); nothing was written.
    Fenced,
    /// A seat item: a named seat is not free (held, sold or blocked); the
    /// seats and why are in [`BuyReply::problem`]; nothing was written.
    SeatTaken,
    /// A seat item: no block of that many free seats side by side in one
    /// row; the closest is in [`BuyReply::problem`]; nothing was written.
    NoBlock,
    /// A limit above the item (a limit group's `per_user_limit`, the item's
    /// `per_identity_limit`) would be passed: nothing was bought
    /// (docs/limits.md); the problem says which limit and what is held.
    LimitReached,
    /// The item has a `per_identity_limit` and the buy carries no identity
    /// (none given, none bound by `seckill register --identity`): nothing sent to the item.
    IdentityRequired,
    /// The account is bound to an identity and the buy presents another one:
    /// nothing sent to the item.
    IdentityMismatch,
}

impl Outcome {
    /// Every outcome, in exit-code order.
    pub const ALL: [Outcome; 21] = [
        Outcome::Ok,
        Outcome::SoldOut,
        Outcome::Duplicate,
        Outcome::RateLimited,
        Outcome::Closed,
        Outcome::NotStarted,
        Outcome::Ended,
        Outcome::NotPreheated,
        Outcome::CorruptState,
        Outcome::RequestIdReused,
        Outcome::Unreplicated,
        Outcome::NotRegistered,
        Outcome::NotQueued,
        Outcome::NotAdmitted,
        Outcome::AdmissionExpired,
        Outcome::Fenced,
        Outcome::SeatTaken,
        Outcome::NoBlock,
        Outcome::LimitReached,
        Outcome::IdentityRequired,
        Outcome::IdentityMismatch,
    ];

    /// The name used by the script and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::SoldOut => "sold_out",
            Outcome::Duplicate => "duplicate",
            Outcome::RateLimited => "rate_limited",
            Outcome::Closed => "closed",
            Outcome::NotStarted => "not_started",
            Outcome::Ended => "ended",
            Outcome::NotPreheated => "not_preheated",
            Outcome::CorruptState => "corrupt_state",
            Outcome::RequestIdReused => "request_id_reused",
            Outcome::Unreplicated => "unreplicated",
            Outcome::NotRegistered => "not_registered",
            Outcome::NotQueued => "not_queued",
            Outcome::NotAdmitted => "not_admitted",
            Outcome::AdmissionExpired => "admission_expired",
            Outcome::Fenced => "fenced",
            Outcome::SeatTaken => "seat_taken",
            Outcome::NoBlock => "no_block",
            Outcome::LimitReached => "limit_reached",
            Outcome::IdentityRequired => "identity_required",
            Outcome::IdentityMismatch => "identity_mismatch",
        }
    }

    /// The exit code of `seckill buy` for this outcome.
    pub fn exit_code(self) -> i32 {
        exit_codes::of_outcome(self.as_str())
    }

    /// Parse the script's outcome name.
    pub(crate) fn parse(name: &[u8]) -> Option<Outcome> {
        Outcome::ALL
            .into_iter()
            .find(|o| o.as_str().as_bytes() == name)
    }
}

/// The reply of one attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuyReply {
    pub outcome: Outcome,
    /// The new or remembered order id (`ok`), the existing one (`duplicate`).
    pub order_id: Option<String>,
    /// Units left after the attempt; `None` when the item is not preheated.
    pub stock_left: Option<i64>,
    /// `corrupt_state` only: which key holds what malformed value.
    pub problem: Option<String>,
    /// An `ok` that is a reservation (`payment_timeout`): its deadline and state.
    pub reservation: Option<Reservation>,
    /// `not_admitted` / `admission_expired`: where the user stands in the
    /// waiting room (docs/waiting-room.md).
    pub waiting: Option<Waiting>,
    /// A seat item's `ok`: its seats, `A-12-7` (docs/seats.md).
    pub seats: Option<Vec<String>>,
}

/// Where a refused shopper stands in the waiting room.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Waiting {
    /// The user's position (0 when a bucket only knows "no admission here yet").
    pub position: i64,
    /// The last position admitted.
    pub serving: i64,
    /// About this long until the user's turn (`not_admitted`), ms.
    pub eta_ms: i64,
    /// `admission_expired`: the admission that ran out, Unix ms (Redis clock).
    pub admitted_from_ms: Option<i64>,
    pub admitted_until_ms: Option<i64>,
    /// `not_admitted` in a room whose turns come only through `seckill queue
    /// admit --loop` (max_active, a pre-queue to shuffle, a bucketed item's
    /// fan-out) while none runs: the wait will not end by itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs_admitter: Option<AdmitterSilence>,
}

/// How long the admitter a room needs has been silent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AdmitterSilence {
    /// Since the last pass of a `seckill queue admit`, ms; `None`: none ever ran.
    pub silent_ms: Option<i64>,
}

impl AdmitterSilence {
    /// The lua/lib/admitter_silent number: ms since the last pass, -1 for never.
    pub(crate) fn of_ms(ms: i64) -> AdmitterSilence {
        AdmitterSilence {
            silent_ms: (ms >= 0).then_some(ms),
        }
    }

    /// "this room needs `seckill queue admit --loop`; none has run for 12s".
    pub fn describe(&self) -> String {
        let since = match self.silent_ms {
            Some(ms) => format!(
                "none has run for {}",
                crate::util::text::human_duration_ms(ms)
            ),
            None => "none has run yet".to_string(),
        };
        format!("this room needs `seckill queue admit --loop`; {since}")
    }
}

impl Waiting {
    /// "N people ahead of you, about M s", for a page or a table.
    pub fn describe(&self) -> String {
        if let Some(until) = self.admitted_until_ms {
            return format!(
                "the admission ran out at {}; joining again goes to the tail",
                crate::util::text::time_or_dash(Some(until))
            );
        }
        let ahead = (self.position - self.serving - 1).max(0);
        let wait = crate::util::text::human_duration_ms(self.eta_ms.max(0));
        let stalled = self
            .needs_admitter
            .map(|silence| format!("; {}", silence.describe()))
            .unwrap_or_default();
        if self.position == 0 {
            return format!("not admitted yet; about {wait}{stalled}");
        }
        format!(
            "position {} · serving {} · {ahead} ahead of you · about {wait}{stalled}",
            self.position, self.serving
        )
    }
}

/// The reservation an `ok` holds (campaigns with `payment_timeout`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reservation {
    /// Pay before this, Unix ms on the Redis clock.
    pub deadline_ms: i64,
    /// `reserved` for a new one; a retried request id's order may be `paid`,
    /// `expired` or `cancelled` by now.
    pub state: String,
}

/// The outcome of a reply (its first field) without reading the rest: the
/// load-test hot loop counts outcomes only.
pub(crate) fn outcome_of(reply: &Value) -> Result<Outcome> {
    let Value::Array(fields) = reply else {
        bail!("buy script answered {reply:?}");
    };
    let Some(Value::BulkString(name)) = fields.first() else {
        bail!("buy script answered {reply:?}");
    };
    match Outcome::parse(name) {
        Some(outcome) => Ok(outcome),
        None => bail!(
            "buy script returned an unknown outcome {:?}",
            String::from_utf8_lossy(name)
        ),
    }
}

/// Parse the reply `{outcome, order_id, stock_left, deadline_ms, reservation_state}`.
pub(crate) fn parse_reply(reply: Value) -> Result<BuyReply> {
    let outcome = outcome_of(&reply)?;
    let (_, order_id, stock_left, deadline_ms, state): (Value, String, i64, i64, String) =
        redis::from_redis_value(reply)?;
    // corrupt_state puts the problem ("<key>: <what>") where an order id
    // would be; the waiting room's refusals their detail.
    let (order_id, problem, waiting) = match outcome {
        Outcome::CorruptState => (String::new(), Some(order_id), None),
        // "<recorded run_id> <seen run_id>": which process preheat loaded
        // the stock on, and which one answered.
        Outcome::Fenced => (String::new(), Some(fence_problem(&order_id)), None),
        // The seats refused and why, or the closest block.
        Outcome::SeatTaken | Outcome::NoBlock => (String::new(), Some(order_id), None),
        Outcome::NotAdmitted | Outcome::AdmissionExpired => {
            let waiting = waiting_of(outcome, &order_id)?;
            (String::new(), None, Some(waiting))
        }
        _ => (order_id, None, None),
    };
    Ok(BuyReply {
        outcome,
        order_id: (!order_id.is_empty()).then_some(order_id),
        stock_left: (stock_left >= 0).then_some(stock_left),
        problem,
        reservation: (!state.is_empty()).then_some(Reservation { deadline_ms, state }),
        waiting,
        seats: None,
    })
}

/// Parse `lua/seat_buy.lua`'s reply: [`parse_reply`]'s five fields and the seats.
pub(crate) fn parse_seat_reply(reply: Value) -> Result<BuyReply> {
    let Value::Array(mut fields) = reply else {
        bail!("seat buy script answered {reply:?}");
    };
    if fields.len() != 6 {
        bail!("seat buy script answered {} fields, not 6", fields.len());
    }
    let seats: String = redis::from_redis_value(fields.pop().expect("six fields"))?;
    let mut parsed = parse_reply(Value::Array(fields))?;
    if parsed.outcome == Outcome::Ok {
        parsed.seats = Some(
            seats
                .split(',')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
        );
    }
    Ok(parsed)
}

/// A `fenced` reply's detail, said for the operator.
fn fence_problem(detail: &str) -> String {
    match detail.split_once(' ') {
        Some((recorded, seen)) if !seen.is_empty() && recorded != seen => format!(
            "fenced: preheat loaded the stock on Redis process {recorded}, and {seen} answers \
             now (a failover, a restart or a restore may have lost sales); run `seckill \
             reconcile --fence`"
        ),
        _ => "fenced: the item's meta says fenced = 1; run `seckill reconcile --fence`".to_string(),
    }
}

/// `not_admitted`'s "<position> <serving> <eta ms>" (then the admitter's
/// silence, lib/admitter_silent, when the room waits on one none runs),
/// `admission_expired`'s "<from ms> <to ms>".
fn waiting_of(outcome: Outcome, detail: &str) -> Result<Waiting> {
    let numbers: Vec<i64> = detail
        .split(' ')
        .map(str::parse)
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| anyhow::anyhow!("buy script answered {outcome:?} with {detail:?}"))?;
    match (outcome, numbers.as_slice()) {
        (Outcome::NotAdmitted, &[position, serving, eta_ms, ref silent @ ..])
            if silent.len() <= 1 =>
        {
            Ok(Waiting {
                position,
                serving,
                eta_ms,
                admitted_from_ms: None,
                admitted_until_ms: None,
                needs_admitter: silent.first().map(|ms| AdmitterSilence::of_ms(*ms)),
            })
        }
        (Outcome::AdmissionExpired, &[from, to]) => Ok(Waiting {
            position: 0,
            serving: 0,
            eta_ms: 0,
            admitted_from_ms: Some(from),
            admitted_until_ms: Some(to),
            needs_admitter: None,
        }),
        _ => bail!("buy script answered {outcome:?} with {detail:?}"),
    }
}
