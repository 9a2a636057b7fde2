//! One use case per operation a shopper or the shop asks for: [`buy`] (or
//! reserve), [`lookup`] ("did I get it?"), [`order`] (pay, cancel), [`queue`]
//! (join the waiting room, read where one stands) and [`register`], with
//! the [`limits`] above the item a buy claims first. Each
//! checks its request, runs it, waits for replicas when asked, and returns
//! a typed answer or a typed [`Failure`]; the two doors — the command line
//! (`cmd/`) and the HTTP door (`http/`) — only turn the request into one of
//! these and the result into their own words. A third door (a queue
//! consumer, gRPC) would be a third renderer.
//!
//! Every operation is blocking and takes a connection; serve runs them on
//! blocking workers whose connection is the shared, pipelined one
//! (`redis_client::conn::SharedConn`). A buy that is one script call also
//! has an async path ([`buy::Buy::run_async`]) sharing all but the I/O, so
//! serve's hottest request skips the hand-off to a blocking worker.
//!
//! May import: domain::lookup, domain::reservations, domain::item, domain::waiting_room, domain::slot, redis_client, model, util.

pub mod buy;
mod failure;
pub mod limits;
pub mod lookup;
pub mod order;
pub mod queue;
pub mod register;

pub use failure::{Failure, FailureKind, Invalid, MAX_ID_BYTES, Retry, check_id};

use crate::domain::item::SaleItem;
use crate::model::campaign::{Campaign, Item};

/// `id`'s item of `campaign`, or the refusal that lists the items it has.
fn item_of<'a>(campaign: &'a Campaign, id: &str) -> Result<&'a Item, Failure> {
    campaign.item(id).map_err(|error| {
        Failure::invalid(Invalid::UnknownItem(crate::util::error_text::render(
            &error,
        )))
    })
}

/// The waiting room of `campaign`'s item `id`, or the refusal saying there is none.
fn room_of(campaign: &Campaign, id: &str) -> Result<crate::domain::waiting_room::Room, Failure> {
    let item = item_of(campaign, id)?;
    SaleItem::live(campaign, item).into_room().ok_or_else(|| {
        Failure::invalid(Invalid::NoWaitingRoom(format!(
            "item {id} has no waiting room: buy it directly"
        )))
    })
}
