//! `seckill regions status|rebalance|move|home`: one sale over independent
//! Redis deployments (docs/regions.md). `status` reads every region's slot
//! of each item and proves the books (also `reconcile --regions`);
//! `rebalance` is the scheduler (scheme C): it settles what is in transit
//! and moves stock to where it sells, once or every interval; `move` makes
//! one transfer by hand; `home` says which region a user buys in. The work
//! is `domain::regions`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use crate::domain::regions::books::{self, ItemBooks};
use crate::domain::regions::scheduler::{Move, Scheduler, Stranded};
use crate::domain::regions::transfer::{self, Ending, Transfer};
use crate::domain::regions::{RegionConn, item_keys, keep_sell_out_mark};
use crate::invocation::context::Context;
use crate::invocation::report::Report;
use crate::model::campaign::{Campaign, Item};
use crate::model::error::usage;
use crate::model::exit_codes;
use crate::model::regions::{home_region, home_score};
use crate::redis_client::conn::{RedisTarget, parse_duration_arg};
use crate::redis_client::replicas::check_timeout;
use crate::util::retry::sleep_unless_stopped;
use crate::util::{log, output};

/// Flags of `seckill regions`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub(crate) action: Action,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum Action {
    /// Every region's stock, sales and transfers of each item, and whether the books hold
    /// (exit 0; `reconcile --regions` is the same proof with exit 3 on a breach).
    Status(Items),
    /// Settle what is in transit and move stock to the regions that sell it, once or
    /// every --interval with --watch (the scheduler).
    Rebalance(RebalanceArgs),
    /// One transfer by hand: debit --from, WAIT for its replicas, credit --to.
    Move(MoveArgs),
    /// The home region of a user: the only region where the user may buy.
    Home(HomeArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct Items {
    /// Only this item (default: every item).
    #[arg(long, value_name = "ID")]
    pub(crate) item: Option<String>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct RebalanceArgs {
    #[command(flatten)]
    pub(crate) items: Items,

    /// Keep going, one round per --interval, until SIGINT/SIGTERM (or --for).
    #[arg(long)]
    pub(crate) watch: bool,

    /// Pause between rounds with --watch (at least 100ms is not required here:
    /// a round is a few reads per region; at least 10ms).
    #[arg(long, default_value = "100ms", value_parser = parse_round_arg, value_name = "DURATION")]
    pub(crate) interval: Duration,

    /// A region that sold nothing for this long gives all its stock to a
    /// region that runs short (the final sweep), not half of its surplus.
    #[arg(long, default_value = "2s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) idle_after: Duration,

    /// How long a transfer waits for the source's replicas to confirm its debit
    /// (shorter than --response-timeout); short: the units stay in transit.
    #[arg(long, default_value = "1s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) wait_timeout: Duration,

    /// With --watch: stop after this long.
    #[arg(long = "for", value_parser = parse_duration_arg, value_name = "DURATION", requires = "watch")]
    pub(crate) run_for: Option<Duration>,

    /// With --watch: serve http://ADDR/metrics (every item's seckill_region_*
    /// families over every region, the mover's counters) and /healthz (200
    /// while every region answers); :PORT for every interface, or HOST:PORT.
    #[arg(long, value_name = "ADDR", value_parser = crate::http::service::parse_listen, requires = "watch")]
    pub(crate) metrics_listen: Option<std::net::SocketAddr>,
}

#[derive(Debug, clap::Args)]
pub(crate) struct MoveArgs {
    /// The item.
    #[arg(long, value_name = "ID")]
    pub(crate) item: String,
    /// The region that gives the units.
    #[arg(long, value_name = "REGION")]
    pub(crate) from: String,
    /// The region that gets them.
    #[arg(long, value_name = "REGION")]
    pub(crate) to: String,
    /// How many (0: only settle what --from sent --to before).
    #[arg(long, value_name = "N")]
    pub(crate) units: i64,
    /// How long to wait for the source's replicas to confirm the debit.
    #[arg(long, default_value = "1s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) wait_timeout: Duration,
    /// Make the transfer this many times on the same connections and report the
    /// debit-to-credit latency's p50/p99: hidden, for scripts/bench-regions.sh,
    /// whose figures a process start per transfer would otherwise swamp.
    #[arg(long, default_value_t = 1, value_name = "N", hide = true)]
    pub(crate) repeat: u32,
}

#[derive(Debug, clap::Args)]
pub(crate) struct HomeArgs {
    /// The user id(s).
    #[arg(value_name = "USER", required = true)]
    pub(crate) users: Vec<String>,
}

/// A round's period: 10 ms or more.
fn parse_round_arg(text: &str) -> std::result::Result<Duration, String> {
    let interval = parse_duration_arg(text)?;
    if interval < Duration::from_millis(10) {
        return Err("must be at least 10ms".into());
    }
    Ok(interval)
}

/// Every region's connection (or every peer's of one region), and how to
/// make each again.
pub(crate) struct Links {
    pub(crate) regions: Vec<RegionConn>,
    targets: Vec<RedisTarget>,
}

/// The campaign with every region, and a link to each (a region that cannot
/// be reached is linked later: the others go on).
fn open_links(ctx: &Context) -> Result<(Campaign, Links)> {
    let campaign = ctx.campaign_everywhere()?;
    if campaign.regions.is_empty() {
        return Err(usage(format!(
            "campaign {} has no `regions:` (docs/regions.md): `seckill regions` works on a sale \
             over several Redis deployments",
            campaign.id
        )));
    }
    let mut links = Links::to(ctx, &campaign, None)?;
    links.reconnect();
    Ok((campaign, links))
}

impl Links {
    /// Links (not connected yet) to every region of `campaign` (the file
    /// as written) but `except`, each on its URL for commands over every
    /// region ([`Context::connection_in`]).
    pub(crate) fn to(ctx: &Context, campaign: &Campaign, except: Option<&str>) -> Result<Links> {
        let mut links = Links {
            regions: Vec::new(),
            targets: Vec::new(),
        };
        for region in campaign
            .regions
            .iter()
            .filter(|r| Some(r.name.as_str()) != except)
        {
            let view = campaign.in_region(&region.name)?;
            links.targets.push(RedisTarget::resolve(
                &ctx.connection_in(&view),
                Some(&view),
            )?);
            links.regions.push(RegionConn {
                name: region.name.clone(),
                conn: None,
                down: None,
            });
        }
        Ok(links)
    }

    /// Connect the regions not connected (a failure is kept as why).
    pub(crate) fn reconnect(&mut self) {
        for (region, target) in self.regions.iter_mut().zip(&self.targets) {
            if region.conn.is_some() {
                continue;
            }
            match target.connect() {
                Ok(conn) => {
                    region.conn = Some(conn);
                    region.down = None;
                }
                Err(error) => region.down = Some(format!("{error:#}")),
            }
        }
    }

    /// Drop `name`'s connection, to be made afresh next round (it may owe a
    /// reply).
    fn drop_conn(&mut self, name: &str, why: String) {
        for region in self.regions.iter_mut().filter(|r| r.name == name) {
            region.conn = None;
            region.down = Some(why.clone());
        }
    }

    /// The books of `items`, each region read; a region that failed is
    /// disconnected.
    fn read_books(&mut self, campaign: &Campaign, items: &[&Item]) -> Result<Vec<ItemBooks>> {
        let mut all = Vec::new();
        for item in items {
            let read = books::read(campaign, item, &mut self.regions)?;
            for region in &read.regions {
                if let Some(error) = &region.error {
                    self.drop_conn(&region.region, error.clone());
                }
            }
            all.push(read);
        }
        Ok(all)
    }

    /// The source and destination of a move, by name.
    fn pair(&mut self, from: &str, to: &str) -> Result<[&mut RegionConn; 2]> {
        let index = |name: &str| {
            self.regions
                .iter()
                .position(|r| r.name == name)
                .ok_or_else(|| usage(format!("no region {name:?}")))
        };
        let (from, to) = (index(from)?, index(to)?);
        self.regions
            .get_disjoint_mut([from, to])
            .map_err(|_| usage("--from and --to name the same region"))
    }
}

/// `seckill regions status` and `seckill reconcile --regions`.
#[derive(Debug, Serialize)]
pub(crate) struct BooksReport {
    /// In the envelope already.
    #[serde(skip)]
    pub(crate) campaign: String,
    pub(crate) items: Vec<ItemBooks>,
    /// `reconcile --regions`: a breach is exit 3, an unreadable region exit 1.
    #[serde(skip)]
    pub(crate) proof: bool,
}

impl BooksReport {
    fn breaches(&self) -> impl Iterator<Item = &books::Breach> {
        self.items.iter().flat_map(|i| i.breaches.iter())
    }
}

impl Report for BooksReport {
    fn render(&self) -> String {
        let mut out = String::new();
        for item in &self.items {
            let rows = item
                .regions
                .iter()
                .map(|r| match &r.slot {
                    Some(s) => vec![
                        r.region.clone(),
                        r.share.to_string(),
                        s.initial.to_string(),
                        s.stock.to_string(),
                        s.sold().to_string(),
                        pairs(&s.sent_to),
                        pairs(&s.received_from),
                        if s.fenced { "FENCED" } else { "open" }.to_string(),
                    ],
                    None => vec![
                        r.region.clone(),
                        r.share.to_string(),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                        "unreachable".into(),
                    ],
                })
                .collect();
            let table = output::grid(
                &[
                    "region", "share", "holds", "stock", "sold", "sent", "received", "fence",
                ],
                rows,
                &[1, 2, 3, 4],
            );
            let transit: Vec<String> = item
                .in_transit
                .iter()
                .map(|t| format!("{}→{} {}", t.from, t.to, t.units))
                .collect();
            out.push_str(&format!(
                "item {}: {} units over {} regions; stock {}, sold {}, in transit {}{}{}\n{table}",
                item.item,
                item.total,
                item.regions.len(),
                item.stock,
                item.sold,
                item.in_transit_total(),
                if transit.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", transit.join(", "))
                },
                if item.stranded > 0 {
                    format!(
                        "; {} units stranded (a region is at 0 while others hold them)",
                        item.stranded
                    )
                } else {
                    String::new()
                },
            ));
            let last = item
                .regions
                .iter()
                .filter_map(|r| r.slot.as_ref())
                .filter_map(last_transfer_ms)
                .max();
            if let Some(ms) = last {
                out.push_str(&format!(
                    "  last transfer {}\n",
                    crate::util::text::time_or_dash(Some(ms))
                ));
            }
            for breach in &item.breaches {
                out.push_str(&format!(
                    "  BREACH {}: {}\n",
                    breach.invariant, breach.message
                ));
            }
            if item.balanced() {
                out.push_str(&format!(
                    "  balanced: Σ stock {} + Σ sold {} + in transit {} = {}\n",
                    item.stock,
                    item.sold,
                    item.in_transit_total(),
                    item.total
                ));
            }
        }
        out
    }

    fn exposition(&self) -> Option<String> {
        let mut exposition = crate::operator::monitor::metrics::Exposition::default();
        crate::operator::monitor::metrics::add_region_books(
            &mut exposition,
            &self.campaign,
            &self.items,
        );
        crate::operator::monitor::metrics::add_build_info(&mut exposition);
        Some(exposition.render())
    }

    fn exit_code(&self) -> i32 {
        if !self.proof {
            return exit_codes::SUCCESS;
        }
        if self.breaches().any(|b| b.invariant != "unreadable") {
            exit_codes::DRIFT_FOUND
        } else if self.breaches().next().is_some() {
            exit_codes::RUNTIME_ERROR
        } else {
            exit_codes::SUCCESS
        }
    }

    fn failure(&self) -> Option<String> {
        let breaches: Vec<String> = self
            .breaches()
            .map(|b| format!("{}: {}", b.invariant, b.message))
            .collect();
        (self.proof && !breaches.is_empty()).then(|| breaches.join("; "))
    }
}

fn pairs(map: &std::collections::BTreeMap<String, i64>) -> String {
    if map.is_empty() {
        return "-".into();
    }
    map.iter()
        .map(|(peer, n)| format!("{peer} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn last_transfer_ms(slot: &crate::redis_client::scripts::region_state::SlotLedger) -> Option<i64> {
    slot.sent_at_ms
        .values()
        .chain(slot.received_at_ms.values())
        .max()
        .copied()
}

/// `seckill regions status` (and, with `proof`, `reconcile --regions`).
pub(crate) fn status(ctx: &Context, args: &Items, proof: bool) -> Result<BooksReport> {
    let (campaign, mut links) = open_links(ctx)?;
    let items = campaign.select_items(args.item.as_deref())?;
    let items = links.read_books(&campaign, &items)?;
    Ok(BooksReport {
        campaign: campaign.id.clone(),
        items,
        proof,
    })
}

/// `seckill regions move`.
#[derive(Debug, Serialize)]
pub(crate) struct MoveReport {
    pub(crate) item: String,
    /// The last transfer (the first that was not credited, with --repeat).
    #[serde(flatten)]
    pub(crate) transfer: Transfer,
    /// With --repeat: the credited transfers' debit-to-credit latency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) repeated: Option<Repeated>,
}

/// `regions move --repeat N`: how the transfers went, in one process.
#[derive(Debug, Serialize)]
pub(crate) struct Repeated {
    pub(crate) asked: u32,
    pub(crate) credited: u64,
    pub(crate) latency_p50_us: Option<u64>,
    pub(crate) latency_p99_us: Option<u64>,
    pub(crate) latency_max_us: Option<u64>,
}

impl Report for MoveReport {
    fn render(&self) -> String {
        let t = &self.transfer;
        let replicas = t.replicas.map_or_else(
            || "-".into(),
            |(confirmed, attached)| format!("{confirmed} of {attached}"),
        );
        let said = match t.ending {
            Ending::Credited => format!(
                "moved: {} → {} {} units (credited now {}; {} sent in all)",
                t.from, t.to, t.units, t.credited_now, t.sent_total
            ),
            Ending::InTransit => format!(
                "IN TRANSIT: {} → {}: {}",
                t.from,
                t.to,
                t.why.as_deref().unwrap_or("not credited")
            ),
            Ending::Short => format!(
                "SHORT: region {} holds fewer than {} units; nothing moved",
                t.from, t.units
            ),
            Ending::SourceFenced => format!(
                "FENCED: region {} is fenced; nothing moved (`seckill reconcile --fence --region {}`)",
                t.from, t.from
            ),
            Ending::NotPreheated => {
                format!("item {} is not preheated in region {}", self.item, t.from)
            }
            Ending::CorruptState => format!(
                "CORRUPT STATE: {}; nothing moved",
                t.why.as_deref().unwrap_or("a stored value is malformed")
            ),
        };
        let repeated = self.repeated.as_ref().map_or_else(String::new, |r| {
            format!(
                "  repeated: {} of {} credited; latency p50 {} p99 {} max {}\n",
                r.credited,
                r.asked,
                micros(r.latency_p50_us),
                micros(r.latency_p99_us),
                micros(r.latency_max_us)
            )
        });
        format!(
            "{said}\n  replicas confirming the debit: {replicas}; debit to credit {} µs\n{repeated}",
            t.elapsed_us
        )
    }

    fn exit_code(&self) -> i32 {
        match self.transfer.ending {
            Ending::Credited => exit_codes::SUCCESS,
            Ending::InTransit => exit_codes::IN_TRANSIT,
            Ending::Short => exit_codes::SOLD_OUT,
            Ending::SourceFenced => exit_codes::FENCED,
            Ending::NotPreheated => exit_codes::NOT_PREHEATED,
            Ending::CorruptState => exit_codes::CORRUPT_STATE,
        }
    }
}

/// `seckill regions move`.
pub(crate) fn move_units(ctx: &Context, args: &MoveArgs) -> Result<MoveReport> {
    check_timeout(args.wait_timeout, ctx.connection.response_timeout)?;
    if args.units < 0 {
        return Err(usage(format!("--units {} must be 0 or more", args.units)));
    }
    if args.repeat == 0 {
        return Err(usage("--repeat 0: make at least one transfer"));
    }
    if args.from == args.to {
        return Err(usage("--from and --to name the same region"));
    }
    let (campaign, mut links) = open_links(ctx)?;
    let item = campaign.item(&args.item)?;
    let keys = item_keys(&campaign, &item.id);
    for name in [&args.from, &args.to] {
        campaign.in_region(name)?;
    }
    let [source, destination] = links.pair(&args.from, &args.to)?;
    let mut latencies = Vec::new();
    let mut transfer;
    loop {
        transfer = transfer::transfer(source, destination, &keys, args.units, args.wait_timeout)?;
        if transfer.ending != Ending::Credited {
            break;
        }
        latencies.push(transfer.elapsed_us);
        if latencies.len() as u64 >= u64::from(args.repeat) {
            break;
        }
    }
    let repeated = (args.repeat > 1).then(|| {
        latencies.sort_unstable();
        Repeated {
            asked: args.repeat,
            credited: latencies.len() as u64,
            latency_p50_us: percentile(&latencies, 0.5),
            latency_p99_us: percentile(&latencies, 0.99),
            latency_max_us: latencies.last().copied(),
        }
    });
    Ok(MoveReport {
        item: item.id.clone(),
        transfer,
        repeated,
    })
}

/// The `q` quantile of sorted `latencies` (nearest rank), none when empty.
fn percentile(latencies: &[u64], q: f64) -> Option<u64> {
    (!latencies.is_empty()).then(|| latencies[((latencies.len() - 1) as f64 * q).round() as usize])
}

/// `seckill regions home`.
#[derive(Debug, Serialize)]
pub(crate) struct HomeReport {
    pub(crate) homes: Vec<Home>,
}

#[derive(Debug, Serialize)]
pub(crate) struct Home {
    pub(crate) user: String,
    pub(crate) home: String,
    /// Each region's rendezvous score (the highest wins).
    pub(crate) scores: std::collections::BTreeMap<String, String>,
}

impl Report for HomeReport {
    fn render(&self) -> String {
        let rows = self
            .homes
            .iter()
            .map(|h| vec![h.user.clone(), h.home.clone()])
            .collect();
        output::grid(&["user", "home region"], rows, &[])
    }

    fn names_redis(&self) -> bool {
        false
    }
}

/// `seckill regions home`: no Redis needed.
pub(crate) fn home(ctx: &Context, args: &HomeArgs) -> Result<HomeReport> {
    let campaign = ctx.campaign_everywhere()?;
    if campaign.regions.is_empty() {
        return Err(usage(format!("campaign {} has no `regions:`", campaign.id)));
    }
    let mut homes = Vec::new();
    for user in &args.users {
        crate::domain::operation::check_id("user", user, true)
            .map_err(|failure| crate::invocation::failure::say(failure, "regions home"))?;
        let home = home_region(&campaign.id, &campaign.regions, user)
            .expect("a campaign with regions has one");
        homes.push(Home {
            user: user.clone(),
            home: home.name.clone(),
            scores: campaign
                .regions
                .iter()
                .map(|r| {
                    (
                        r.name.clone(),
                        format!("{:016x}", home_score(&campaign.id, &r.name, user)),
                    )
                })
                .collect(),
        });
    }
    Ok(HomeReport { homes })
}

/// `seckill regions rebalance`: rounds, moves, what stays in transit.
#[derive(Debug, Serialize)]
pub(crate) struct RebalanceReport {
    pub(crate) rounds: u64,
    /// Transfers that moved units (settles that credited included).
    pub(crate) transfers: u64,
    pub(crate) units_moved: i64,
    /// Units credited by settles (sent earlier, credited now).
    pub(crate) units_settled: i64,
    /// Transfers left in transit (a replica short, a region fenced or down).
    pub(crate) left_in_transit: u64,
    /// Debit to credit, the transfers that were credited, µs.
    pub(crate) latency_p50_us: Option<u64>,
    pub(crate) latency_p99_us: Option<u64>,
    /// How long each region sat at 0 while another held units.
    pub(crate) stranded: Vec<Stranded>,
    /// The last round's books.
    pub(crate) items: Vec<ItemBooks>,
}

impl Report for RebalanceReport {
    fn render(&self) -> String {
        let stranded: Vec<String> = self
            .stranded
            .iter()
            .filter(|s| s.total_ms > 0)
            .map(|s| {
                format!(
                    "{} {} ms (longest {} ms)",
                    s.region, s.total_ms, s.longest_ms
                )
            })
            .collect();
        let books = BooksReport {
            campaign: String::new(),
            items: self.items.clone(),
            proof: false,
        }
        .render();
        format!(
            "{} round(s), {} transfer(s): {} units moved, {} settled, {} left in transit; \
             latency p50 {} p99 {}; stranded: {}\n{books}",
            self.rounds,
            self.transfers,
            self.units_moved,
            self.units_settled,
            self.left_in_transit,
            micros(self.latency_p50_us),
            micros(self.latency_p99_us),
            if stranded.is_empty() {
                "none".into()
            } else {
                stranded.join(", ")
            }
        )
    }
}

impl RebalanceReport {
    /// Count and log one transfer of a round; the latency of one that moved
    /// or credited units.
    fn record(&mut self, item: &str, planned: &Move, transfer: &Transfer) -> Option<u64> {
        let worked = transfer.credited_now > 0 || transfer.units > 0;
        match transfer.ending {
            Ending::Credited => {
                if planned.units == 0 {
                    self.units_settled += transfer.credited_now;
                } else {
                    self.units_moved += transfer.units;
                }
                if !worked {
                    return None;
                }
                self.transfers += 1;
                log::line(
                    "regions",
                    format!(
                        "item {item}: {} {} → {}: {} units ({} credited now) in {} µs",
                        planned.why,
                        transfer.from,
                        transfer.to,
                        transfer.units,
                        transfer.credited_now,
                        transfer.elapsed_us
                    ),
                );
                Some(transfer.elapsed_us)
            }
            Ending::InTransit | Ending::CorruptState => {
                if transfer.ending == Ending::InTransit {
                    self.left_in_transit += 1;
                    self.units_moved += transfer.units;
                }
                log::line(
                    "regions",
                    format!(
                        "item {item}: {} → {}: {}",
                        transfer.from,
                        transfer.to,
                        transfer.why.as_deref().unwrap_or("not credited")
                    ),
                );
                None
            }
            Ending::Short | Ending::SourceFenced | Ending::NotPreheated => None,
        }
    }
}

fn micros(us: Option<u64>) -> String {
    us.map_or_else(|| "-".into(), |us| format!("{us} µs"))
}

/// `seckill regions rebalance`.
pub(crate) fn rebalance(ctx: &Context, args: &RebalanceArgs) -> Result<RebalanceReport> {
    check_timeout(args.wait_timeout, ctx.connection.response_timeout)?;
    let (campaign, mut links) = open_links(ctx)?;
    let items = campaign.select_items(args.items.item.as_deref())?;
    let stop = ctx.stop_on_signals()?;
    let mover = crate::http::service::start_regions(
        args.metrics_listen,
        &campaign,
        items.iter().map(|item| (*item).clone()).collect(),
        links
            .regions
            .iter()
            .zip(&links.targets)
            .map(|(region, target)| (region.name.clone(), target.clone()))
            .collect(),
        ctx.connection.response_timeout,
    )?;
    let started = Instant::now();
    let mut schedulers: Vec<Scheduler> = items
        .iter()
        .map(|_| Scheduler::new(args.interval, args.idle_after))
        .collect();
    let mut report = RebalanceReport {
        rounds: 0,
        transfers: 0,
        units_moved: 0,
        units_settled: 0,
        left_in_transit: 0,
        latency_p50_us: None,
        latency_p99_us: None,
        stranded: Vec::new(),
        items: Vec::new(),
    };
    let mut latencies: Vec<u64> = Vec::new();
    let mut was_unanswered = std::collections::BTreeMap::new();
    loop {
        links.reconnect();
        let mut round_books = Vec::new();
        for (item, scheduler) in items.iter().zip(&mut schedulers) {
            let books = match links.read_books(&campaign, &[item]) {
                Ok(mut books) => books.remove(0),
                Err(error) => {
                    log::line("regions", format!("item {}: {error:#}", item.id));
                    continue;
                }
            };
            let now = Instant::now();
            scheduler.observe(&books, now);
            let keys = item_keys(&campaign, &item.id);
            // Settle first: units in transit are stock nobody can sell.
            let settles: Vec<Move> = books
                .in_transit
                .iter()
                .map(|t| Move {
                    from: t.from.clone(),
                    to: t.to.clone(),
                    units: 0,
                    why: "settle",
                })
                .collect();
            let moves = scheduler.plan(&books, now);
            for planned in settles.iter().chain(&moves) {
                let done = links
                    .pair(&planned.from, &planned.to)
                    .and_then(|[from, to]| {
                        transfer::transfer(from, to, &keys, planned.units, args.wait_timeout)
                    });
                let transfer = match done {
                    Ok(transfer) => transfer,
                    Err(error) => {
                        log::line(
                            "regions",
                            format!(
                                "item {}: {} → {} {} units: {error:#}",
                                item.id, planned.from, planned.to, planned.units
                            ),
                        );
                        // The connection may owe a reply: make it again next round.
                        links.drop_conn(&planned.from, format!("{error:#}"));
                        links.drop_conn(&planned.to, format!("{error:#}"));
                        report.left_in_transit += 1;
                        continue;
                    }
                };
                if let Some(elapsed_us) = report.record(&item.id, planned, &transfer) {
                    latencies.push(elapsed_us);
                    scheduler.note_latency(Duration::from_micros(elapsed_us));
                }
            }
            match keep_sell_out_mark(&keys, &books, &mut links.regions) {
                Ok(changed) => {
                    for (region, marked) in changed {
                        log::line(
                            "regions",
                            format!(
                                "item {}: region {region} {}",
                                item.id,
                                if marked {
                                    "marked sold out everywhere"
                                } else {
                                    "no longer marked sold out everywhere"
                                }
                            ),
                        );
                    }
                }
                Err(error) => log::line("regions", format!("item {}: {error:#}", item.id)),
            }
            round_books.push(books);
            report.stranded = scheduler.stranded(Instant::now());
        }
        report.rounds += 1;
        // What the probes say: the totals, and the regions this round could
        // not read or reach (`/healthz` names them).
        let mut unanswered: std::collections::BTreeMap<String, String> = links
            .regions
            .iter()
            .filter_map(|r| r.down.clone().map(|why| (r.name.clone(), why)))
            .collect();
        for region in round_books.iter().flat_map(|b| &b.regions) {
            if let Some(error) = &region.error {
                unanswered
                    .entry(region.region.clone())
                    .or_insert_with(|| error.clone());
            }
        }
        for (region, why) in &unanswered {
            if !was_unanswered.contains_key(region) {
                log::line("regions", format!("region {region} unreadable: {why}"));
            }
        }
        for region in was_unanswered.keys() {
            if !unanswered.contains_key(region) {
                log::line("regions", format!("region {region} answers again"));
            }
        }
        was_unanswered = unanswered.clone();
        let now = Instant::now();
        mover.round_done(
            crate::operator::monitor::service::MoverTotals {
                rounds: report.rounds,
                transfers: report.transfers,
                units_moved: report.units_moved,
                units_settled: report.units_settled,
                left_in_transit: report.left_in_transit,
            },
            items.iter().zip(&schedulers).flat_map(|(item, scheduler)| {
                scheduler
                    .stranded(now)
                    .into_iter()
                    .map(|s| (item.id.clone(), s.region, s.total_ms))
            }),
            unanswered,
        );
        report.items = round_books;
        let out_of_time = args.run_for.is_some_and(|d| started.elapsed() >= d);
        if !args.watch || stop.load(Ordering::SeqCst) || out_of_time {
            break;
        }
        sleep_unless_stopped(args.interval, &stop);
        if stop.load(Ordering::SeqCst) {
            break;
        }
    }
    latencies.sort_unstable();
    report.latency_p50_us = percentile(&latencies, 0.5);
    report.latency_p99_us = percentile(&latencies, 0.99);
    Ok(report)
}

/// Run `seckill regions ACTION`.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<i32> {
    use crate::invocation::report::emit;
    match &args.action {
        Action::Status(items) => emit(ctx, &status(ctx, items, false)?),
        Action::Rebalance(rebalance_args) => emit(ctx, &rebalance(ctx, rebalance_args)?),
        Action::Move(move_args) => emit(ctx, &move_units(ctx, move_args)?),
        Action::Home(home_args) => emit(ctx, &home(ctx, home_args)?),
    }
}
