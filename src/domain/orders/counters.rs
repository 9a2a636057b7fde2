//! What one `consume` process did, counted where it happens (the order
//! pipeline) and read by its `/metrics` (`operator::monitor::metrics`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

/// What one `consume` process did, for its `/metrics`.
#[derive(Debug, Default)]
pub(crate) struct ConsumeCounters {
    /// item id → entries stored and acknowledged.
    stored: Mutex<BTreeMap<String, u64>>,
    store_retries: AtomicU64,
}

/// The counters of this process (one `consume` per process).
pub(crate) static CONSUME: LazyLock<ConsumeCounters> = LazyLock::new(ConsumeCounters::default);

impl ConsumeCounters {
    /// `n` entries of `item` were committed and acknowledged.
    pub(crate) fn add_stored(&self, item: &str, n: u64) {
        let mut stored = self.stored.lock().unwrap_or_else(|e| e.into_inner());
        *stored.entry(item.to_string()).or_default() += n;
    }

    /// One failed attempt to store a batch (it will be retried).
    pub(crate) fn add_store_retry(&self) {
        self.store_retries.fetch_add(1, Ordering::Relaxed);
    }

    /// Entries stored and acknowledged, per item id.
    pub(crate) fn stored(&self) -> BTreeMap<String, u64> {
        self.stored
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Failed attempts to store a batch.
    pub(crate) fn store_retries(&self) -> u64 {
        self.store_retries.load(Ordering::Relaxed)
    }
}
