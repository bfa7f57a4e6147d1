//! The shared informer: reflector → DeltaFIFO → one processing loop that keeps the indexer in
//! step with the store and fans every change out to the subscribed handlers. One informer per
//! resource serves every controller that watches it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use registry::store::Encoded;
use registry::Store;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::delta::{DeletedFinalStateUnknown, DeltaObject, DeltaType, Deltas};
use super::delta_fifo::{DeltaFifo, KnownObjects, PopError, ProcessError};
use super::indexer::Indexer;
use super::lister_watcher::ListerWatcher;
use super::reflector::{Reflector, ReflectorConfig};
use super::subscription::Subscription;

/// A change as handlers see it.
#[derive(Clone, Debug, PartialEq)]
pub enum Notification {
    Add(Arc<Value>),
    Update {
        old: Arc<Value>,
        new: Arc<Value>,
    },
    /// The last state seen, or a tombstone when a relist found the object gone.
    Delete(DeltaObject),
}

impl Notification {
    /// The object as it is now, or as last seen when deleted (None for a tombstone that
    /// carries no object).
    pub fn latest(&self) -> Option<&Arc<Value>> {
        match self {
            Self::Add(obj) | Self::Update { new: obj, .. } => Some(obj),
            Self::Delete(gone) => gone.object(),
        }
    }

    /// Every state the notification shows: the old and the new of an update, else the one.
    pub fn states(&self) -> Vec<&Arc<Value>> {
        match self {
            Self::Update { old, new } => vec![old, new],
            other => other.latest().into_iter().collect(),
        }
    }
}

/// Callbacks run on a task of their own, in order; they should be quick (e.g. enqueue a key).
pub trait EventHandler: Send + Sync + 'static {
    fn on_add(&self, _obj: &Arc<Value>) {}
    fn on_update(&self, _old: &Arc<Value>, _new: &Arc<Value>) {}
    fn on_delete(&self, _obj: &DeltaObject) {}
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HandlerId(u64);

#[derive(Clone, Debug, Default)]
pub struct InformerConfig {
    /// Backoff and the resync period.
    pub reflector: ReflectorConfig,
}

struct Listener {
    id: u64,
    tx: mpsc::UnboundedSender<Notification>,
    /// Receives the updates of resyncs and of relists that changed nothing.
    resync: bool,
}

/// What the processing loop shares with the handle.
struct Core {
    indexer: Arc<Indexer>,
    fifo: Arc<DeltaFifo>,
    /// Held while a popped item updates the indexer and is fanned out, so a new subscriber's
    /// snapshot of the indexer and the notifications after it line up exactly.
    listeners: Mutex<Vec<Listener>>,
}

impl Core {
    fn listeners(&self) -> MutexGuard<'_, Vec<Listener>> {
        self.listeners.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies one object's deltas to the indexer and tells the listeners. Each object is
    /// decoded once per delta (the old state of an update, or a deleted object, once more
    /// when some listener is there to be told); a resync's or a relist's unchanged object
    /// once if some listener wants to hear of it, else not at all.
    fn handle(&self, deltas: &Deltas) -> Result<(), ProcessError> {
        let mut listeners = self.listeners();
        for delta in deltas {
            match (delta.kind, &delta.object) {
                (DeltaType::Deleted, object) => {
                    let key = object
                        .key()
                        .map_err(|e| ProcessError::Failed(Box::new(e)))?;
                    self.indexer.delete(&key);
                    // An informer read only through its indexer has no one to tell.
                    if listeners.is_empty() {
                        continue;
                    }
                    let gone = self.decoded(key, object);
                    fan_out(&mut listeners, Notification::Delete(gone), false);
                }
                (kind, DeltaObject::Object(encoded)) => {
                    let old = self.indexer.get_encoded(&encoded.key);
                    // A resync, or a relist that found the same revision: the indexer holds
                    // this very state already.
                    let unchanged = old.as_ref().filter(|old| {
                        kind == DeltaType::Sync
                            || (kind == DeltaType::Replaced && old.revision == encoded.revision)
                    });
                    if let Some(current) = unchanged {
                        // Nothing to put in the indexer; the listeners that want resyncs
                        // hear of the state it holds, decoded once for old and new alike.
                        if !listeners.iter().any(|l| l.resync) {
                            continue;
                        }
                        if let Some(obj) = self.decode(current) {
                            let update = Notification::Update {
                                old: obj.clone(),
                                new: obj,
                            };
                            fan_out(&mut listeners, update, true);
                        }
                        continue;
                    }
                    let obj = self
                        .indexer
                        .add(encoded.clone())
                        .map_err(|e| ProcessError::Failed(Box::new(e)))?;
                    let Some(old) = old else {
                        fan_out(&mut listeners, Notification::Add(obj), false);
                        continue;
                    };
                    if listeners.is_empty() {
                        continue;
                    }
                    let Some(old) = self.decode(&old) else {
                        continue;
                    };
                    let update = Notification::Update { old, new: obj };
                    fan_out(&mut listeners, update, false);
                }
                (kind, DeltaObject::DeletedFinalStateUnknown(t)) => {
                    warn!(key = t.key, ?kind, "tombstone outside a deletion; ignored");
                }
            }
        }
        Ok(())
    }

    fn decode(&self, encoded: &Encoded) -> Option<Arc<Value>> {
        self.indexer.decode_encoded(encoded)
    }

    /// A deletion as handlers see it; an object that does not decode leaves a tombstone.
    fn decoded(&self, key: String, object: &DeltaObject<Encoded>) -> DeltaObject {
        let obj = match object {
            DeltaObject::Object(encoded) => match self.decode(encoded) {
                Some(obj) => return DeltaObject::Object(obj),
                None => None,
            },
            DeltaObject::DeletedFinalStateUnknown(t) => t.obj.as_ref().and_then(|o| self.decode(o)),
        };
        DeltaObject::DeletedFinalStateUnknown(DeletedFinalStateUnknown { key, obj })
    }
}

/// Sends to every listener that wants it, dropping those whose receiver is gone.
fn fan_out(listeners: &mut Vec<Listener>, notification: Notification, is_resync: bool) {
    listeners.retain(|l| {
        if is_resync && !l.resync {
            return true;
        }
        l.tx.send(notification.clone()).is_ok()
    });
}

struct Inner {
    core: Arc<Core>,
    reflector: Arc<Reflector>,
    stop: CancellationToken,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    started: AtomicBool,
    next_id: AtomicU64,
    name: String,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The tasks hold only the core: without this they would outlive every handle.
        self.stop.cancel();
        self.core.fifo.close();
    }
}

/// A handle to an informer; clones share it. Dropping the last one stops it.
#[derive(Clone)]
pub struct SharedInformer {
    inner: Arc<Inner>,
}

impl SharedInformer {
    /// An informer over `lister_watcher`, with an indexer that has the namespace index.
    pub fn new(lister_watcher: Arc<dyn ListerWatcher>, config: InformerConfig) -> Self {
        let indexer = Arc::new(Indexer::with_namespace_index(lister_watcher.decoder()));
        let known: Arc<dyn KnownObjects> = indexer.clone();
        let fifo = Arc::new(DeltaFifo::new(Some(known)));
        let name = lister_watcher.describe();
        let reflector = Arc::new(Reflector::new(
            lister_watcher,
            fifo.clone(),
            config.reflector,
        ));
        Self {
            inner: Arc::new(Inner {
                core: Arc::new(Core {
                    indexer,
                    fifo,
                    listeners: Mutex::new(Vec::new()),
                }),
                reflector,
                stop: CancellationToken::new(),
                tasks: Mutex::new(Vec::new()),
                started: AtomicBool::new(false),
                next_id: AtomicU64::new(0),
                name,
            }),
        }
    }

    /// An informer over every object of a registry Store.
    pub fn for_store(store: Arc<Store>, config: InformerConfig) -> Self {
        Self::new(store, config)
    }

    /// The local cache. More indices may be added at any time.
    pub fn indexer(&self) -> &Arc<Indexer> {
        &self.inner.core.indexer
    }

    fn add_listener(&self, resync: bool) -> (u64, Subscription) {
        let (tx, rx) = mpsc::unbounded_channel();
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let core = &self.inner.core;
        let mut listeners = core.listeners();
        // A late subscriber first learns of everything already known, as upstream replays
        // the indexer to a handler added to a running informer. The snapshot is taken with
        // the listener added, under the lock the processing loop holds while it changes the
        // indexer, so no change falls between the two; it holds the stored bytes only (a
        // reference count each) and the subscriber decodes them as it reads.
        let known = core.indexer.list_held();
        if !self.inner.stop.is_cancelled() {
            listeners.push(Listener { id, tx, resync });
        }
        drop(listeners);
        (id, Subscription::new(known, core.indexer.clone(), rx))
    }

    /// Notifications of every change from now on (after an Add for each object already
    /// known). It ends when the informer stops; dropping it unsubscribes.
    pub fn subscribe(&self) -> Subscription {
        self.add_listener(false).1
    }

    /// Like [`SharedInformer::subscribe`], plus an Update for every object at each resync
    /// and for relisted objects that did not change.
    pub fn subscribe_with_resync(&self) -> Subscription {
        self.add_listener(true).1
    }

    /// Runs `handler` on a task of its own for every notification. Needs a tokio runtime.
    pub fn add_event_handler(&self, handler: Arc<dyn EventHandler>) -> HandlerId {
        let (id, mut rx) = self.add_listener(false);
        tokio::spawn(async move {
            while let Some(notification) = rx.recv().await {
                match &notification {
                    Notification::Add(obj) => handler.on_add(obj),
                    Notification::Update { old, new } => handler.on_update(old, new),
                    Notification::Delete(obj) => handler.on_delete(obj),
                }
            }
        });
        HandlerId(id)
    }

    /// Stops notifying a handler (what is already queued for it is still delivered).
    pub fn remove_event_handler(&self, id: HandlerId) -> bool {
        let mut listeners = self.inner.core.listeners();
        let before = listeners.len();
        listeners.retain(|l| l.id != id.0);
        listeners.len() != before
    }

    /// Starts listing, watching and processing (once; a stopped informer stays stopped).
    /// Needs a tokio runtime.
    pub fn start(&self) {
        if self.inner.stop.is_cancelled() || self.inner.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let stop = self.inner.stop.clone();
        let reflector = self.inner.reflector.clone();
        let reflect = tokio::spawn(async move { reflector.run(stop).await });
        let core = self.inner.core.clone();
        let stop = self.inner.stop.clone();
        let name = self.inner.name.clone();
        let process = tokio::spawn(async move {
            while !stop.is_cancelled() {
                match core.fifo.pop(|deltas| core.handle(deltas)).await {
                    Ok(_) => {}
                    Err(PopError::Closed) => break,
                    Err(e) => warn!(resource = %name, error = %e, "processing a change failed"),
                }
            }
            debug!(resource = %name, "informer processing stopped");
        });
        let mut tasks = self.inner.tasks.lock().unwrap_or_else(|p| p.into_inner());
        tasks.push(reflect);
        tasks.push(process);
    }

    /// Whether the first list has been fully delivered to the indexer and the handlers.
    pub fn has_synced(&self) -> bool {
        self.inner.core.fifo.has_synced()
    }

    /// Waits until synced; false if the informer stopped first.
    pub async fn wait_for_sync(&self) -> bool {
        tokio::select! {
            synced = self.inner.core.fifo.wait_synced() => synced,
            () = self.inner.stop.cancelled() => false,
        }
    }

    /// The resourceVersion of the last list or change the reflector saw.
    pub fn last_sync_resource_version(&self) -> String {
        self.inner.reflector.last_sync_resource_version()
    }

    /// Stops the reflector and the processing loop and waits for them; subscribers' channels
    /// close. The indexer keeps its last content.
    pub async fn stop(&self) {
        self.inner.stop.cancel();
        self.inner.core.fifo.close();
        let tasks =
            std::mem::take(&mut *self.inner.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        for task in tasks {
            if let Err(e) = task.await {
                warn!(resource = %self.inner.name, error = %e, "informer task failed");
            }
        }
        self.inner.core.listeners().clear();
    }

    pub fn is_stopped(&self) -> bool {
        self.inner.stop.is_cancelled()
    }
}

#[cfg(test)]
mod tests;
