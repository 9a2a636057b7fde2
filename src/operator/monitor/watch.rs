//! `status --watch`'s sampling, apart from its drawing: a thread reads every
//! item once per interval on a connection of its own and hands each sample
//! (or what failed) to the console. The console therefore never freezes on
//! a Redis that stopped answering — it can say the view is stale while a
//! read hangs until `--response-timeout` — and it stops at once on a signal.

use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::domain::item::SaleItem;
use crate::model::campaign::Campaign;
use crate::operator::monitor::status::{ItemStatus, StatusReader};
use crate::redis_client::conn::{Conn, RedisTarget};

/// One sample of the watched items.
pub(crate) enum Sample {
    /// Every item, read at one instant per item.
    Read(Vec<ItemStatus>),
    /// The read (or the connect before it) failed: why, on one line.
    Failed(String),
}

/// Start sampling `item` (or every item) of `campaign` every `every`, the
/// first sample at once on `conn`. The thread ends when the receiver is dropped.
pub(crate) fn start(
    campaign: Campaign,
    item: Option<String>,
    target: RedisTarget,
    conn: Conn,
    every: Duration,
) -> Result<Receiver<Sample>> {
    // Refused here, before the thread: an unknown item is a usage error.
    SaleItem::select(&campaign, item.as_deref())?;
    let (sender, receiver) = mpsc::channel();
    std::thread::Builder::new()
        .name("status-sampler".into())
        .spawn(move || {
            let mut conn = Some(conn);
            let mut reader = StatusReader::default();
            loop {
                let started = Instant::now();
                let sample = (|| -> Result<Vec<ItemStatus>> {
                    let items = SaleItem::select(&campaign, item.as_deref())?;
                    let conn = match &mut conn {
                        Some(conn) => conn,
                        None => conn.insert(target.connect()?),
                    };
                    reader.read_items(conn, &items)
                })();
                let sample = match sample {
                    Ok(statuses) => Sample::Read(statuses),
                    Err(error) => {
                        // The old connection may still owe a reply.
                        conn = None;
                        Sample::Failed(crate::util::error_text::render(&error))
                    }
                };
                if sender.send(sample).is_err() {
                    return;
                }
                std::thread::sleep(every.saturating_sub(started.elapsed()));
            }
        })
        .context("cannot start the status sampler")?;
    Ok(receiver)
}
