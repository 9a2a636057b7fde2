//! Go / no-go before a launch: every check of what would wreck the sale,
//! read from every Redis node (masters and replicas: a failover promotes a
//! replica, [`fleet`]), the campaign file, this machine's clock and the
//! order database. Each [`Check`] says what it saw and, when it is not
//! fine, what to do.
//!
//! Nothing unseen is taken as passed. A node that cannot be reached fails
//! the checks that needed it, and a check that reached no node fails
//! whatever it is. A check the user may not make (its ACL refuses `INFO`,
//! `CONFIG GET`, `ACL LIST`) is a no-go when it is critical — unless the
//! operator said so (`--allow-unchecked`), then a warning.
//!
//! Measurement only: `cmd::doctor` presents the list.

pub(crate) mod fleet;
pub(crate) mod memory;
mod nodes;
mod permissions;

use serde::Serialize;

use self::fleet::{Fleet, Reach};
use self::memory::SaleMemory;
use crate::domain::item::SaleItem;
use crate::domain::orders::{StoreLocation, is_no_schema, stream};
use crate::domain::slot;
use crate::domain::{reconcile, registry};
use crate::model::campaign::Campaign;
use crate::model::role::Role;
use crate::operator::acl::dryrun;
use crate::redis_client::conn::Conn;
use crate::util::error_text::render;
use crate::util::text::{counted, human_duration_ms, time_or_dash};

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    Ok,
    /// Worth knowing; the sale can go.
    Warn,
    /// Would wreck the sale, or could not be checked and must be: no-go.
    Fail,
}

/// One check.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Check {
    /// Short name, e.g. `eviction`.
    pub(crate) check: &'static str,
    pub(crate) verdict: Verdict,
    /// What was seen.
    pub(crate) detail: String,
    /// What to do when it is not ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fix: Option<String>,
    /// The table's cell when `detail` is a list that cannot fit one line
    /// (`9 streams, group ok`); `detail` stays whole in JSON and under `-v`.
    #[serde(skip)]
    pub(crate) summary: Option<String>,
}

impl Check {
    fn ok(check: &'static str, detail: impl Into<String>) -> Check {
        Check {
            check,
            verdict: Verdict::Ok,
            detail: detail.into(),
            fix: None,
            summary: None,
        }
    }

    fn not_ok(
        check: &'static str,
        verdict: Verdict,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            check,
            verdict,
            detail: detail.into(),
            fix: Some(fix.into()),
            summary: None,
        }
    }
}

/// What `doctor` is asked.
pub(crate) struct Request<'a> {
    pub(crate) campaign: &'a Campaign,
    pub(crate) store: &'a StoreLocation,
    /// The role whose whole path is checked.
    pub(crate) role: Role,
    /// The Redis user playing that role (`--user`, else the URL's own).
    pub(crate) user: &'a str,
    /// The URL's own user (`default` when it names none).
    pub(crate) url_user: &'a str,
    /// The database the URL names.
    pub(crate) db: i64,
    /// The target as messages show it (`host:port`, no password).
    pub(crate) display: String,
    /// The nightly reconcile's time of day, local minutes after midnight
    /// (as cron reads it).
    pub(crate) reconcile_at_min: Option<u32>,
    /// A check the user may not make is a warning, not a no-go.
    pub(crate) allow_unchecked: bool,
    /// How to reach every node.
    pub(crate) reach: Reach<'a>,
}

/// What `doctor` found.
pub(crate) struct Findings {
    pub(crate) checks: Vec<Check>,
    /// Each master's headroom against the units still to sell there.
    pub(crate) sale_memory: Vec<SaleMemory>,
}

/// Clock difference that is worth a warning (ms).
const CLOCK_WARN_MS: i64 = 500;

/// Run every check. `main` is the connection every command of the sale
/// would use (the cluster client on a cluster), or why it failed.
pub(crate) fn run(main: std::result::Result<&mut Conn, String>, request: &Request) -> Findings {
    let mut fleet = Fleet::discover(&request.reach);
    let mut checks = Vec::new();
    let mut main = main;
    checks.push(connection(&main, &fleet, request));
    checks.push(nodes::version(&mut fleet, request));
    checks.push(nodes::eviction(&mut fleet, request));
    let (memory_checks, sale_memory) = nodes::memory(&mut fleet, main.as_deref_mut().ok(), request);
    checks.extend(memory_checks);
    checks.push(nodes::persistence(&mut fleet, request));
    checks.push(nodes::replicas(&mut fleet, request));
    if fleet.cluster {
        checks.push(nodes::cluster_state(&mut fleet, request));
        checks.push(nodes::placement(&fleet, request.campaign));
    }
    checks.push(nodes::acl_users(&mut fleet, request));
    checks.extend(nodes::clocks(main.as_deref_mut().ok(), &request.display));
    checks.extend(window(request));
    checks.push(order_database(request.store));
    match main {
        Ok(conn) => {
            checks.push(consumer_group(conn, request.campaign));
            checks.push(other_campaigns(conn, request.campaign));
            checks.push(fence(conn, request.campaign));
        }
        Err(why) => {
            for name in ["consumer_group", "other_campaigns", "fence"] {
                checks.push(Check::not_ok(
                    name,
                    Verdict::Warn,
                    format!("cannot check: no connection ({why})"),
                    "see the connect check",
                ));
            }
        }
    }
    checks.push(permissions::check(&mut fleet, request));
    checks.push(nodes::max_clients(&mut fleet, request));
    Findings {
        checks,
        sale_memory,
    }
}

/// Whether the checks say go (no `fail`).
pub(crate) fn go(checks: &[Check]) -> bool {
    checks.iter().all(|c| c.verdict != Verdict::Fail)
}

/// The URL's user can connect: through the client every command uses, and
/// to every node on its own (a node where the user cannot log in — a
/// replica without the user — stops the role the day it is promoted).
fn connection(
    main: &std::result::Result<&mut Conn, String>,
    fleet: &Fleet,
    request: &Request,
) -> Check {
    let user = request.url_user;
    let mut problems = Vec::new();
    if let Err(why) = main {
        problems.push(format!("cannot connect: {why}"));
    }
    if let Some(why) = &fleet.unknown
        && fleet.nodes.is_empty()
    {
        problems.push(why.clone());
    }
    for node in &fleet.nodes {
        if let Err(why) = &node.conn {
            problems.push(format!("{}: {why}", node.named()));
        }
    }
    if problems.is_empty() {
        return Check::ok(
            "connect",
            format!("user {user} logs in on every node ({})", fleet.census()),
        );
    }
    Check::not_ok(
        "connect",
        Verdict::Fail,
        format!("as user {user}: {}", problems.join("; ")),
        "every node must take this user: set the role's line on each node, replicas included \
         (ACL users are per node; a failover promotes a replica), and bring back a node that \
         does not answer",
    )
}

fn window(request: &Request) -> Vec<Check> {
    let campaign = request.campaign;
    let now = chrono::Utc::now().timestamp_millis();
    let mut checks = vec![match campaign.starts_at_ms {
        Some(at) if at > now => Check::ok(
            "window",
            format!(
                "opens {} (in {})",
                time_or_dash(Some(at)),
                human_duration_ms(at - now)
            ),
        ),
        Some(at) => Check::not_ok(
            "window",
            Verdict::Warn,
            format!(
                "starts_at {} is past: the sale opens at preheat",
                time_or_dash(Some(at))
            ),
            "set starts_at to the launch time if the sale must not open before it",
        ),
        None => Check::not_ok(
            "window",
            Verdict::Warn,
            "no starts_at: the sale opens at preheat",
            "set starts_at to the launch time if the sale must not open before it",
        ),
    }];
    let Some(ends) = campaign.ends_at_ms else {
        checks.push(Check::not_ok(
            "keys_outlive_reconcile",
            Verdict::Warn,
            "no ends_at: the keys never expire",
            "set ends_at and keep_after_end, so the sale's keys go once the nightly reconcile has run",
        ));
        return checks;
    };
    let expire = campaign.expire_at_ms().unwrap_or(ends);
    let reconcile = match request.reconcile_at_min {
        Some(minute) => first_local_time_after(ends, minute),
        // A nightly job runs within a day of the end.
        None => ends + 86_400_000,
    };
    checks.push(if expire > reconcile {
        Check::ok(
            "keys_outlive_reconcile",
            format!(
                "keys expire {}, after the reconcile of {}",
                time_or_dash(Some(expire)),
                time_or_dash(Some(reconcile))
            ),
        )
    } else {
        Check::not_ok(
            "keys_outlive_reconcile",
            Verdict::Fail,
            format!(
                "keys expire {}, before the reconcile of {} (keep_after_end is too short)",
                time_or_dash(Some(expire)),
                time_or_dash(Some(reconcile))
            ),
            "raise keep_after_end (e.g. 26h): reconcile proves nothing once the keys are gone",
        )
    });
    checks
}

/// The first moment after `after_ms` when this machine's local clock reads
/// `minute` minutes after midnight: when cron starts a job written for
/// that time of day (`status --check` reads `--reconcile-at` the same way).
/// A time the clocks skip that day (a DST gap) is taken an hour later.
pub(crate) fn first_local_time_after(after_ms: i64, minute: u32) -> i64 {
    use chrono::{Local, NaiveTime, TimeZone};
    let time = NaiveTime::from_hms_opt(minute / 60, minute % 60, 0).unwrap_or_default();
    let Some(after) = Local.timestamp_millis_opt(after_ms).earliest() else {
        return after_ms + 86_400_000;
    };
    let mut date = after.date_naive();
    for _ in 0..3 {
        let wall = date.and_time(time);
        let at = wall.and_local_timezone(Local).earliest().or_else(|| {
            (wall + chrono::Duration::hours(1))
                .and_local_timezone(Local)
                .earliest()
        });
        if let Some(at) = at
            && at.timestamp_millis() > after_ms
        {
            return at.timestamp_millis();
        }
        date = date.succ_opt().unwrap_or(date);
    }
    after_ms + 86_400_000
}

fn order_database(store: &StoreLocation) -> Check {
    let shown = store.display();
    if store.require_existing().is_err() {
        return Check::not_ok(
            "order_database",
            Verdict::Warn,
            format!("{shown} does not exist yet"),
            "`seckill consume` creates it; start it before the sale opens",
        );
    }
    let mut opened = match store.open_existing() {
        Ok(opened) => opened,
        Err(e) if is_no_schema(&e) => {
            return Check::not_ok(
                "order_database",
                Verdict::Warn,
                format!("{shown}: reachable, no schema yet: consume creates it"),
                "start `seckill consume` before the sale opens: it creates the tables on its first start",
            );
        }
        Err(e) => {
            return Check::not_ok(
                "order_database",
                Verdict::Fail,
                format!("{shown}: {}", render(&e)),
                "make the order database reachable (URL, password, network) before the sale: consume stores nothing without it",
            );
        }
    };
    if !opened.accepts_writes() {
        return Check::not_ok(
            "order_database",
            Verdict::Fail,
            format!("{shown} refuses writes"),
            "give the database user INSERT/UPDATE on the orders and order_seats tables, and free disk",
        );
    }
    Check::ok(
        "order_database",
        format!("{shown}: reachable, writable, schema current"),
    )
}

fn consumer_group(conn: &mut Conn, campaign: &Campaign) -> Check {
    if !dryrun::may_send(conn, &["XINFO", "GROUPS", &stream_key(campaign)]).unwrap_or(true) {
        return Check::not_ok(
            "consumer_group",
            Verdict::Warn,
            "cannot check: XINFO GROUPS is refused to this user",
            "run doctor as the operator or an admin user",
        );
    }
    let mut missing = Vec::new();
    let mut preheated = 0;
    for (item, keys) in crate::domain::item::order_streams(campaign) {
        match stream::group_info(conn, &keys) {
            Ok(Some(_)) => preheated += 1,
            Ok(None) => missing.push(format!("{} ({})", item.id, keys.orders)),
            Err(e) => {
                return Check::not_ok(
                    "consumer_group",
                    Verdict::Warn,
                    format!("cannot check: {}", render(&e)),
                    "run doctor as the operator or an admin user",
                );
            }
        }
    }
    let streams = i64::try_from(preheated + missing.len()).unwrap_or(i64::MAX);
    if missing.is_empty() {
        Check {
            summary: Some(format!("{}, group ok", counted(streams, "stream"))),
            ..Check::ok(
                "consumer_group",
                format!("{preheated} stream(s) have the orders-db group"),
            )
        }
    } else {
        Check {
            summary: Some(format!(
                "no group yet on {} of {}",
                missing.len(),
                counted(streams, "stream")
            )),
            ..Check::not_ok(
                "consumer_group",
                Verdict::Warn,
                format!("no consumer group yet on {}", missing.join(", ")),
                "`seckill preheat` creates it (consume does too)",
            )
        }
    }
}

/// No item is fenced (docs/failover.md, "The fence"): a fenced item sells
/// nothing until `reconcile --fence`, so it is a no-go.
fn fence(conn: &mut Conn, campaign: &Campaign) -> Check {
    // lua/fence.lua reads the process's run_id (INFO server): a role
    // refused it is not made to leave a refusal in the ACL log.
    if !dryrun::may_send(conn, &["INFO", "server"]).unwrap_or(true) {
        return Check::not_ok(
            "fence",
            Verdict::Warn,
            "cannot check: INFO server is refused to this user",
            "run doctor as the operator or an admin user",
        );
    }
    let items = match SaleItem::select(campaign, None) {
        Ok(items) => items,
        Err(e) => {
            return Check::not_ok("fence", Verdict::Fail, render(&e), "fix the campaign file");
        }
    };
    let mut fenced = Vec::new();
    for item in &items {
        match reconcile::fence::states(conn, item) {
            Ok(states) => {
                if let Some(state) = states.iter().find(|s| s.is_fenced()) {
                    fenced.push(format!(
                        "{} (preheated on Redis process {}, {} holds it now)",
                        item.id(),
                        state.recorded_run_id,
                        state.seen_run_id
                    ));
                }
            }
            Err(e) => {
                return Check::not_ok(
                    "fence",
                    Verdict::Warn,
                    format!("cannot check: {}", render(&e)),
                    "run doctor as the operator or an admin user",
                );
            }
        }
    }
    if fenced.is_empty() {
        Check::ok("fence", format!("no item fenced ({} checked)", items.len()))
    } else {
        Check::not_ok(
            "fence",
            Verdict::Fail,
            format!(
                "fenced after a failover or restart (every buy answers `fenced`): {}",
                fenced.join(", ")
            ),
            "`seckill reconcile --fence` re-applies what the order database proves was sold \
             and reopens the sale",
        )
    }
}

fn other_campaigns(conn: &mut Conn, campaign: &Campaign) -> Check {
    let cannot = |why: String| {
        Check::not_ok(
            "other_campaigns",
            Verdict::Warn,
            format!("cannot check: {why}"),
            "run doctor as the operator or an admin user",
        )
    };
    if !dryrun::may_send(conn, &["HGETALL", registry::REGISTRY_KEY]).unwrap_or(true) {
        return cannot(format!(
            "HGETALL {} is refused to this user",
            registry::REGISTRY_KEY
        ));
    }
    let now = match slot::redis_now_ms(conn) {
        Ok(now) => now,
        Err(e) => return cannot(render(&e)),
    };
    match registry::collisions(conn, campaign, now) {
        Err(e) => cannot(render(&e)),
        Ok(collisions) if collisions.is_empty() => {
            let live = registry::live(conn, now).unwrap_or_default();
            Check::ok(
                "other_campaigns",
                format!("live on this Redis: {}", registry::describe(&live)),
            )
        }
        Ok(collisions) => Check::not_ok(
            "other_campaigns",
            Verdict::Fail,
            collisions
                .iter()
                .map(|(e, items)| {
                    format!(
                        "{} ({}) sells item(s) {} in the same window",
                        e.campaign,
                        e.file,
                        items.join(", ")
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
            "one sale per item at a time: is the campaign id a typo of that one's? (preheat refuses it)",
        ),
    }
}

/// The first item's order stream, to ask whether the group may be read.
fn stream_key(campaign: &Campaign) -> String {
    crate::domain::item::order_streams(campaign)
        .first()
        .map(|(_, keys)| keys.orders.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reconcile_time_is_read_as_local_time() {
        // Whatever the machine's zone, the answer is that time of day on
        // its own clock, within a day after the end.
        use chrono::{Local, TimeZone, Timelike};
        let ends = 1_900_000_000_000;
        let at = first_local_time_after(ends, 3 * 60);
        assert!(at > ends && at <= ends + 86_400_000 + 3_600_000, "{at}");
        let local = Local.timestamp_millis_opt(at).unwrap();
        assert_eq!((local.hour(), local.minute()), (3, 0));
    }
}
