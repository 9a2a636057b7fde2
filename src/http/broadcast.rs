//! The sell-out broadcast, heard by `serve` (docs/serve.md, "Cheap refusals"):
//! every script that empties a stock or brings one back from empty (a buy
//! taking the last unit, a bucketed item's proof, a cancel, an expiry, a
//! credit, a preheat) publishes one message on the shard channel named like
//! that slot's stock key; each instance listens to every slot's channel of
//! its campaign and re-reads the item a message names at once
//! ([`cache::refresh_item`]), so a sell-out is known everywhere and a
//! returned unit sells again within a round trip, not at the next recheck.
//!
//! Messages are advice: one lost (a connection that broke, a listener not
//! yet subscribed) is made good by re-reading every item each time the
//! subscription is (re)made, and by the periodic recheck, which stays.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Result;

use super::app::App;
use super::cache;
use crate::domain::item::SaleItem;
use crate::redis_client::shard_channels::{self, Listener};
use crate::util::{error_text, log};

/// How long a listener's connection may stay quiet before it is asked
/// whether it still answers; twice that without an answer, it is made again.
const TICK: Duration = Duration::from_secs(1);
/// Pause before subscribing again after a failure, doubled while it keeps
/// failing (a credential from an older `seckill acl` line is refused each
/// time, and each refusal is an `ACL LOG` entry), up to [`AGAIN_AT_MOST`].
const AGAIN_AFTER: Duration = Duration::from_millis(200);
const AGAIN_AT_MOST: Duration = Duration::from_secs(10);

/// Listen until the shutdown: subscribe, re-read everything, re-read each
/// item a message names; on a lost subscription, the same again.
pub(crate) fn spawn_listener(app: Arc<App>) -> Result<std::thread::JoinHandle<()>> {
    let mut item_of: HashMap<String, String> = HashMap::new();
    for sale in SaleItem::select(&app.campaign, None)? {
        for slot in sale.slots() {
            item_of.insert(slot.keys.stock.clone(), sale.id().to_string());
        }
    }
    let mut channels: Vec<String> = item_of.keys().cloned().collect();
    channels.sort();
    Ok(std::thread::Builder::new()
        .name("serve-broadcast".into())
        .spawn(move || {
            let mut failing = false;
            let mut pause = AGAIN_AFTER;
            while !app.draining.load(Ordering::SeqCst) {
                let lost = match shard_channels::listen(&app.target, &channels, TICK) {
                    Ok(listeners) => {
                        if failing {
                            log::line("serve", "listening to the sell-out broadcast again");
                        }
                        failing = false;
                        pause = AGAIN_AFTER;
                        // Whatever changed while nobody listened is read now.
                        refresh_all(&app);
                        hear(&app, &item_of, listeners)
                    }
                    Err(error) => Some(error),
                };
                if let Some(error) = lost
                    && !app.draining.load(Ordering::SeqCst)
                {
                    if !failing {
                        log::line(
                            "serve",
                            format!(
                                "the sell-out broadcast is not heard (the cache relies on its \
                                 {:?} recheck meanwhile; trying again): {}",
                                app.settings.recheck,
                                error_text::render(&error)
                            ),
                        );
                    }
                    failing = true;
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(AGAIN_AT_MOST);
                }
            }
        })?)
}

/// Read every listener's messages, one thread each, until one is lost (its
/// error returned) or the shutdown (`None`).
fn hear(
    app: &Arc<App>,
    item_of: &HashMap<String, String>,
    listeners: Vec<Listener>,
) -> Option<anyhow::Error> {
    let stop = Arc::new(AtomicBool::new(false));
    let (heard, messages) = mpsc::channel();
    for mut listener in listeners {
        let (stop, heard) = (Arc::clone(&stop), heard.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let next = listener.next();
                let lost = next.is_err();
                if heard.send(next).is_err() || lost {
                    return;
                }
            }
        });
    }
    drop(heard);
    let lost = loop {
        if app.draining.load(Ordering::SeqCst) {
            break None;
        }
        match messages.recv_timeout(TICK) {
            Ok(Ok(Some(channel))) => {
                if let Some(item) = item_of.get(&channel) {
                    let refreshed = app.pool.with(
                        |e| e,
                        |conn| cache::refresh_item(conn, &app.cache, &app.campaign, item),
                    );
                    if let Err(error) = refreshed {
                        log::line(
                            "serve",
                            format!(
                                "cannot re-read item {item} after its broadcast (the recheck \
                                 will): {}",
                                error_text::render(&error)
                            ),
                        );
                    }
                }
            }
            Ok(Ok(None)) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Ok(Err(error)) => break Some(error),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Some(anyhow::anyhow!("every listener stopped"));
            }
        }
    };
    stop.store(true, Ordering::SeqCst);
    lost
}

/// Every item re-read; a failure is left to the periodic recheck.
fn refresh_all(app: &App) {
    let _ = app.pool.with(
        |e| e,
        |conn| cache::refresh(conn, &app.cache, &app.campaign),
    );
}
