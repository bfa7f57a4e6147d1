//! DeltaFIFO: the queue between the reflector (producer) and the informer's processing loop
//! (consumer). Changes accumulate per object key as Deltas, so a consumer sees everything that
//! happened to an object since it last looked, and each key is queued once, in the order it
//! first changed. Objects wait here as stored (the watch cache's bytes), not decoded.

use std::collections::{HashMap, HashSet, VecDeque};
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};

use registry::store::Encoded;
use thiserror::Error;
use tokio::sync::{watch, Notify};
use tracing::{debug, warn};

use super::delta::{
    dedup_deletions, DeletedFinalStateUnknown, Delta, DeltaObject, DeltaType, Deltas,
};
use super::key::KeyError;

/// What the consumer already holds (the informer's indexer), so a relist can tell which objects
/// vanished and a resync knows what to re-deliver.
pub trait KnownObjects: Send + Sync {
    fn list_keys(&self) -> Vec<String>;
    fn get_by_key(&self, key: &str) -> Option<Encoded>;
}

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, Error)]
pub enum FifoError {
    #[error(transparent)]
    Key(#[from] KeyError),
}

/// How processing a popped item failed.
#[derive(Debug)]
pub enum ProcessError {
    /// Put the item back unless newer deltas for its key arrived meanwhile (upstream's
    /// ErrRequeue), then report the error.
    Requeue(BoxError),
    Failed(BoxError),
}

#[derive(Debug, Error)]
pub enum PopError {
    #[error("DeltaFIFO is closed")]
    Closed,
    #[error("processing {key} failed (requeued: {requeued}): {error}")]
    Process {
        key: String,
        requeued: bool,
        error: BoxError,
    },
}

#[derive(Default)]
struct State {
    items: HashMap<String, Deltas>,
    /// Keys in FIFO order, each at most once. A key may linger here after its item was
    /// dropped; pop skips it.
    queue: VecDeque<String>,
    /// Something was put in, by the first replace or any add.
    populated: bool,
    /// Items of the first replace not yet popped.
    initial_population_count: usize,
    closed: bool,
}

impl State {
    fn has_synced(&self) -> bool {
        self.populated && self.initial_population_count == 0
    }

    fn last_is_deletion(&self, key: &str) -> bool {
        self.items
            .get(key)
            .and_then(|d| d.last())
            .is_some_and(|d| d.kind == DeltaType::Deleted)
    }

    fn queue_action(
        &mut self,
        kind: DeltaType,
        object: DeltaObject<Encoded>,
    ) -> Result<(), KeyError> {
        let key = object.key()?;
        // A resync delivering the last known state would resurrect an object whose deletion is
        // already queued.
        if kind == DeltaType::Sync && self.last_is_deletion(&key) {
            return Ok(());
        }
        let deltas = self.items.entry(key.clone()).or_insert_with(|| {
            self.queue.push_back(key);
            Vec::new()
        });
        deltas.push(Delta { kind, object });
        dedup_deletions(deltas);
        Ok(())
    }

    fn add_if_not_present(&mut self, key: String, deltas: Deltas) {
        if self.items.contains_key(&key) {
            return;
        }
        self.queue.push_back(key.clone());
        self.items.insert(key, deltas);
    }
}

/// Takes the oldest queued item out.
fn next_item(state: &mut State) -> Option<(String, Deltas)> {
    while let Some(key) = state.queue.pop_front() {
        state.initial_population_count = state.initial_population_count.saturating_sub(1);
        if let Some(deltas) = state.items.remove(&key) {
            return Some((key, deltas));
        }
    }
    None
}

#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Status {
    synced: bool,
    closed: bool,
}

pub struct DeltaFifo {
    state: Mutex<State>,
    known: Option<Arc<dyn KnownObjects>>,
    /// Wakes poppers when an item arrives or the queue closes.
    changed: Notify,
    status: watch::Sender<Status>,
}

impl DeltaFifo {
    /// A queue that detects vanished objects against `known` (usually the informer's indexer),
    /// or against its own content when there is none.
    pub fn new(known: Option<Arc<dyn KnownObjects>>) -> Self {
        Self {
            state: Mutex::new(State::default()),
            known,
            changed: Notify::new(),
            status: watch::Sender::new(Status::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes synced/closed to waiters and wakes poppers; called with the lock held so the
    /// published status matches the state.
    fn publish(&self, state: &State) {
        let now = Status {
            synced: state.has_synced(),
            closed: state.closed,
        };
        self.status.send_if_modified(|s| {
            let changed = *s != now;
            *s = now;
            changed
        });
        self.changed.notify_waiters();
    }

    fn act(&self, kind: DeltaType, object: DeltaObject<Encoded>) -> Result<(), FifoError> {
        let mut state = self.lock();
        state.populated = true;
        state.queue_action(kind, object)?;
        self.publish(&state);
        Ok(())
    }

    pub fn add(&self, obj: Encoded) -> Result<(), FifoError> {
        self.act(DeltaType::Added, DeltaObject::Object(obj))
    }

    pub fn update(&self, obj: Encoded) -> Result<(), FifoError> {
        self.act(DeltaType::Updated, DeltaObject::Object(obj))
    }

    /// Queues a deletion, unless the object is neither known nor queued: then a relist has
    /// already reported it gone, and a second report would only confuse handlers.
    pub fn delete(&self, obj: impl Into<DeltaObject<Encoded>>) -> Result<(), FifoError> {
        let object = obj.into();
        let key = object.key()?;
        let mut state = self.lock();
        state.populated = true;
        let queued = state.items.contains_key(&key);
        let known = match &self.known {
            Some(known) => known.get_by_key(&key).is_some(),
            None => false,
        };
        if !queued && !known {
            return Ok(());
        }
        state.queue_action(DeltaType::Deleted, object)?;
        self.publish(&state);
        Ok(())
    }

    /// Puts back deltas taken out by a pop, unless the key has been queued again since (the
    /// newer deltas then supersede them).
    pub fn add_if_not_present(&self, deltas: Deltas) -> Result<(), FifoError> {
        let Some(newest) = deltas.last() else {
            return Ok(());
        };
        let key = newest.object.key()?;
        let mut state = self.lock();
        state.populated = true;
        state.add_if_not_present(key, deltas);
        self.publish(&state);
        Ok(())
    }

    /// A full list at `resource_version`: every listed object gets a Replaced delta, and every
    /// object queued or known but not listed gets a Deleted delta with a tombstone, since its
    /// deletion was missed.
    pub fn replace(&self, list: Vec<Encoded>, resource_version: &str) -> Result<(), FifoError> {
        let mut state = self.lock();
        let mut listed = HashSet::with_capacity(list.len());
        for obj in list {
            let object = DeltaObject::Object(obj);
            listed.insert(object.key()?);
            state.queue_action(DeltaType::Replaced, object)?;
        }
        let mut deletions = 0;
        let vanished_queued: Vec<(String, Option<Encoded>)> = state
            .items
            .iter()
            .filter(|(key, _)| !listed.contains(*key))
            .map(|(key, deltas)| {
                let last = deltas.last().and_then(|d| d.object.object()).cloned();
                (key.clone(), last)
            })
            .collect();
        for (key, obj) in vanished_queued {
            deletions += 1;
            let tombstone = DeletedFinalStateUnknown { key, obj };
            state.queue_action(DeltaType::Deleted, tombstone.into())?;
        }
        if let Some(known) = &self.known {
            for key in known.list_keys() {
                if listed.contains(&key) || state.items.contains_key(&key) {
                    continue;
                }
                let obj = known.get_by_key(&key);
                if obj.is_none() {
                    warn!(
                        key,
                        "known object vanished during replace; tombstone without object"
                    );
                }
                deletions += 1;
                let tombstone = DeletedFinalStateUnknown { key, obj };
                state.queue_action(DeltaType::Deleted, tombstone.into())?;
            }
        }
        if !state.populated {
            state.populated = true;
            state.initial_population_count = listed.len() + deletions;
        }
        debug!(
            resource_version,
            listed = listed.len(),
            deletions,
            "DeltaFIFO replaced"
        );
        self.publish(&state);
        Ok(())
    }

    /// Queues a Sync delta for every known object that has nothing queued: a queued change is
    /// newer than what the consumer holds, and re-delivering the older state would undo it.
    pub fn resync(&self) -> Result<(), FifoError> {
        let Some(known) = &self.known else {
            return Ok(());
        };
        let mut state = self.lock();
        for key in known.list_keys() {
            if state.items.get(&key).is_some_and(|d| !d.is_empty()) {
                continue;
            }
            if let Some(obj) = known.get_by_key(&key) {
                state.queue_action(DeltaType::Sync, DeltaObject::Object(obj))?;
            }
        }
        self.publish(&state);
        Ok(())
    }

    /// Waits for the oldest key and hands its Deltas to `process`, which runs under the queue's
    /// lock: a replace cannot interleave between taking the item and the consumer applying it
    /// to what `KnownObjects` reports, so `process` must be quick and must not block. The
    /// queue drains after `close` before reporting Closed.
    pub async fn pop<F>(&self, process: F) -> Result<Deltas, PopError>
    where
        F: FnOnce(&Deltas) -> Result<(), ProcessError>,
    {
        loop {
            let mut woken = pin!(self.changed.notified());
            // Registered before looking, so a change between the look and the wait still wakes.
            woken.as_mut().enable();
            {
                let mut state = self.lock();
                if let Some((key, deltas)) = next_item(&mut state) {
                    let result = match process(&deltas) {
                        Ok(()) => Ok(deltas),
                        Err(ProcessError::Requeue(error)) => {
                            state.add_if_not_present(key.clone(), deltas);
                            Err(PopError::Process {
                                key,
                                requeued: true,
                                error,
                            })
                        }
                        Err(ProcessError::Failed(error)) => Err(PopError::Process {
                            key,
                            requeued: false,
                            error,
                        }),
                    };
                    self.publish(&state);
                    return result;
                }
                if state.closed {
                    return Err(PopError::Closed);
                }
            }
            woken.await;
        }
    }

    /// Whether the first replace has been put in and all its items popped (or anything was
    /// added before any replace).
    pub fn has_synced(&self) -> bool {
        self.lock().has_synced()
    }

    /// Waits until [`DeltaFifo::has_synced`]; false if the queue closed first.
    pub async fn wait_synced(&self) -> bool {
        let mut rx = self.status.subscribe();
        let synced = rx
            .wait_for(|s| s.synced || s.closed)
            .await
            .map(|s| s.synced);
        synced.unwrap_or(false)
    }

    /// Stops poppers once the queue is empty; later changes are still accepted but nobody
    /// needs to wait for them.
    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        self.publish(&state);
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Keys with deltas waiting.
    pub fn len(&self) -> usize {
        self.lock().items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The deltas waiting for `key`.
    pub fn get(&self, key: &str) -> Option<Deltas> {
        self.lock().items.get(key).cloned()
    }

    /// Keys with deltas waiting, in the order they will be popped.
    pub fn queued_keys(&self) -> Vec<String> {
        let state = self.lock();
        let mut seen = HashSet::new();
        state
            .queue
            .iter()
            .filter(|k| state.items.contains_key(*k) && seen.insert(*k))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests;
