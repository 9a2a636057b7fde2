//! Metrics for Prometheus: the sale's families and the counters `consume`
//! keeps, written in the text format of `util::prometheus`.
//!
//! `seckill status --format prometheus` writes the item families for
//! node_exporter's textfile collector; the long-running commands serve them
//! (and their own) at `/metrics` (`features::monitor::service`). Every item
//! sample carries `campaign` and `item` labels (the store retries only
//! `campaign`: one database transaction spans several items).
//!
//! A family typed `counter` never goes down while the sale runs (only `init`
//! starts it over), or Prometheus' `rate()` reads a drop as a reset: units
//! sold fall when a reservation is released, dead letters when they are
//! re-driven, so both are gauges.
use crate::domain::orders::counters::ConsumeCounters;
use crate::model::campaign::Campaign;
use crate::operator::monitor::status::{ItemStatus, WindowState};

pub(crate) use crate::util::prometheus::{Exposition, Metric, counter, gauge};

pub(crate) const STOCK_LEFT: Metric = gauge("seckill_stock_left", "Units left in Redis.");
pub(crate) const STOCK_INITIAL: Metric = gauge(
    "seckill_stock_initial",
    "The item's stock: units preheated, plus those preheat --recover carried over.",
);
pub(crate) const SOLD: Metric = gauge(
    "seckill_sold_units",
    "Units sold and held: initial stock minus stock left (falls when a reservation is released; starts over after init).",
);
pub(crate) const BUYERS: Metric = gauge("seckill_buyers", "Distinct users who bought.");
pub(crate) const PREHEATED: Metric = gauge(
    "seckill_preheated",
    "1 when the item is preheated in Redis, 0 when never preheated or expired.",
);
pub(crate) const WINDOW_OPEN: Metric = gauge(
    "seckill_window_open",
    "1 while the sale window is open on the Redis clock, 0 before, after, or not preheated.",
);
pub(crate) const KILL_SWITCH: Metric = gauge(
    "seckill_kill_switch",
    "1 while the kill switch refuses every buy, else 0.",
);
pub(crate) const STREAM_LENGTH: Metric =
    gauge("seckill_stream_length", "Entries in the order stream.");
pub(crate) const STREAM_PENDING: Metric = gauge(
    "seckill_stream_pending",
    "Order entries delivered to a consumer and not yet stored and acknowledged.",
);
pub(crate) const STREAM_LAG: Metric = gauge(
    "seckill_stream_lag",
    "Order entries not yet delivered to any consumer.",
);
pub(crate) const DEAD_LETTERS: Metric = gauge(
    "seckill_dead_letters",
    "Entries in the dead-letter stream (pending-claim adds them, dead-letter redrive removes them).",
);
pub(crate) const CONSUMER_PENDING: Metric = gauge(
    "seckill_consumer_pending",
    "Order entries delivered to this consumer of the group and not yet acknowledged.",
);
pub(crate) const CONSUMER_IDLE: Metric = gauge(
    "seckill_consumer_idle_seconds",
    "Seconds since this consumer of the group last read or claimed (a running consume reads every 500 ms).",
);
pub(crate) const KEYS_EXPIRY: Metric = gauge(
    "seckill_keys_expiry_timestamp_seconds",
    "When the item's keys expire (Unix time); reconcile must run before.",
);
pub(crate) const CARRIED_OVER: Metric = gauge(
    "seckill_carried_over_units",
    "Units of the orders preheat --recover carried over (stored before Redis lost its data; counted in stock_initial and sold_units).",
);
pub(crate) const RESERVATIONS_OVERDUE: Metric = gauge(
    "seckill_reservations_overdue",
    "Reservations past their payment deadline that nothing released yet (seckill expire releases them).",
);
pub(crate) const RESERVATIONS_OVERDUE_AGE: Metric = gauge(
    "seckill_reservations_overdue_oldest_seconds",
    "How long ago the oldest unreleased reservation's payment deadline passed (0 when none).",
);
pub(crate) const ROOM_JOINED: Metric = gauge(
    "seckill_room_joined",
    "Users who joined the item's waiting room.",
);
pub(crate) const ROOM_ADMITTED: Metric = gauge(
    "seckill_room_admitted",
    "The last position the waiting room admitted.",
);
pub(crate) const ROOM_ACTIVE: Metric = gauge(
    "seckill_room_active",
    "max_active rooms: admitted shoppers who have not bought and whose admission runs.",
);
pub(crate) const ROOM_PAUSED: Metric = gauge(
    "seckill_room_paused",
    "1 while the waiting room is paused (queue pause), else 0.",
);
pub(crate) const ROOM_TAIL_WAIT: Metric = gauge(
    "seckill_room_tail_wait_seconds",
    "The wait of a shopper joining the waiting room now.",
);
pub(crate) const ROOM_NEEDS_ADMITTER: Metric = gauge(
    "seckill_room_needs_admitter",
    "1 while the item is on sale (preheated, window not ended) and its room needs seckill queue admit --loop (max_active, a pre-queue not shuffled yet, buckets).",
);
pub(crate) const ROOM_ADMITTER_BEHIND: Metric = gauge(
    "seckill_room_admitter_behind_seconds",
    "How late the admitter's work is that Redis shows (an unshuffled pre-queue after starts_at, admissions not carried to buckets); 0 when none.",
);
pub(crate) const RESERVATION_UNITS: Metric = gauge(
    "seckill_reservation_units",
    "Units of reservations by state (reserved, paid, expired, cancelled); payment_timeout campaigns.",
);
pub(crate) const SEATS: Metric = gauge(
    "seckill_seats",
    "Seats of one section of a seat item by state (free, held, sold, blocked); they add up to the section's seats.",
);
pub(crate) const ORDERS_STORED: Metric = counter(
    "seckill_orders_stored_total",
    "Order entries this consume process stored in the database and acknowledged.",
);
pub(crate) const STORE_RETRIES: Metric = counter(
    "seckill_store_retries_total",
    "Failed attempts of this consume process to store a batch in the order database.",
);
pub(crate) const ORDERS_REFUSED: Metric = counter(
    "seckill_orders_refused_total",
    "Orders the database refused while this consume process stored the rest (left pending).",
);
pub(crate) const REDIS_UP: Metric = gauge(
    "seckill_redis_up",
    "1 when this scrape reached Redis, 0 when Redis failed.",
);
pub(crate) const DATABASE_UP: Metric = gauge(
    "seckill_database_up",
    "1 when this scrape reached the order database, 0 when it failed.",
);
pub(crate) const BUILD_INFO: Metric = gauge(
    "seckill_build_info",
    "Always 1: the version and commit of the seckill build serving these metrics.",
);
pub(crate) const LAST_SUCCESS: Metric = gauge(
    "seckill_last_success_timestamp_seconds",
    "When this process last completed a round of its work (consume: a read and store; expire, rebalance: a pass), Unix time.",
);

/// The families of [`ItemStatus`]: stock, sales, window, switch, stream, expiry.
pub(crate) fn add_statuses(exposition: &mut Exposition, campaign: &str, statuses: &[ItemStatus]) {
    for s in statuses {
        let labels = [("campaign", campaign), ("item", s.item.as_str())];
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        exposition.add(PREHEATED, &labels, flag(s.preheated));
        if let Some(stock) = s.stock_left {
            exposition.add(STOCK_LEFT, &labels, stock as f64);
        }
        if let Some(initial) = s.initial_stock {
            exposition.add(STOCK_INITIAL, &labels, initial as f64);
        }
        if let Some(sold) = s.sold {
            exposition.add(SOLD, &labels, sold as f64);
        }
        exposition.add(BUYERS, &labels, s.buyers as f64);
        exposition.add(
            WINDOW_OPEN,
            &labels,
            flag(s.window.state == WindowState::Open),
        );
        exposition.add(KILL_SWITCH, &labels, flag(s.kill_switch.on));
        exposition.add(STREAM_LENGTH, &labels, s.stream.length as f64);
        exposition.add(STREAM_PENDING, &labels, s.stream.pending as f64);
        if let Some(lag) = s.stream.lag {
            exposition.add(STREAM_LAG, &labels, lag as f64);
        }
        exposition.add(DEAD_LETTERS, &labels, s.dead_letter as f64);
        for consumer in &s.consumers {
            let labels = [labels[0], labels[1], ("consumer", consumer.name.as_str())];
            exposition.add(CONSUMER_PENDING, &labels, consumer.pending as f64);
            exposition.add(CONSUMER_IDLE, &labels, consumer.idle_ms as f64 / 1000.0);
        }
        if let Some(ms) = s.expires_in_ms {
            let at = (s.redis_time_ms + ms) as f64 / 1000.0;
            exposition.add(KEYS_EXPIRY, &labels, at);
        }
        exposition.add(CARRIED_OVER, &labels, s.carried_over.units as f64);
        if let Some(overdue) = s.overdue {
            exposition.add(RESERVATIONS_OVERDUE, &labels, overdue.orders as f64);
            exposition.add(
                RESERVATIONS_OVERDUE_AGE,
                &labels,
                overdue.oldest_ms.unwrap_or(0) as f64 / 1000.0,
            );
        }
        if let Some(room) = &s.room {
            exposition.add(ROOM_JOINED, &labels, room.joined as f64);
            exposition.add(ROOM_ADMITTED, &labels, room.serving as f64);
            exposition.add(ROOM_ACTIVE, &labels, room.active as f64);
            exposition.add(ROOM_PAUSED, &labels, flag(room.paused));
            exposition.add(ROOM_TAIL_WAIT, &labels, room.tail_eta_ms as f64 / 1000.0);
            let on_sale = s.preheated && s.window.state != WindowState::Ended;
            exposition.add(
                ROOM_NEEDS_ADMITTER,
                &labels,
                flag(on_sale && !room.needs_admitter.is_empty()),
            );
            exposition.add(
                ROOM_ADMITTER_BEHIND,
                &labels,
                room.admitter_behind_ms as f64 / 1000.0,
            );
        }
        let r = &s.reservations;
        if r != &crate::domain::reservations::Totals::default() {
            for (state, units) in [
                ("reserved", r.reserved_units),
                ("paid", r.paid_units),
                ("expired", r.expired_units),
                ("cancelled", r.cancelled_units),
            ] {
                let labels = [labels[0], labels[1], ("state", state)];
                exposition.add(RESERVATION_UNITS, &labels, units as f64);
            }
        }
        // A section not preheated has no seats to count: no series rather than zeros.
        for section in s
            .sections
            .iter()
            .filter(|c| c.free + c.held + c.sold + c.blocked > 0)
        {
            for (state, seats) in [
                ("free", section.free),
                ("held", section.held),
                ("sold", section.sold),
                ("blocked", section.blocked),
            ] {
                let labels = [
                    labels[0],
                    labels[1],
                    ("section", section.section.as_str()),
                    ("state", state),
                ];
                exposition.add(SEATS, &labels, f64::from(seats));
            }
        }
    }
}

/// `seckill_build_info{version, commit}`: the package version and the git
/// commit the build was stamped with (`unknown` for a build outside git).
pub(crate) fn add_build_info(exposition: &mut Exposition) {
    let stamp = env!("SECKILL_VERSION");
    let commit = stamp
        .split_once('(')
        .and_then(|(_, rest)| rest.split([' ', ')']).next())
        .filter(|c| !c.is_empty())
        .unwrap_or("unknown");
    exposition.add(
        BUILD_INFO,
        &[("version", env!("CARGO_PKG_VERSION")), ("commit", commit)],
        1.0,
    );
}

/// Add a consume process' counters; every item of the campaign gets a series from 0.
pub(crate) fn add_consume_counters(
    exposition: &mut Exposition,
    counters: &ConsumeCounters,
    refused: &std::collections::BTreeMap<String, u64>,
    campaign: &Campaign,
) {
    let stored = counters.stored();
    for item in &campaign.items {
        let labels = [
            ("campaign", campaign.id.as_str()),
            ("item", item.id.as_str()),
        ];
        let n = stored.get(&item.id).copied().unwrap_or(0);
        exposition.add(ORDERS_STORED, &labels, n as f64);
        let n = refused.get(&item.id).copied().unwrap_or(0);
        exposition.add(ORDERS_REFUSED, &labels, n as f64);
    }
    exposition.add(
        STORE_RETRIES,
        &[("campaign", &campaign.id)],
        counters.store_retries() as f64,
    );
}

pub(crate) const REGION_STOCK: Metric = gauge(
    "seckill_region_stock_left",
    "Units left in one region of a sale over several (docs/regions.md).",
);
pub(crate) const REGION_HOLDS: Metric = gauge(
    "seckill_region_units",
    "Units a region holds in all: its share, plus units credited from peers, less units sent.",
);
pub(crate) const REGION_SOLD: Metric = gauge(
    "seckill_region_sold_units",
    "Units a region sold and holds reserved: what it holds less what is left.",
);
pub(crate) const REGION_FENCED: Metric = gauge(
    "seckill_region_fenced",
    "1 while the region's slot of the item is fenced after a failover (nothing sells there).",
);
pub(crate) const REGION_IN_TRANSIT: Metric = gauge(
    "seckill_region_in_transit_units",
    "Units a region sent another that the other has not credited yet.",
);
pub(crate) const REGION_BREACHES: Metric = gauge(
    "seckill_region_breaches",
    "Invariants broken over the regions (a region unreadable counts): 0 when the books hold.",
);
pub(crate) const REGION_STRANDED: Metric = gauge(
    "seckill_region_stranded_units",
    "Units held by regions while another region of the item is at 0.",
);

/// The regions' families of each item (`seckill status --format prometheus`
/// on a campaign with regions).
pub(crate) fn add_region_books(
    exposition: &mut Exposition,
    campaign: &str,
    items: &[crate::domain::regions::books::ItemBooks],
) {
    for item in items {
        let labels = [("campaign", campaign), ("item", item.item.as_str())];
        for region in &item.regions {
            let Some(slot) = &region.slot else { continue };
            let labels = [labels[0], labels[1], ("region", region.region.as_str())];
            exposition.add(REGION_STOCK, &labels, slot.stock as f64);
            exposition.add(REGION_HOLDS, &labels, slot.initial as f64);
            exposition.add(REGION_SOLD, &labels, slot.sold() as f64);
            exposition.add(REGION_FENCED, &labels, if slot.fenced { 1.0 } else { 0.0 });
        }
        for transit in &item.in_transit {
            let labels = [
                labels[0],
                labels[1],
                ("from", transit.from.as_str()),
                ("to", transit.to.as_str()),
            ];
            exposition.add(REGION_IN_TRANSIT, &labels, transit.units as f64);
        }
        exposition.add(REGION_BREACHES, &labels, item.breaches.len() as f64);
        exposition.add(REGION_STRANDED, &labels, item.stranded as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_numbers_are_escaped_and_spelled_as_the_format_wants() {
        let mut e = Exposition::default();
        e.add(
            STOCK_LEFT,
            &[("campaign", "a\"b\\c\nd"), ("item", "1")],
            3.0,
        );
        e.add(STOCK_LEFT, &[("campaign", "x"), ("item", "2")], 0.5);
        e.add(KEYS_EXPIRY, &[("campaign", "x"), ("item", "2")], f64::NAN);
        let text = e.render();
        assert!(text.contains("seckill_stock_left{campaign=\"a\\\"b\\\\c\\nd\",item=\"1\"} 3\n"));
        assert!(text.contains("seckill_stock_left{campaign=\"x\",item=\"2\"} 0.5\n"));
        assert!(text.contains("} NaN\n"));
        assert_eq!(text.matches("# TYPE seckill_stock_left gauge").count(), 1);
    }
}
