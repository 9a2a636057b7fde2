//! `lua/queue_read.lua`: an item's waiting room at one instant, and where
//! given users stand in it (read only). Its call, the standing every queue
//! script answers with, and the reply.

use anyhow::{Context, Result, bail};
use redis::Value;
use serde::Serialize;

super::script_call! {
    /// Read the room and some users' standing: KEYS then the users of `lua/queue_read.lua`.
    QueueRead = "queue_read.lua", Sale;
    // The consumer: consume --metrics-listen reads each room with its item's status.
    roles { buyer, consumer, operator }
    keys { room, queue, registered, risk, admitted, shuffled, active }
    argv {}
    rest { user }
}

/// Where a user stands in a waiting room (lib/admission's `standing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// The room takes registered users only, and this one is not.
    NotRegistered,
    /// Never joined.
    NotQueued,
    /// Joined before `starts_at`: waits for the shuffle at the start.
    Prequeue,
    /// In the queue, not admitted yet.
    Waiting,
    /// Admitted: may buy until `to_ms`.
    Admitted,
    /// The admission ran out.
    Expired,
}

impl State {
    const ALL: [State; 6] = [
        State::NotRegistered,
        State::NotQueued,
        State::Prequeue,
        State::Waiting,
        State::Admitted,
        State::Expired,
    ];

    /// The name the scripts and JSON use.
    pub fn as_str(self) -> &'static str {
        match self {
            State::NotRegistered => "not_registered",
            State::NotQueued => "not_queued",
            State::Prequeue => "prequeue",
            State::Waiting => "waiting",
            State::Admitted => "admitted",
            State::Expired => "expired",
        }
    }

    fn parse(name: &str) -> Option<State> {
        State::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// One user's standing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Standing {
    pub state: State,
    /// The user's position (final once a pre-queue is shuffled); 0 when not queued.
    pub position: i64,
    /// The last position admitted.
    pub serving: i64,
    /// Waiting or in the pre-queue: about this long until the turn, ms.
    pub eta_ms: i64,
    /// Admitted or expired: the admission, Unix ms (Redis clock).
    pub from_ms: Option<i64>,
    pub to_ms: Option<i64>,
}

impl Standing {
    /// Still in line (waiting, or in the pre-queue).
    pub fn waits(&self) -> bool {
        matches!(self.state, State::Waiting | State::Prequeue)
    }

    /// Parse `state, position, serving, eta_ms, from_ms, to_ms` (from and to 0: none).
    pub(crate) fn parse(fields: &[Value]) -> Result<Standing> {
        let [state, position, serving, eta, from, to] = fields else {
            bail!("a standing of {} fields instead of 6", fields.len());
        };
        let state: String = redis::from_redis_value_ref(state)?;
        let Some(state) = State::parse(&state) else {
            bail!("unknown waiting-room state {state:?}");
        };
        let number = |v: &Value| -> Result<i64> { Ok(redis::from_redis_value_ref(v)?) };
        let (from, to) = (number(from)?, number(to)?);
        let admitted = matches!(state, State::Admitted | State::Expired);
        Ok(Standing {
            state,
            position: number(position)?,
            serving: number(serving)?,
            eta_ms: number(eta)?,
            from_ms: admitted.then_some(from),
            to_ms: admitted.then_some(to),
        })
    }
}

/// The room's figures at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RoomFigures {
    /// Redis time of the read, Unix ms.
    pub now_ms: i64,
    /// Whether Redis holds the room (preheat writes it).
    pub present: bool,
    /// `rate` or `max_active`.
    pub mode: String,
    /// Positions handed out: users who joined.
    pub joined: i64,
    /// The last position admitted.
    pub serving: i64,
    /// max_active: admitted places not given back yet.
    pub active: i64,
    /// When the room's clock started (rate mode), Unix ms.
    pub opened_at_ms: Option<i64>,
    /// Pauses so far in total, the current one included.
    pub paused_ms: i64,
    /// Paused now.
    pub paused: bool,
    /// Users who joined before `starts_at` (the pre-queue).
    pub prequeue_last: i64,
    /// The pre-queue is shuffled (or had nobody to shuffle).
    pub shuffled: bool,
    /// A bucketed item: positions whose admissions reached their home bucket.
    pub fanned: i64,
    /// The wait of someone joining now, ms.
    pub tail_eta_ms: i64,
    /// SHA-256 of the shuffle seed, published before the sale (hex).
    pub seed_sha256: String,
    /// The seed itself, once the shuffle is done (hex).
    pub seed: Option<String>,
    /// The settings as preheat wrote them.
    pub config: String,
    /// Users registered (a room with registration).
    pub registered: i64,
    /// Who holds the room paused: `operator` (`queue pause`), `switch` (the
    /// kill switch), both, or none (`""`).
    pub paused_by: String,
    /// Redis time of the last pass of a `seckill queue admit` (its heartbeat,
    /// `admitter_at_ms` in the room hash), Unix ms; `None` when none ever ran.
    pub admitter_at_ms: Option<i64>,
    /// That admitter's `--interval`, ms (0: a one-shot pass).
    pub admitter_every_ms: i64,
}

/// Parse `{room, standing...}` for the users asked, in their order.
pub(crate) fn parse_reply(reply: Value, users: &[&str]) -> Result<(RoomFigures, Vec<Standing>)> {
    let parts: Vec<Vec<Value>> = redis::from_redis_value(reply)?;
    let Some((room, standings)) = parts.split_first() else {
        bail!("the queue read script answered nothing");
    };
    if standings.len() != users.len() {
        bail!(
            "the queue read script answered {} standings for {} users",
            standings.len(),
            users.len()
        );
    }
    let figures = figures(room).context("the room's figures")?;
    let standings = standings
        .iter()
        .map(|fields| Standing::parse(fields.get(1..).unwrap_or_default()))
        .collect::<Result<Vec<_>>>()?;
    Ok((figures, standings))
}

fn figures(fields: &[Value]) -> Result<RoomFigures> {
    if fields.len() != 20 {
        bail!("{} fields instead of 20", fields.len());
    }
    let int = |i: usize| -> Result<i64> { Ok(redis::from_redis_value_ref(&fields[i])?) };
    let text = |i: usize| -> Result<String> { Ok(redis::from_redis_value_ref(&fields[i])?) };
    let opened = int(6)?;
    let seed = text(14)?;
    Ok(RoomFigures {
        now_ms: int(0)?,
        present: int(1)? == 1,
        mode: text(2)?,
        joined: int(3)?,
        serving: int(4)?,
        active: int(5)?,
        opened_at_ms: (opened >= 0).then_some(opened),
        paused_ms: int(7)?,
        paused: int(8)? == 1,
        prequeue_last: int(9)?,
        shuffled: int(10)? == 1,
        fanned: int(11)?,
        tail_eta_ms: int(12)?,
        seed_sha256: text(13)?,
        seed: (!seed.is_empty()).then_some(seed),
        config: text(15)?,
        registered: int(16)?,
        paused_by: text(17)?,
        admitter_at_ms: Some(int(18)?).filter(|at| *at >= 0),
        admitter_every_ms: int(19)?,
    })
}
