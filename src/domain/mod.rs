//! The sale itself. [`item`] is the one place that knows whether an item is
//! plain or bucketed and offers what commands do with an item; [`slot`] is
//! one hash tag's keys and what one script call does to them; [`buckets`]
//! is what a split item adds (the sweep, transfers, the rebalancer);
//! [`seats`] is what a seat item adds (a section per slot, seats picked and
//! held in the buy's own script);
//! [`orders`] carries orders from the streams into the order database;
//! [`reservations`] pays, cancels and expires; [`recovery`] reloads after
//! Redis lost data; [`kill_switch`] flips and remembers who flipped;
//! [`waiting_room`] admits shoppers fairly in front of the buy script.
//!
//! Inside, imports point one way: item → waiting_room → seats → buckets →
//! slot → kill_switch; reservations, recovery and orders use item, never the reverse.
//!
//! May import: redis_client, model, util.

pub mod buckets;
pub mod item;
pub mod kill_switch;
pub(crate) mod lookup;
pub mod operation;
pub mod orders;
pub(crate) mod preheat_plan;
pub(crate) mod reconcile;
pub(crate) mod recovery;
pub mod regions;
pub(crate) mod registry;
pub mod reservations;
pub mod seats;
pub mod slot;
pub mod waiting_room;
