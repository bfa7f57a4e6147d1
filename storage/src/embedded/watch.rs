//! Watches on the embedded store: committed batches fan out in memory; a watcher that starts in
//! the past, or falls behind the fan-out buffer, catches up from the `events` table.

use std::sync::{Arc, Mutex};

use redb::ReadableDatabase;

use super::handle::DbHandle;
use tokio::sync::{broadcast, mpsc};

use super::record::{raw_event, storage_err, Record, EVENTS, META, META_COMPACTED};
use crate::backend::{BackendWatch, KeyRange, RawEvent, WatchMessage};
use crate::{Result, StorageError};

/// Batches kept for slow receivers before they must catch up from disk.
const FANOUT_CAPACITY: usize = 1024;
/// Events read from disk per message while catching up.
const REPLAY_CHUNK: usize = 1000;

pub type Batch = Arc<(u64, Vec<RawEvent>)>;

/// Publishes committed batches, in revision order, to every backend watch.
pub struct Hub {
    state: Mutex<(u64, broadcast::Sender<Batch>)>,
}

impl Hub {
    pub fn new(revision: u64) -> Self {
        Self {
            state: Mutex::new((revision, broadcast::channel(FANOUT_CAPACITY).0)),
        }
    }

    pub fn publish(&self, events: Vec<RawEvent>, revision: u64) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.0 = revision;
        // No receivers is fine: nobody is watching.
        let _ = state.1.send(Arc::new((revision, events)));
    }

    /// A receiver and the revision up to which everything was published before it; taken under
    /// the publish lock so nothing falls between a disk replay and the live feed.
    fn subscribe(&self) -> (u64, broadcast::Receiver<Batch>) {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        (state.0, state.1.subscribe())
    }
}

/// Reads committed events with revision in `[from, until]` in `range`, at most `REPLAY_CHUNK`
/// scanned; returns them and the next revision to read.
fn replay(
    store: &DbHandle,
    range: &KeyRange,
    from: u64,
    until: u64,
) -> Result<(Vec<RawEvent>, u64)> {
    // Held past the transaction, which must end before a reopen can take the file.
    let db = store.get()?;
    let txn = db.begin_read().map_err(storage_err)?;
    let compacted = txn
        .open_table(META)
        .map_err(storage_err)?
        .get(META_COMPACTED)
        .map_err(storage_err)?
        .map(|g| g.value())
        .unwrap_or(0);
    if from <= compacted {
        return Err(StorageError::TooOld {
            requested: from as i64 - 1,
            oldest: compacted as i64,
        });
    }
    let events = txn.open_table(EVENTS).map_err(storage_err)?;
    let mut out = Vec::new();
    let mut scanned = 0;
    // Past the window unless the chunk fills up first (compaction leaves gaps, so the next
    // revision is not simply the count read).
    let mut next = until + 1;
    for item in events.range(from..=until).map_err(storage_err)? {
        let (revision, raw) = item.map_err(storage_err)?;
        let revision = revision.value();
        let record = Record::decode(raw.value())?;
        if range.contains(&record.key) {
            out.push(raw_event(&events, revision, record)?);
        }
        scanned += 1;
        if scanned == REPLAY_CHUNK {
            next = revision + 1;
            break;
        }
    }
    Ok((out, next))
}

pub fn watch(
    store: Arc<DbHandle>,
    hub: Arc<Hub>,
    range: KeyRange,
    start_revision: u64,
) -> Result<BackendWatch> {
    let (progress_tx, mut progress_rx) = mpsc::unbounded_channel::<()>();
    // Validate the start now so a compacted revision fails the call, not the first poll.
    let (published, rx) = hub.subscribe();
    let start = if start_revision == 0 {
        published + 1
    } else {
        start_revision
    };
    if start <= published {
        replay(&store, &range, start, start)?;
    }
    let messages = async_stream::try_stream! {
        let mut rx = rx;
        let mut published = published;
        // Next revision this watch has not yet delivered.
        let mut next = start;
        let mut progress_closed = false;
        loop {
            while next <= published {
                let (events, after) = replay(&store, &range, next, published)?;
                next = after;
                if !events.is_empty() {
                    yield WatchMessage::Events(events);
                }
            }
            tokio::select! {
                batch = rx.recv() => match batch {
                    Ok(batch) => {
                        let (revision, events) = (&batch.0, &batch.1);
                        if *revision < next {
                            continue;
                        }
                        let matching: Vec<RawEvent> = events
                            .iter()
                            .filter(|e| e.kv.mod_revision as u64 >= next && range.contains(&e.kv.key))
                            .cloned()
                            .collect();
                        next = revision + 1;
                        published = *revision;
                        if !matching.is_empty() {
                            yield WatchMessage::Events(matching);
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        // Too slow for the in-memory buffer: catch up from disk, then rejoin.
                        let (latest, fresh) = hub.subscribe();
                        rx = fresh;
                        published = latest;
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                request = progress_rx.recv(), if !progress_closed => {
                    match request {
                        Some(()) => yield WatchMessage::Progress(next as i64 - 1),
                        None => progress_closed = true,
                    }
                }
            }
        }
    };
    let progress = Arc::new(move || {
        let _ = progress_tx.send(());
    });
    Ok(BackendWatch {
        messages: Box::pin(messages),
        progress,
    })
}
