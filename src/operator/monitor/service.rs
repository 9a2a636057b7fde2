//! A long-running command as a service: what `consume`, `expire --loop` and
//! `rebalance --watch` serve at `--metrics-listen` — `/metrics` (their own
//! families, `seckill_build_info`, when they last succeeded; `consume` also
//! every item's state) and `/healthz` (200 while their Redis and, for
//! `consume`, their order database answer).
//!
//! The worker and the responder share a [`ServiceState`]; the responder
//! probes Redis and the database on connections of its own, opened on first
//! use and replaced after a failure (a failed call may still owe a reply), so
//! a probe never waits behind the worker's batch and never disturbs it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Result;

use crate::domain::item::SaleItem;
use crate::domain::orders::counters::CONSUME;
use crate::domain::orders::{OrderStore, StoreLocation};
use crate::model::campaign::Campaign;
use crate::operator::monitor::metrics::{self, Exposition};
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
