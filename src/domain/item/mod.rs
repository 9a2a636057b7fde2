//! The item layer: the one place that knows how an item's stock lies in
//! Redis — one slot (a plain item) or N buckets over several Redis Cluster
//! masters (`buckets: N`, docs/buckets.md) — and offers what the commands do
//! with an item without their ever asking which: buy or reserve, preheat,
//! read its state, flip its kill switch, reset it, list its order streams.
//!
//! The item's [`shape`] is decided once, when the item is built: a plain
//! item is one slot ([`slot`]); a bucketed item runs the same slot
//! operations on every bucket plus what buckets add ([`buckets`]: the sweep
//! with logged transfers, the all-or-nothing preheat, the sell-out proof).
//! Every operation that differs is one `match` on the shape, so a new kind
//! of item is a compile error at each place that needs its arm.
//!
//! May import: domain::waiting_room, domain::seats, domain::buckets, domain::slot, domain::kill_switch, redis_client, model, util.

pub mod answer;
pub mod sell_out;
pub mod shape;

use anyhow::{Context, Result};
use redis::{Commands, ConnectionLike};
use serde::Serialize;

use crate::domain::buckets;
use crate::domain::buckets::buy::BuyCost;
pub(crate) use crate::domain::buckets::ledger::{MAX_READINGS, Reading};
pub(crate) use crate::domain::buckets::rebalance::Pass;
use crate::domain::buckets::scripts::HomeRoom;
pub(crate) use crate::domain::buckets::scripts::{Snapshot, Transfer};
use crate::domain::buckets::state::{BucketPreheat, BucketStatus};
use crate::domain::kill_switch::{self, Flip};
use crate::domain::seats;
use crate::domain::slot::{
    self, BuyReply, BuyRequest, ItemState, Outcome, PreheatMode, PreheatReport, PreheatStatus,
};
use crate::domain::waiting_room::{self, Room, RoomPreheat, Setup};
use crate::model::campaign::{Campaign, Item};
use crate::model::keys::{ItemKeys, LIVE_PREFIX};
use crate::model::layout::{BucketKeys, Layout};
use crate::redis_client::multiplexed::NotSent;
use shape::Shape;

/// One item of a campaign: its shape (where its stock is) and its waiting
/// room, both resolved when it is built.
#[derive(Debug, Clone)]
pub struct SaleItem<'a> {
    pub campaign: &'a Campaign,
    pub(crate) item: &'a Item,
    shape: Shape,
    room: Option<Room>,
}

/// One purchase attempt's answer, and what it cost.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub reply: BuyReply,
    /// Round trips, transfers and sweeps (a plain item: one round trip).
    pub cost: BuyCost,
    /// One key per slot the attempt may have written to (for WAIT).
    pub(crate) written: Vec<String>,
}

impl Attempt {
    /// The attempt of a plain item: one script call on the slot whose stock
    /// key is `stock`.
    fn one_call(reply: BuyReply, stock: String) -> Attempt {
        Attempt {
            reply,
            cost: BuyCost {
                round_trips: 1,
                ..BuyCost::default()
            },
            written: vec![stock],
        }
    }
}

/// One item's preheat: its status, and each bucket's for a bucketed item.
#[derive(Debug, Clone, Serialize)]
pub struct ItemPreheat {
    #[serde(flatten)]
    pub(crate) report: PreheatReport,
    /// The item's bucket count (1 = one slot, the plain layout).
    pub(crate) buckets: u32,
    /// Each bucket's share and status (bucketed items only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) per_bucket: Vec<BucketPreheat>,
    /// Why the whole item was refused before any slot was touched (its layout
    /// in Redis differs from the file's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) refused_because: Option<String>,
    /// The item's waiting room, when the file turns one on (docs/waiting-room.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) waiting_room: Option<RoomPreheat>,
}

impl ItemPreheat {
    /// Whether the item or any of its slots was left as it was.
    pub(crate) fn kept_anywhere(&self) -> bool {
        let kept = |r: &PreheatReport| r.status == PreheatStatus::Kept;
        kept(&self.report) || self.per_bucket.iter().any(|b| kept(&b.report))
    }

    /// Whether anything was (or, in a dry run, would be) written.
    pub(crate) fn writes(&self) -> bool {
        self.report.status.writes() || self.per_bucket.iter().any(|b| b.report.status.writes())
    }
}

/// How the item's slots stand, for `shutdown-switch`: how many buckets a
/// bucketed item has closed and, when asked, each bucket's switch and stock.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SlotsView {
    /// The item's bucket count (docs/buckets.md); 1 = one slot.
    pub(crate) buckets: u32,
    /// Bucketed items: how many buckets are closed (`closed` means all are).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) buckets_closed: Option<u32>,
    /// When asked: each bucket's switch, slot, stock and pending transfers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) per_bucket: Option<Vec<BucketStatus>>,
}

impl SlotsView {
    /// "ON (closed)", "off", or "PARTLY ON (k/N buckets closed)".
    pub(crate) fn switch_text(&self, closed: bool) -> String {
        match self.buckets_closed {
            Some(k) if k > 0 && k < self.buckets => {
                format!("PARTLY ON ({k}/{} buckets closed)", self.buckets)
            }
            _ if closed => "ON (closed)".to_string(),
            _ => "off".to_string(),
        }
    }
}

impl<'a> SaleItem<'a> {
    /// `item` of a live campaign, laid out as the file says.
    pub fn live(campaign: &'a Campaign, item: &'a Item) -> SaleItem<'a> {
        SaleItem::under(LIVE_PREFIX, campaign, item)
    }

    /// `item` under `prefix` (the live sale's, or the load test's).
    pub(crate) fn under(prefix: &str, campaign: &'a Campaign, item: &'a Item) -> SaleItem<'a> {
        SaleItem::laid_out(
            Layout::new(prefix, &campaign.id, &item.id, item.buckets),
            campaign,
            item,
        )
    }

    /// `item` laid out as `layout`, its shape and room resolved from it.
    fn laid_out(layout: Layout, campaign: &'a Campaign, item: &'a Item) -> SaleItem<'a> {
        let shape = match &item.seating {
            Some(seating) => Shape::seated(layout, seating.clone()),
            None => Shape::of(layout),
        };
        let prefix = &shape.layout().prefix;
        let room = Room::of(prefix, campaign, item, shape.fan_out_targets());
        SaleItem {
            campaign,
            item,
            shape,
            room,
        }
    }

    /// Every item of `campaign` (or only `only`), live.
    pub(crate) fn select(campaign: &'a Campaign, only: Option<&str>) -> Result<Vec<SaleItem<'a>>> {
        Ok(campaign
            .select_items(only)?
            .into_iter()
            .map(|item| SaleItem::live(campaign, item))
            .collect())
    }

    /// The item id.
    pub fn id(&self) -> &'a str {
        &self.item.id
    }

    /// The item's waiting room, when the file turns one on (docs/waiting-room.md).
    pub fn room(&self) -> Option<&Room> {
        self.room.as_ref()
    }

    /// [`SaleItem::room`], taken out of the item.
    pub fn into_room(self) -> Option<Room> {
        self.room
    }

    /// How the item's stock lies in Redis.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Where the item's keys are.
    pub fn layout(&self) -> &Layout {
        self.shape.layout()
    }

    /// Every slot's keys, in bucket order (one for a plain item).
    pub fn slots(&self) -> Vec<BucketKeys> {
        self.shape.slots()
    }

    /// The slot holding `user`'s purchases, reservations and lookups.
    pub fn home(&self, user: &str) -> BucketKeys {
        self.shape.home(user)
    }

    /// The bucket number of `slot` when the item is bucketed (what reports show).
    pub(crate) fn bucket_of(&self, slot: &BucketKeys) -> Option<u32> {
        self.shape.bucket_of(slot)
    }

    /// The scripts one buy of this item may run, for `buy --dry-run`, which
    /// proves a credential may run each before the sale: a plain item's one
    /// call; a bucketed item's home call, the sweep's take from and credit
    /// to other buckets, and the room's read behind a refusal when it has a
    /// room.
    pub(crate) fn buy_scripts(&self) -> Vec<&'static crate::redis_client::scripts::Spec> {
        use crate::redis_client::scripts::{
            bucket_buy, bucket_credit, bucket_take, buy, queue_read, seat_buy,
        };
        match &self.shape {
            Shape::Plain(_) => vec![&buy::SPEC],
            Shape::Seated(..) => vec![&seat_buy::SPEC],
            Shape::Bucketed(_) => {
                let mut scripts = vec![&bucket_buy::SPEC, &bucket_take::SPEC, &bucket_credit::SPEC];
                if self.room.is_some() {
                    scripts.push(&queue_read::SPEC);
                }
                scripts
            }
        }
    }

    /// Whether the item's units are seats (docs/seats.md): its slots carry
    /// the seats' state, which pay and release move with the order.
    pub(crate) fn has_seats(&self) -> bool {
        matches!(self.shape, Shape::Seated(..))
    }

    /// Whether stock can move between the item's slots (transfers, the rebalancer).
    pub(crate) fn moves_stock_between_slots(&self) -> bool {
        self.shape.moves_stock()
    }

    /// The item as Redis recorded it at preheat (its bucket count marker),
    /// which decides where its orders are whatever the file says now.
    pub(crate) fn recorded<C: ConnectionLike>(&self, conn: &mut C) -> Result<SaleItem<'a>> {
        let layout = self.layout();
        let marker = layout.marker();
        let recorded: Option<u32> = conn
            .get(&marker)
            .with_context(|| format!("cannot read {marker}"))?;
        let layout = Layout {
            buckets: recorded.unwrap_or(layout.buckets).max(1),
            ..layout.clone()
        };
        Ok(SaleItem::laid_out(layout, self.campaign, self.item))
    }

    /// One purchase attempt (`payment_timeout_ms` > 0: a reservation due that
    /// long after it, on the Redis clock). A plain item is one call of
    /// `lua/buy.lua`; a bucketed one starts in the buyer's home bucket and
    /// sweeps the others when it is short (docs/buckets.md, "The buy path").
    pub fn reserve<C: ConnectionLike>(
        &self,
        conn: &mut C,
        request: &BuyRequest,
        payment_timeout_ms: u64,
    ) -> Result<Attempt> {
        match &self.shape {
            Shape::Plain(layout) => {
                let keys = layout.bucket(0).keys;
                let room_keys = self.room.as_ref().map(|r| &r.room);
                let reply = slot::reserve(conn, &keys, request, payment_timeout_ms, room_keys)?;
                Ok(Attempt::one_call(reply, keys.stock))
            }
            Shape::Bucketed(layout) => {
                let room = self.room.as_ref();
                let (mut reply, mut cost) = buckets::buy::reserve(
                    conn,
                    layout,
                    request,
                    payment_timeout_ms,
                    match room {
                        None => HomeRoom::None,
                        Some(r) if r.settings.is_ticket() => HomeRoom::Ticket,
                        Some(_) => HomeRoom::Exact,
                    },
                )?;
                let exact = room.filter(|r| !r.settings.is_ticket());
                refine_in_room(conn, exact, request.user, &mut reply, &mut cost)?;
                // One round trip wrote to the home bucket only; a sweep may have
                // debited, settled or marked any bucket.
                let written = if cost.round_trips > 1 {
                    layout.all().into_iter().map(|b| b.keys.stock).collect()
                } else {
                    vec![layout.home(request.user).keys.stock]
                };
                Ok(Attempt {
                    reply,
                    cost,
                    written,
                })
            }
            Shape::Seated(layout, seating) => {
                let (reply, cost) =
                    seats::reserve(conn, layout, seating, request, payment_timeout_ms)?;
                Ok(Attempt {
                    reply,
                    cost,
                    written: layout.all().into_iter().map(|b| b.keys.stock).collect(),
                })
            }
        }
    }

    /// Whether an attempt is one script call whatever its answer (a plain
    /// item): what [`SaleItem::reserve_async`] makes. A bucketed item's
    /// attempt may sweep the other buckets, blocking ([`SaleItem::reserve`]).
    pub fn is_one_call(&self) -> bool {
        match &self.shape {
            Shape::Plain(_) => true,
            Shape::Bucketed(_) | Shape::Seated(..) => false,
        }
    }

    /// [`SaleItem::is_one_call`] of `item` live, without building it (no
    /// keys are laid out: a door asks this per request).
    pub fn is_one_call_live(item: &Item) -> bool {
        !Shape::is_bucketed(item.buckets) && item.seating.is_none()
    }

    /// [`SaleItem::reserve`] on an async connection, for a door that answers
    /// many attempts on few threads (`seckill serve`): the same script call,
    /// keys and answer for an item that [is one call](SaleItem::is_one_call).
    /// Any other is refused before anything is sent ([`NotSent`]): its sweep
    /// runs on a blocking connection.
    pub async fn reserve_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
        request: &BuyRequest<'_>,
        payment_timeout_ms: u64,
    ) -> Result<Attempt> {
        match &self.shape {
            Shape::Plain(layout) => {
                let keys = layout.bucket(0).keys;
                let room_keys = self.room.as_ref().map(|r| &r.room);
                let reply =
                    slot::reserve_async(conn, &keys, request, payment_timeout_ms, room_keys)
                        .await?;
                Ok(Attempt::one_call(reply, keys.stock))
            }
            Shape::Bucketed(_) | Shape::Seated(..) => {
                Err(anyhow::Error::new(NotSent).context(format!(
                    "item {} has buckets or seats: its attempt runs on a blocking connection",
                    self.item.id
                )))
            }
        }
    }

    /// [`SaleItem::reserve`] with no payment timeout: an `ok` is final.
    pub fn buy<C: ConnectionLike>(&self, conn: &mut C, request: &BuyRequest) -> Result<Attempt> {
        self.reserve(conn, request, 0)
    }

    /// Load (or, with `dry_run`, only decide) the file's stock and metadata.
    pub fn preheat<C: ConnectionLike>(
        &self,
        conn: &mut C,
        mode: PreheatMode,
        dry_run: bool,
    ) -> Result<ItemPreheat> {
        self.preheat_stock(conn, self.item.stock, mode, dry_run)
    }

    /// [`SaleItem::preheat`] with `stock` instead of the file's (a recovery
    /// loads what is left after the stored orders). A bucketed item splits it
    /// over its buckets, all or none; an item whose layout in Redis differs
    /// from the file's is refused with nothing written.
    pub(crate) fn preheat_stock<C: ConnectionLike>(
        &self,
        conn: &mut C,
        stock: i64,
        mode: PreheatMode,
        dry_run: bool,
    ) -> Result<ItemPreheat> {
        if self.has_seats() && stock != self.item.stock {
            anyhow::bail!(
                "item {} has seats: its stock is its free seats, not {stock}",
                self.item.id
            );
        }
        let item = Item {
            stock,
            ..self.item.clone()
        };
        // Before the stock: a first load never sells with the room on but unset.
        let room = self.room.as_ref();
        let created = match (room, dry_run) {
            (Some(room), false) => Some(room.setup(conn, Setup::Create)?),
            _ => None,
        };
        let mut preheat = self.preheat_slots(conn, &item, mode, dry_run)?;
        if let Some(room) = room {
            let applied = !dry_run
                && preheat.report.status.writes()
                && created.as_ref().is_none_or(|c| c.status != "created");
            let setup = if applied {
                Some(room.setup(conn, Setup::Update)?)
            } else {
                created
            };
            if let Some(refused) = setup.as_ref().filter(|s| s.status == "refused") {
                anyhow::bail!(
                    "item {}: the waiting room in Redis ({}) has users, so its mode and pre-queue                      stay as they are: the file's {} was not applied (`init --yes` starts over)",
                    self.item.id,
                    refused.config,
                    room.settings.config_text()
                );
            }
            preheat.waiting_room = setup;
        }
        Ok(preheat)
    }

    /// The stock and metadata of every slot (see [`SaleItem::preheat_stock`]);
    /// an item whose layout in Redis differs from the file's is refused
    /// before any slot is touched.
    fn preheat_slots<C: ConnectionLike>(
        &self,
        conn: &mut C,
        item: &Item,
        mode: PreheatMode,
        dry_run: bool,
    ) -> Result<ItemPreheat> {
        let conflict = self.shape.conflict(conn)?;
        match &self.shape {
            Shape::Plain(layout) => {
                let keys = layout.bucket(0).keys;
                let mut report = slot::preheat_item(
                    conn,
                    &keys,
                    self.campaign,
                    item,
                    mode,
                    dry_run || conflict.is_some(),
                )?;
                if conflict.is_some() {
                    report.status = PreheatStatus::StockMissing;
                }
                Ok(ItemPreheat {
                    report,
                    buckets: 1,
                    per_bucket: Vec::new(),
                    refused_because: conflict,
                    waiting_room: None,
                })
            }
            Shape::Bucketed(layout) => {
                let split = match conflict {
                    Some(why) => buckets::state::refused(item, why),
                    None => buckets::state::preheat_item(
                        conn,
                        layout,
                        self.campaign,
                        item,
                        mode,
                        dry_run,
                    )?,
                };
                Ok(ItemPreheat {
                    report: split.summary,
                    buckets: layout.buckets,
                    per_bucket: split.buckets,
                    refused_because: split.refused_because,
                    waiting_room: None,
                })
            }
            Shape::Seated(layout, seating) => {
                let sections = match conflict {
                    Some(why) => buckets::state::refused(item, why),
                    None => seats::preheat::preheat_item(
                        conn,
                        layout,
                        seating,
                        self.campaign,
                        item,
                        mode,
                        dry_run,
                    )?,
                };
                Ok(ItemPreheat {
                    report: sections.summary,
                    buckets: layout.buckets,
                    per_bucket: sections.buckets,
                    refused_because: sections.refused_because,
                    waiting_room: None,
                })
            }
        }
    }

    /// The item's state, summed over its slots (`closed` only when every slot is).
    pub(crate) fn state<C: ConnectionLike>(&self, conn: &mut C) -> Result<ItemState> {
        match &self.shape {
            Shape::Plain(layout) => slot::item_state(conn, &layout.bucket(0).keys),
            Shape::Bucketed(layout) | Shape::Seated(layout, _) => {
                buckets::state::item_state(conn, layout)
            }
        }
    }

    /// Flip the kill switch in every slot (a bucketed item: every bucket, or
    /// an error naming the one that failed), recording `flip` in its history;
    /// then pause (or resume) the item's waiting room with it, so nobody is
    /// admitted into a sale that is closed (docs/waiting-room.md).
    pub fn set_switch<C: ConnectionLike>(
        &self,
        conn: &mut C,
        flip: &Flip,
        expire_at_ms: Option<i64>,
    ) -> Result<()> {
        self.switch_slots(conn, flip, expire_at_ms)?;
        if let Some(room) = &self.room {
            let change = if flip.closed {
                waiting_room::Clock::SwitchOn
            } else {
                waiting_room::Clock::SwitchOff
            };
            room.clock(conn, change).with_context(|| {
                format!(
                    "the kill switch of item {} is set, but its waiting room did not follow: run the command again",
                    self.item.id
                )
            })?;
        }
        Ok(())
    }

    fn switch_slots<C: ConnectionLike>(
        &self,
        conn: &mut C,
        flip: &Flip,
        expire_at_ms: Option<i64>,
    ) -> Result<()> {
        match &self.shape {
            Shape::Plain(layout) => {
                kill_switch::set(conn, &layout.bucket(0).keys, flip, expire_at_ms)
            }
            Shape::Bucketed(layout) | Shape::Seated(layout, _) => {
                for bucket in layout.all() {
                    kill_switch::set(conn, &bucket.keys, flip, expire_at_ms).with_context(|| {
                        format!(
                            "kill switch NOT set in bucket {} ({}) of item {}: the item is only partly switched; run the command again",
                            bucket.bucket, bucket.keys.meta, self.item.id
                        )
                    })?;
                }
                Ok(())
            }
        }
    }

    /// A page of the kill switch's kept flips, newest first (every flip goes to every slot).
    pub(crate) fn switch_history<C: ConnectionLike>(
        &self,
        conn: &mut C,
        skip: u32,
        limit: u32,
    ) -> Result<kill_switch::HistoryPage> {
        kill_switch::history(conn, &self.layout().bucket(0).keys, skip, limit)
    }

    /// How the slots stand: buckets closed and, with `each`, every bucket's status.
    pub(crate) fn slots_view<C: ConnectionLike>(
        &self,
        conn: &mut C,
        each: bool,
    ) -> Result<SlotsView> {
        match &self.shape {
            Shape::Plain(_) => Ok(SlotsView {
                buckets: 1,
                buckets_closed: None,
                per_bucket: None,
            }),
            Shape::Bucketed(layout) | Shape::Seated(layout, _) => {
                let statuses = buckets::state::bucket_statuses(conn, layout)?;
                Ok(SlotsView {
                    buckets: layout.buckets,
                    buckets_closed: Some(statuses.iter().filter(|b| b.closed).count() as u32),
                    per_bucket: each.then_some(statuses),
                })
            }
        }
    }

    /// Delete every key of the item — the plain layout's and every bucket
    /// layout's (the file's and the one Redis recorded), so a file whose
    /// bucket count changed starts clean. Per-user keys go by SCAN when
    /// `scan_too` (one node only: on a cluster they expire within one window).
    pub(crate) fn delete<C: ConnectionLike>(&self, conn: &mut C, scan_too: bool) -> Result<u64> {
        let layout = self.layout();
        let plain = ItemKeys::new(&layout.prefix, &self.campaign.id, &self.item.id);
        let mut deleted = slot::delete_item(conn, &plain, scan_too)?;
        deleted += buckets::state::delete_item(conn, layout, scan_too)?;
        // A room's keys go whether or not the file still has one.
        deleted += waiting_room::delete_keys(conn, &plain, self.shape.fan_out_targets())?;
        Ok(deleted)
    }

    /// Whether Redis holds the item: a plain item's meta or stock, or a
    /// bucketed layout's marker (what a load test must never compete with).
    pub(crate) fn in_redis<C: ConnectionLike>(&self, conn: &mut C) -> Result<Option<String>> {
        let layout = self.layout();
        let plain = ItemKeys::new(&layout.prefix, &self.campaign.id, &self.item.id);
        let found: u64 = conn
            .exists(&[&plain.meta, &plain.stock, &layout.marker()][..])
            .with_context(|| format!("cannot check for keys of {}", plain.base))?;
        Ok((found > 0).then(|| format!("{}*", plain.base)))
    }

    /// After units went back into stock (a cancel, an expiry): a bucketed
    /// item's proven sell-out (`sold_out` in every bucket's meta) is no
    /// longer true, so it is cleared in every bucket. Idempotent.
    pub(crate) fn units_returned<C: ConnectionLike>(&self, conn: &mut C) -> Result<()> {
        match &self.shape {
            Shape::Plain(_) | Shape::Seated(..) => Ok(()),
            Shape::Bucketed(layout) => {
                for bucket in layout.all() {
                    buckets::scripts::clear_sold_out(conn, &bucket)?;
                }
                Ok(())
            }
        }
    }

    /// One rebalancing pass (docs/buckets.md): a slot holding less than
    /// `low_water` × the mean gets stock from the fullest, by logged
    /// transfers; `None` for an item whose stock cannot move between slots.
    pub(crate) fn rebalance<C: ConnectionLike>(
        &self,
        conn: &mut C,
        low_water: f64,
    ) -> Result<Option<Pass>> {
        match &self.shape {
            Shape::Plain(_) | Shape::Seated(..) => Ok(None),
            Shape::Bucketed(layout) => buckets::rebalance::pass(conn, layout, low_water).map(Some),
        }
    }

    /// Every slot's snapshot at one reading and, for an item whose stock
    /// moves between slots, its transfer logs read with them; `None` when
    /// transfers kept happening through [`MAX_READINGS`] readings.
    pub(crate) fn read_slots<C: ConnectionLike>(&self, conn: &mut C) -> Result<Option<Reading>> {
        match &self.shape {
            Shape::Plain(layout) | Shape::Seated(layout, _) => {
                buckets::ledger::read_consistently(conn, &layout.all(), false)
            }
            Shape::Bucketed(layout) => {
                buckets::ledger::read_consistently(conn, &layout.all(), true)
            }
        }
    }

    /// One slot's snapshot (its stock, stream end and transfer counts).
    pub(crate) fn snapshot<C: ConnectionLike>(
        &self,
        conn: &mut C,
        slot: &BucketKeys,
    ) -> Result<Snapshot> {
        buckets::scripts::snapshot(conn, slot)
    }

    /// `--repair`: settle every transfer `reading` found in transit (a plain
    /// item has none). Returns how many were settled.
    pub(crate) fn settle_in_transit<C: ConnectionLike>(
        &self,
        conn: &mut C,
        reading: &Reading,
    ) -> Result<u64> {
        match &self.shape {
            Shape::Plain(_) | Shape::Seated(..) => Ok(0),
            Shape::Bucketed(layout) => buckets::ledger::settle_all(conn, &layout.all(), reading),
        }
    }

    /// A bucketed item proven sold out while some bucket holds units again
    /// (a release raced the prover, or a cancel died before reopening every
    /// bucket): clear the proof. Returns the units found when it cleared one.
    pub(crate) fn heal_sell_out_proof<C: ConnectionLike>(
        &self,
        conn: &mut C,
    ) -> Result<Option<i64>> {
        let layout = match &self.shape {
            Shape::Plain(_) | Shape::Seated(..) => return Ok(None),
            Shape::Bucketed(layout) => layout,
        };
        let mut stock = 0i64;
        let mut proven = false;
        for bucket in layout.all() {
            let left: Option<i64> = conn
                .get(&bucket.keys.stock)
                .with_context(|| format!("cannot read {}", bucket.keys.stock))?;
            let flag: Option<String> = conn
                .hget(&bucket.keys.meta, "sold_out")
                .with_context(|| format!("cannot read {}", bucket.keys.meta))?;
            stock += left.unwrap_or(0);
            proven |= flag.is_some();
        }
        if stock > 0 && proven {
            self.units_returned(conn)?;
            return Ok(Some(stock));
        }
        Ok(None)
    }
}

/// Every order stream of the campaign, with its item: one per plain item,
/// one per bucket of a bucketed item (what `consume` and `pending-claim` read).
pub(crate) fn order_streams(campaign: &Campaign) -> Vec<(&Item, ItemKeys)> {
    campaign
        .items
        .iter()
        .flat_map(|item| {
            SaleItem::live(campaign, item)
                .slots()
                .into_iter()
                .map(move |bucket| (item, bucket.keys))
        })
        .collect()
}

/// A bucketed item's `not_admitted` without a position, refined by the room
/// in the item's slot (one more round trip); anything else as it is.
fn refine_in_room<C: ConnectionLike>(
    conn: &mut C,
    room: Option<&Room>,
    user: &str,
    reply: &mut BuyReply,
    cost: &mut BuyCost,
) -> Result<()> {
    if let Some(room) = room.filter(|_| needs_room_read(reply)) {
        cost.round_trips += 1;
        let (figures, standing) = room.read(conn, &[user])?;
        if let Some(standing) = standing.first() {
            waiting_room::refine(room, reply, &figures, standing);
        }
    }
    Ok(())
}

/// Whether a bucketed item's refusal needs the room in the item's slot: the
/// home bucket knows only the admissions fanned out to it, so a `not_admitted`
/// without a position asks the room why not, and for the wait, and an
/// `admission_expired` asks whether the user joined again since (nothing was
/// written either way).
fn needs_room_read(reply: &BuyReply) -> bool {
    match reply.outcome {
        Outcome::NotAdmitted => reply.waiting.as_ref().is_some_and(|w| w.position == 0),
        Outcome::AdmissionExpired => true,
        _ => false,
    }
}
