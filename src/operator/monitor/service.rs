//! A long-running command as a service: what `consume`, `expire --loop`,
//! `rebalance --watch` and `regions rebalance --watch` serve at
//! `--metrics-listen` — `/metrics` (their own families, `seckill_build_info`,
//! when they last succeeded; `consume` also every item's state, the regions'
//! mover every item's `seckill_region_*` families over every region) and
//! `/healthz` (200 while their Redis — every region's — and, for `consume`,
//! their order database answer).
//!
//! The worker and the responder share a [`ServiceState`]; the responder
//! probes Redis and the database on connections of its own, opened on first
//! use and replaced after a failure (a failed call may still owe a reply), so
//! a probe never waits behind the worker's batch and never disturbs it.
//! The regions' responder ([`RegionsResponder`]) checks every region at once,
//! each on a thread of its own, so a region that hangs (SIGSTOP, a cut link)
//! costs a page one response timeout and is named, never the page itself.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::domain::item::SaleItem;
use crate::domain::orders::counters::CONSUME;
use crate::domain::orders::{OrderStore, StoreLocation};
use crate::domain::regions::{RegionConn, books};
use crate::model::campaign::{Campaign, Item};
use crate::operator::monitor::metrics::{self, Exposition, Metric};
use crate::operator::monitor::status::StatusReader;
use crate::redis_client::conn::{Conn, RedisTarget};

/// What the worker tells its responder.
#[derive(Debug, Default)]
pub(crate) struct ServiceState {
    /// Unix ms of the last completed round; 0 before the first.
    last_success_ms: AtomicI64,
    /// item id → orders the database refused (consume).
    refused: Mutex<BTreeMap<String, u64>>,
}

impl ServiceState {
    /// A round of work completed now.
    pub(crate) fn succeeded(&self) {
        self.last_success_ms
            .store(chrono::Utc::now().timestamp_millis(), Ordering::Relaxed);
    }

    /// The database refused `n` orders of `item`.
    pub(crate) fn add_refused(&self, item: &str, n: u64) {
        let mut refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        *refused.entry(item.to_string()).or_default() += n;
    }

    fn refused(&self) -> BTreeMap<String, u64> {
        self.refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// What a service's probes answer; each call answers one request.
pub(crate) trait Pages {
    /// The exposition text of `/metrics`.
    fn metrics(&mut self) -> String;
    /// `/healthz`: `Ok(what answered)` is healthy, `Err(what failed)` is not.
    fn health(&mut self) -> Result<String, String>;
}

/// One service's endpoints.
struct Service {
    /// `consume`, `expire` or `rebalance`: the `command` label.
    command: &'static str,
    campaign: Campaign,
    target: RedisTarget,
    /// The order database `/healthz` checks (`consume`); its presence also
    /// makes `/metrics` carry every item's state and the consume counters.
    store: Option<StoreLocation>,
    state: Arc<ServiceState>,
}

/// The pages of one service, with connections of their own (opened on
/// first use, dropped after a failure), so a probe never waits behind the
/// worker's batch and never disturbs it.
pub(crate) struct Responder {
    service: Service,
    conn: Option<Conn>,
    store: Option<Box<dyn OrderStore>>,
    reader: StatusReader,
}

impl Responder {
    /// The pages of `command`'s service, sharing `state` with its worker.
    pub(crate) fn new(
        command: &'static str,
        campaign: &Campaign,
        target: &RedisTarget,
        store: Option<StoreLocation>,
        state: Arc<ServiceState>,
    ) -> Responder {
        Responder {
            service: Service {
                command,
                campaign: campaign.clone(),
                target: target.clone(),
                store,
                state,
            },
            conn: None,
            store: None,
            reader: StatusReader::default(),
        }
    }
}

impl Responder {
    /// Run `call` on the responder's Redis connection (opened when missing,
    /// dropped after a failure).
    fn with_redis<T>(
        &mut self,
        call: impl FnOnce(&mut Conn, &mut StatusReader, &Campaign) -> Result<T>,
    ) -> Result<T> {
        let conn = match &mut self.conn {
            Some(conn) => conn,
            None => self.conn.insert(self.service.target.connect()?),
        };
        let result = call(conn, &mut self.reader, &self.service.campaign);
        if result.is_err() {
            self.conn = None;
        }
        result
    }

    /// `PING` on the responder's connection.
    fn probe_redis(&mut self) -> Result<()> {
        self.with_redis(|conn, _, _| Ok(redis::cmd("PING").query::<()>(conn)?))
    }

    /// One primary-key lookup on the responder's database connection; `None`
    /// when the service has no database.
    fn probe_database(&mut self) -> Option<Result<()>> {
        let location = self.service.store.as_ref()?;
        let result = (|| {
            let store = match &mut self.store {
                Some(store) => store,
                None => self.store.insert(location.open()?),
            };
            store.existing_order_ids(&["seckill-healthz"]).map(drop)
        })();
        if result.is_err() {
            self.store = None;
        }
        Some(result)
    }
}

impl Pages for Responder {
    fn metrics(&mut self) -> String {
        let campaign = self.service.campaign.id.clone();
        let campaign: &str = &campaign;
        let mut exposition = Exposition::default();
        let redis_up = if self.service.store.is_some() {
            let statuses = self.with_redis(|conn, reader, campaign| {
                reader.read_items(conn, &SaleItem::select(campaign, None)?)
            });
            statuses
                .map(|statuses| metrics::add_statuses(&mut exposition, campaign, &statuses))
                .is_ok()
        } else {
            self.probe_redis().is_ok()
        };
        let up = |ok: bool| if ok { 1.0 } else { 0.0 };
        exposition.add(metrics::REDIS_UP, &[("campaign", campaign)], up(redis_up));
        if let Some(database) = self.probe_database() {
            let labels = [("campaign", campaign)];
            exposition.add(metrics::DATABASE_UP, &labels, up(database.is_ok()));
            let refused = self.service.state.refused();
            metrics::add_consume_counters(
                &mut exposition,
                &CONSUME,
                &refused,
                &self.service.campaign,
            );
        }
        let last = self.service.state.last_success_ms.load(Ordering::Relaxed);
        if last > 0 {
            let labels = [("campaign", campaign), ("command", self.service.command)];
            exposition.add(metrics::LAST_SUCCESS, &labels, last as f64 / 1000.0);
        }
        metrics::add_build_info(&mut exposition);
        exposition.render()
    }

    fn health(&mut self) -> Result<String, String> {
        let redis = self.service.target.display.clone();
        let mut said = match self.probe_redis() {
            Ok(()) => format!("Redis at {redis} answered"),
            Err(error) => {
                let why = crate::util::error_text::render(&error);
                // A connect error names the server itself; a failed call on an open connection does not.
                return Err(if why.contains(&redis) {
                    why
                } else {
                    format!("Redis at {redis}: {why}")
                });
            }
        };
        if let Some(database) = self.probe_database() {
            let shown = self
                .service
                .store
                .as_ref()
                .map(StoreLocation::display)
                .unwrap_or_default();
            match database {
                Ok(()) => said.push_str(&format!("; database {shown} answered")),
                Err(error) => {
                    return Err(format!(
                        "database {shown}: {}",
                        crate::util::error_text::render(&error)
                    ));
                }
            }
        }
        Ok(said)
    }
}

/// Whether this scrape read the region (the mover's own families follow).
const REGION_UP: Metric = metrics::gauge(
    "seckill_region_up",
    "1 when this scrape of the regions' mover read the region, 0 when it failed or did not answer within --response-timeout.",
);
const MOVER_ROUNDS: Metric = metrics::counter(
    "seckill_regions_mover_rounds_total",
    "Rounds the regions' mover (regions rebalance --watch) completed since it started.",
);
const MOVER_TRANSFERS: Metric = metrics::counter(
    "seckill_regions_mover_transfers_total",
    "Transfers the regions' mover made that moved or credited units (settles that credited included).",
);
const MOVER_UNITS_MOVED: Metric = metrics::counter(
    "seckill_regions_mover_units_moved_total",
    "Units the regions' mover debited from one region for another (credited or still in transit).",
);
const MOVER_UNITS_SETTLED: Metric = metrics::counter(
    "seckill_regions_mover_units_settled_total",
    "Units sent earlier (by this or another mover) that the regions' mover credited when it settled them.",
);
const MOVER_LEFT_IN_TRANSIT: Metric = metrics::counter(
    "seckill_regions_mover_left_in_transit_total",
    "Transfers the regions' mover left in transit: a replica of the source short, the destination fenced or down.",
);
const MOVER_STRANDED: Metric = metrics::counter(
    "seckill_regions_mover_stranded_seconds_total",
    "Time the region sat at 0 while another region of the item held units (its shoppers told sold_out with stock elsewhere), as the mover saw it.",
);

/// What `regions rebalance --watch` (the mover) tells its responder: its
/// totals since it started, and what its last round could not read.
#[derive(Debug, Default)]
pub(crate) struct MoverState {
    rounds: AtomicU64,
    transfers: AtomicU64,
    units_moved: AtomicI64,
    units_settled: AtomicI64,
    left_in_transit: AtomicU64,
    /// Unix ms of the last completed round; 0 before the first.
    last_round_ms: AtomicI64,
    /// (item, region) → ms the region sat at 0 while another held units.
    stranded_ms: Mutex<BTreeMap<(String, String), u64>>,
    /// Regions the last round could not read, and why.
    unanswered: Mutex<BTreeMap<String, String>>,
}

/// The mover's totals after a round.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MoverTotals {
    pub(crate) rounds: u64,
    pub(crate) transfers: u64,
    pub(crate) units_moved: i64,
    pub(crate) units_settled: i64,
    pub(crate) left_in_transit: u64,
}

impl MoverState {
    /// A round completed: its totals, each item's stranded time per region,
    /// and the regions it could not read (region → why; empty: every one).
    pub(crate) fn round_done(
        &self,
        totals: MoverTotals,
        stranded: impl IntoIterator<Item = (String, String, u64)>,
        unanswered: BTreeMap<String, String>,
    ) {
        self.rounds.store(totals.rounds, Ordering::Relaxed);
        self.transfers.store(totals.transfers, Ordering::Relaxed);
        self.units_moved
            .store(totals.units_moved, Ordering::Relaxed);
        self.units_settled
            .store(totals.units_settled, Ordering::Relaxed);
        self.left_in_transit
            .store(totals.left_in_transit, Ordering::Relaxed);
        {
            let mut known = self.stranded_ms.lock().unwrap_or_else(|e| e.into_inner());
            for (item, region, ms) in stranded {
                known.insert((item, region), ms);
            }
        }
        *self.unanswered.lock().unwrap_or_else(|e| e.into_inner()) = unanswered;
        self.last_round_ms
            .store(chrono::Utc::now().timestamp_millis(), Ordering::Relaxed);
    }

    fn unanswered(&self) -> BTreeMap<String, String> {
        self.unanswered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The pages of `regions rebalance --watch`: every item's books read afresh
/// over every region per scrape (`domain::regions::books`, the families of
/// `status --format prometheus`), the mover's counters, and whether every
/// region answers. Its connections are its own, one per region.
pub(crate) struct RegionsResponder {
    campaign: Campaign,
    items: Vec<Item>,
    /// Each region's name and Redis, in the campaign's order.
    targets: Vec<(String, RedisTarget)>,
    /// Each region's connection while it is here (`None` while a check
    /// holds it: the region has not answered it yet).
    idle: Vec<Option<RegionConn>>,
    /// The check holding each region's connection, to take it back from.
    lent: Vec<Option<mpsc::Receiver<RegionConn>>>,
    state: Arc<MoverState>,
    /// How long a page waits for a region: `--response-timeout`.
    patience: Duration,
}

impl RegionsResponder {
    /// The pages of the mover of `items` over the regions of `targets`.
    pub(crate) fn new(
        campaign: &Campaign,
        items: Vec<Item>,
        targets: Vec<(String, RedisTarget)>,
        state: Arc<MoverState>,
        patience: Duration,
    ) -> RegionsResponder {
        let idle = targets
            .iter()
            .map(|(name, _)| {
                Some(RegionConn {
                    name: name.clone(),
                    conn: None,
                    down: None,
                })
            })
            .collect();
        let lent = targets.iter().map(|_| None).collect();
        RegionsResponder {
            campaign: campaign.clone(),
            items,
            targets,
            idle,
            lent,
            state,
            patience,
        }
    }

    /// Check every region at once, each on a thread of its own (connect if
    /// needed, then `PING`), waiting at most the response timeout in all: a
    /// region that does not answer by then keeps its thread (and its
    /// connection) until it does, and is said not to answer meanwhile.
    /// Returns, per region, why it failed (`None`: it answered).
    fn check(&mut self) -> Vec<Option<String>> {
        let deadline = Instant::now() + self.patience;
        for (index, (_, target)) in self.targets.iter().enumerate() {
            if let Some(back) = &self.lent[index] {
                match back.try_recv() {
                    Ok(region) => self.idle[index] = Some(region),
                    Err(mpsc::TryRecvError::Empty) => continue,
                    // The check ended without a word: connect afresh.
                    Err(mpsc::TryRecvError::Disconnected) => {
                        self.idle[index] = Some(RegionConn {
                            name: self.targets[index].0.clone(),
                            conn: None,
                            down: None,
                        })
                    }
                }
                self.lent[index] = None;
            }
            let Some(mut region) = self.idle[index].take() else {
                continue;
            };
            let target = target.clone();
            let (sender, receiver) = mpsc::channel();
            let spawned = std::thread::Builder::new()
                .name("region-check".into())
                .spawn(move || {
                    check_region(&mut region, &target);
                    let _ = sender.send(region);
                });
            if let Err(error) = spawned {
                self.idle[index] = Some(RegionConn {
                    name: self.targets[index].0.clone(),
                    conn: None,
                    down: Some(format!("cannot start a check: {error}")),
                });
                continue;
            }
            self.lent[index] = Some(receiver);
        }
        let mut failed = Vec::new();
        for index in 0..self.targets.len() {
            if let Some(back) = &self.lent[index] {
                let left = deadline.saturating_duration_since(Instant::now());
                if let Ok(region) = back.recv_timeout(left) {
                    self.idle[index] = Some(region);
                    self.lent[index] = None;
                }
            }
            let (name, target) = &self.targets[index];
            failed.push(match &self.idle[index] {
                Some(region) => region.down.as_ref().map(|why| {
                    if why.contains(&target.display) {
                        format!("region {name}: {why}")
                    } else {
                        format!("region {name} (Redis at {}): {why}", target.display)
                    }
                }),
                None => Some(format!(
                    "region {name} (Redis at {}): no answer within {}",
                    target.display,
                    humantime::format_duration(self.patience)
                )),
            });
        }
        failed
    }

    /// Every item's books over every region that answered the check (the
    /// others read as unreadable, at once). A region that hangs in the
    /// milliseconds between its check and this read costs the page the two
    /// reads of one item (two response timeouts): its connection is dropped
    /// after the first item whose read failed.
    fn read_books(&mut self, failed: &[Option<String>]) -> Vec<books::ItemBooks> {
        let mut regions: Vec<RegionConn> = self
            .idle
            .iter_mut()
            .zip(&self.targets)
            .zip(failed)
            .map(|((idle, (name, _)), failure)| match idle.take() {
                Some(region) => region,
                None => RegionConn {
                    name: name.clone(),
                    conn: None,
                    down: failure.clone(),
                },
            })
            .collect();
        let mut all = Vec::new();
        for item in &self.items {
            let Ok(read) = books::read(&self.campaign, item, &mut regions) else {
                continue;
            };
            // A read that failed may still owe a reply: connect afresh later.
            for (region, read) in regions.iter_mut().zip(&read.regions) {
                if let Some(error) = &read.error {
                    region.conn = None;
                    region.down = Some(error.clone());
                }
            }
            all.push(read);
        }
        for (index, region) in regions.into_iter().enumerate() {
            if self.lent[index].is_none() {
                self.idle[index] = Some(region);
            }
        }
        all
    }
}

/// Connect `region` when it has no connection, else `PING` it; a failure
/// drops the connection (it may owe a reply) and says why.
fn check_region(region: &mut RegionConn, target: &RedisTarget) {
    let answered = match &mut region.conn {
        Some(conn) => redis::cmd("PING")
            .query::<()>(conn)
            .map_err(anyhow::Error::from),
        None => target.connect().map(|conn| {
            region.conn = Some(conn);
        }),
    };
    match answered {
        Ok(()) => region.down = None,
        Err(error) => {
            region.conn = None;
            region.down = Some(crate::util::error_text::render(&error));
        }
    }
}

impl Pages for RegionsResponder {
    fn metrics(&mut self) -> String {
        let failed = self.check();
        let read = self.read_books(&failed);
        let campaign = self.campaign.id.clone();
        let campaign: &str = &campaign;
        let mut exposition = Exposition::default();
        metrics::add_region_books(&mut exposition, campaign, &read);
        for (index, (name, _)) in self.targets.iter().enumerate() {
            let answered = failed[index].is_none()
                && read.iter().all(|item| {
                    item.regions
                        .iter()
                        .all(|r| &r.region != name || r.error.is_none())
                });
            let labels = [("campaign", campaign), ("region", name.as_str())];
            exposition.add(REGION_UP, &labels, if answered { 1.0 } else { 0.0 });
        }
        let state = &self.state;
        let labels = [("campaign", campaign)];
        let count = |n: u64| n as f64;
        exposition.add(
            MOVER_ROUNDS,
            &labels,
            count(state.rounds.load(Ordering::Relaxed)),
        );
        exposition.add(
            MOVER_TRANSFERS,
            &labels,
            count(state.transfers.load(Ordering::Relaxed)),
        );
        exposition.add(
            MOVER_UNITS_MOVED,
            &labels,
            state.units_moved.load(Ordering::Relaxed) as f64,
        );
        exposition.add(
            MOVER_UNITS_SETTLED,
            &labels,
            state.units_settled.load(Ordering::Relaxed) as f64,
        );
        exposition.add(
            MOVER_LEFT_IN_TRANSIT,
            &labels,
            count(state.left_in_transit.load(Ordering::Relaxed)),
        );
        let stranded = state
            .stranded_ms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for ((item, region), ms) in &stranded {
            let labels = [
                ("campaign", campaign),
                ("item", item.as_str()),
                ("region", region.as_str()),
            ];
            exposition.add(MOVER_STRANDED, &labels, *ms as f64 / 1000.0);
        }
        let last = state.last_round_ms.load(Ordering::Relaxed);
        if last > 0 {
            let labels = [("campaign", campaign), ("command", "regions_rebalance")];
            exposition.add(metrics::LAST_SUCCESS, &labels, last as f64 / 1000.0);
        }
        metrics::add_build_info(&mut exposition);
        exposition.render()
    }

    fn health(&mut self) -> Result<String, String> {
        let checked = self.check();
        let mut failed: Vec<String> = checked.iter().flatten().cloned().collect();
        // The mover's last round counts too: a region it could not read
        // is one it cannot move stock to or from.
        for (region, why) in self.state.unanswered() {
            let index = self.targets.iter().position(|(name, _)| *name == region);
            if index.is_none_or(|index| checked[index].is_none()) {
                let prefix = format!("region {region}: ");
                let why = why.strip_prefix(&prefix).unwrap_or(&why);
                failed.push(format!("region {region}, in the mover's last round: {why}"));
            }
        }
        if !failed.is_empty() {
            return Err(failed.join("; "));
        }
        let answered: Vec<String> = self
            .targets
            .iter()
            .map(|(name, target)| format!("{name} ({})", target.display))
            .collect();
        Ok(format!(
            "every region answered: {}; so did the mover's last round",
            answered.join(", ")
        ))
    }
}
