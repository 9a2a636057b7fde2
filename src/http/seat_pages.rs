//! The seat page's snapshots (`seats`): per section of every seat item,
//! the page last read and when, behind one lock per section, so that views
//! of a section read Redis at most once per [`FRESH_FOR`] however many come
//! at once (the first stale view reads; the others wait for it and answer
//! what it read).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::domain::operation::Failure;
use crate::model::campaign::Campaign;

/// How old a snapshot may be before a view reads the section again.
pub(crate) const FRESH_FOR: Duration = Duration::from_millis(100);

/// One section's last snapshot, as the JSON answered.
#[derive(Debug, Default)]
struct Snapshot {
    /// When the last read was attempted (it set the 100 ms clock, read or not).
    attempted: Option<Instant>,
    /// The page of the last read that worked.
    body: Option<Arc<Vec<u8>>>,
    /// Why the last attempt failed, while no later one worked.
    failed: Option<String>,
}

/// One section: its item, its position among the item's sections (its
/// slot), and its snapshot.
pub(crate) struct Place {
    pub(crate) item: String,
    pub(crate) index: usize,
    snapshot: tokio::sync::Mutex<Snapshot>,
}

/// What a view answers.
pub(crate) enum Shown {
    /// The page (a snapshot at most [`FRESH_FOR`] old, or the last one read
    /// while reading fails).
    Page(Arc<Vec<u8>>),
    /// This view's read failed and no page was ever read.
    Failed(Failure),
    /// A read failed less than [`FRESH_FOR`] ago and no page was ever read: why.
    Unread(String),
}

impl Place {
    /// The page for a view now: the snapshot, read again with `read` first
    /// when older than [`FRESH_FOR`] (or never read).
    pub(crate) async fn shown<F, Fut>(&self, read: F) -> Shown
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Vec<u8>, Failure>>,
    {
        let mut snapshot = self.snapshot.lock().await;
        if snapshot
            .attempted
            .is_none_or(|at| at.elapsed() >= FRESH_FOR)
        {
            // The clock starts before the read: reads of one section start
            // at least FRESH_FOR apart, however long each takes.
            snapshot.attempted = Some(Instant::now());
            match read().await {
                Ok(body) => {
                    snapshot.body = Some(Arc::new(body));
                    snapshot.failed = None;
                }
                Err(failure) => {
                    snapshot.failed = Some(crate::util::error_text::render(&failure.cause));
                    if snapshot.body.is_none() {
                        return Shown::Failed(failure);
                    }
                }
            }
        }
        match (&snapshot.body, &snapshot.failed) {
            (Some(body), _) => Shown::Page(Arc::clone(body)),
            (None, failed) => Shown::Unread(failed.clone().unwrap_or_default()),
        }
    }
}

/// Every section of every seat item of the campaign: (item, section) → its snapshot.
pub(crate) struct SeatPages {
    sections: HashMap<(String, String), Place>,
}

impl SeatPages {
    /// No snapshot yet: the first view of each section reads it.
    pub(crate) fn new(campaign: &Campaign) -> SeatPages {
        let mut sections = HashMap::new();
        for item in &campaign.items {
            let Some(seating) = &item.seating else {
                continue;
            };
            for (index, section) in seating.sections.iter().enumerate() {
                sections.insert(
                    (item.id.clone(), section.id.clone()),
                    Place {
                        item: item.id.clone(),
                        index,
                        snapshot: tokio::sync::Mutex::new(Snapshot::default()),
                    },
                );
            }
        }
        SeatPages { sections }
    }

    /// Section `section` of `item`, if the campaign has it.
    pub(crate) fn place(&self, item: &str, section: &str) -> Option<&Place> {
        self.sections.get(&(item.to_string(), section.to_string()))
    }
}
