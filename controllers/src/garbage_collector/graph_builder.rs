//! The GraphBuilder: applies the monitors' notifications (the graphChanges queue) to the
//! dependency graph, one at a time, and decides from each change what the workers must look
//! at: objects that may have lost their last owner go to attemptToDelete, owners starting an
//! orphaning deletion go to attemptToOrphan, owners waiting on dependents are re-checked when
//! one goes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use registry::object::{self, FINALIZER_FOREGROUND, FINALIZER_ORPHAN};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, trace, warn};

use super::absent_owner_cache::AbsentOwnerCache;
use super::graph::{Graph, Node};
use super::interned::Interned;
use super::reference::{owner_references, ObjectReference, ReferenceDiff, Uid};
use client::events::EventRecorder;
use client::workqueue::RateLimitingQueue;

/// Cascades at least this large are logged at info level.
pub(super) const LARGE_CASCADE: usize = 100;

/// Events handled per wake-up of the builder before it checks for stop again.
const BATCH: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Add,
    Update,
    Delete,
}

/// One entry of graphChanges.
#[derive(Clone, Debug)]
pub struct GraphEvent {
    pub kind: EventType,
    pub obj: Arc<Value>,
    /// The previous state, for updates.
    pub old: Option<Arc<Value>>,
    /// The apiVersion and kind of the monitor that saw it (or of the identity a worker found
    /// absent).
    pub api_version: Interned,
    pub object_kind: Interned,
    /// Made up by a worker that found the object absent, not observed by a monitor.
    pub is_virtual: bool,
}

pub struct GraphBuilder {
    graph: RwLock<Graph>,
    pub(super) attempt_to_delete: RateLimitingQueue<Uid>,
    pub(super) attempt_to_orphan: RateLimitingQueue<Uid>,
    pub(super) absent_owners: AbsentOwnerCache,
    changes: mpsc::UnboundedSender<GraphEvent>,
    /// Events queued and events applied: equal when the graph has caught up.
    sent: AtomicU64,
    processed: AtomicU64,
    recorder: EventRecorder,
}

impl GraphBuilder {
    /// A builder and the receiving end of its graphChanges queue (for [`GraphBuilder::run`]).
    pub fn new(
        attempt_to_delete: RateLimitingQueue<Uid>,
        attempt_to_orphan: RateLimitingQueue<Uid>,
        absent_owners: AbsentOwnerCache,
        recorder: EventRecorder,
    ) -> (Self, mpsc::UnboundedReceiver<GraphEvent>) {
        // Unbounded and in order: informer handlers must never block, and the graph must see
        // each object's changes in the order they happened.
        let (changes, rx) = mpsc::unbounded_channel();
        let builder = Self {
            graph: RwLock::new(Graph::default()),
            attempt_to_delete,
            attempt_to_orphan,
            absent_owners,
            changes,
            sent: AtomicU64::new(0),
            processed: AtomicU64::new(0),
            recorder,
        };
        (builder, rx)
    }

    pub fn read(&self) -> RwLockReadGuard<'_, Graph> {
        self.graph.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Graph> {
        self.graph.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a change for the graph.
    pub fn enqueue(&self, event: GraphEvent) {
        self.sent.fetch_add(1, Ordering::AcqRel);
        if self.changes.send(event).is_err() {
            // The builder has stopped: nothing will ever apply it.
            self.processed.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Tells the graph that an object it knows of turned out not to exist (upstream's
    /// enqueueVirtualDeleteEvent).
    pub fn enqueue_virtual_delete(&self, identity: &ObjectReference) {
        self.enqueue(GraphEvent {
            kind: EventType::Delete,
            obj: Arc::new(identity.to_stub()),
            old: None,
            api_version: identity.api_version.clone(),
            object_kind: identity.kind.clone(),
            is_virtual: true,
        });
    }

    /// Whether every change queued so far has been applied.
    pub fn caught_up(&self) -> bool {
        self.processed.load(Ordering::Acquire) >= self.sent.load(Ordering::Acquire)
    }

    /// Applies graphChanges until stopped.
    pub async fn run(
        self: Arc<Self>,
        mut rx: mpsc::UnboundedReceiver<GraphEvent>,
        stop: CancellationToken,
    ) {
        info!("garbage collector graph builder running");
        loop {
            let first = tokio::select! {
                biased;
                () = stop.cancelled() => break,
                event = rx.recv() => match event {
                    Some(event) => event,
                    None => break,
                },
            };
            self.process(first);
            for _ in 1..BATCH {
                match rx.try_recv() {
                    Ok(event) => self.process(event),
                    Err(_) => break,
                }
            }
        }
        info!("garbage collector graph builder stopped");
    }

    /// Applies one change to the graph (upstream's processGraphChanges).
    pub fn process(&self, event: GraphEvent) {
        self.apply(&event);
        self.processed.fetch_add(1, Ordering::AcqRel);
    }

    fn apply(&self, event: &GraphEvent) {
        let uid = object::uid(&event.obj);
        if uid.is_empty() {
            warn!(
                kind = %event.object_kind,
                name = object::name(&event.obj),
                "object without a uid; ignored"
            );
            return;
        }
        let observed = ObjectReference {
            kind: event.object_kind.clone(),
            api_version: event.api_version.clone(),
            namespace: object::namespace(&event.obj).into(),
            name: object::name(&event.obj).into(),
            uid: Uid::from(uid),
        };
        trace!(item = %observed, event = ?event.kind, is_virtual = event.is_virtual, "graph change");
        let uid = observed.uid.clone();
        let mut graph = self.write();
        let found = graph.contains(&uid);
        if found && !event.is_virtual {
            self.mark_observed(&mut graph, &observed);
        }
        match event.kind {
            EventType::Add | EventType::Update if !found => {
                let owners = owner_references(&event.obj);
                let being_deleted = object::deletion_timestamp(&event.obj).is_some();
                let mut node = Node::observed(observed, owners.clone());
                node.being_deleted = being_deleted;
                node.deleting_dependents =
                    being_deleted && has_finalizer(&event.obj, FINALIZER_FOREGROUND);
                graph.insert(node);
                self.add_dependent_to_owners(&mut graph, &uid, &owners);
                // The informer may have folded a creation and a deletion into one event.
                self.process_transitions(&mut graph, event.old.as_deref(), &event.obj, &uid);
            }
            EventType::Add | EventType::Update => {
                self.apply_update(&mut graph, event, &uid);
            }
            EventType::Delete => {
                if found {
                    self.apply_delete(&mut graph, event, observed);
                } else {
                    trace!(uid = %uid, "delete of an object the graph does not know");
                }
            }
        }
    }

    /// The first real sighting of a node that was virtual: it takes the identity observed,
    /// and dependents that named it differently are re-checked.
    fn mark_observed(&self, graph: &mut Graph, observed: &ObjectReference) {
        let Some(node) = graph.get(&observed.uid) else {
            return;
        };
        if !node.is_virtual {
            return;
        }
        if node.identity != *observed {
            let dependents: Vec<Uid> = node.dependents.iter().cloned().collect();
            let (_, nonmatching) = graph.partition_dependents(&dependents, observed);
            for dep in nonmatching {
                if let Some(d) = graph.get(&dep) {
                    if !observed.namespace.is_empty() && d.identity.namespace != observed.namespace
                    {
                        self.report_invalid_namespace(d, &observed.uid);
                    }
                }
                self.attempt_to_delete.add(dep);
            }
            if let Some(node) = graph.get(&observed.uid) {
                debug!(was = %node.identity, now = %observed, "virtual item observed under another identity");
            }
        }
        if let Some(node) = graph.get_mut(&observed.uid) {
            node.identity = observed.clone();
            node.is_virtual = false;
        }
    }

    fn apply_update(&self, graph: &mut Graph, event: &GraphEvent, uid: &Uid) {
        let new_owners = owner_references(&event.obj);
        let diff = {
            let Some(node) = graph.get_mut(uid) else {
                return;
            };
            if !event.is_virtual
                && (node.identity.api_version != event.api_version
                    || node.identity.kind != event.object_kind)
            {
                // Seen through a monitor of another version or group of the same storage.
                node.identity.api_version = event.api_version.clone();
                node.identity.kind = event.object_kind.clone();
            }
            let diff = ReferenceDiff::between(&node.owners, &new_owners);
            if !diff.is_empty() {
                node.owners = new_owners.into_boxed_slice();
            }
            if object::deletion_timestamp(&event.obj).is_some() {
                node.being_deleted = true;
            }
            diff
        };
        if !diff.is_empty() {
            self.add_unblocked_owners_to_delete_queue(graph, &diff);
            self.add_dependent_to_owners(graph, uid, &diff.added);
            graph.remove_dependent_from_owners(uid, &diff.removed);
        }
        self.process_transitions(graph, event.old.as_deref(), &event.obj, uid);
    }

    fn apply_delete(&self, graph: &mut Graph, event: &GraphEvent, deleted: ObjectReference) {
        let uid = deleted.uid.clone();
        let Some(existing) = graph.get(&uid) else {
            return;
        };
        let dependents: Vec<Uid> = existing.dependents.iter().cloned().collect();
        let mut remove = true;
        if event.is_virtual {
            if existing.is_virtual {
                // Not sure of our own coordinates: only what was verified absent goes.
                let (matching, nonmatching) = graph.partition_dependents(&dependents, &deleted);
                if !nonmatching.is_empty() {
                    remove = false;
                    if !matching.is_empty() {
                        self.absent_owners.add(deleted.clone());
                        for dep in matching {
                            self.attempt_to_delete.add(dep);
                        }
                    }
                    if existing.identity == deleted {
                        if let Some(next) = graph.alternate_owner_identity(&nonmatching, &deleted) {
                            debug!(absent = %deleted, next = %next, "checking another identity dependents give this owner");
                            if let Some(node) = graph.get_mut(&uid) {
                                node.identity = next;
                            }
                            self.attempt_to_delete.add_rate_limited(uid.clone());
                        }
                    }
                }
            } else if existing.identity != deleted {
                // An observed object stays; only references to the absent identity dangle.
                remove = false;
                let (matching, _) = graph.partition_dependents(&dependents, &deleted);
                if !matching.is_empty() {
                    self.absent_owners.add(deleted.clone());
                    for dep in matching {
                        self.attempt_to_delete.add(dep);
                    }
                }
            }
        }
        if !remove {
            return;
        }
        let Some(node) = graph.remove(&uid) else {
            return;
        };
        if !node.dependents.is_empty() {
            self.absent_owners.add(deleted);
        }
        if node.dependents.len() >= LARGE_CASCADE {
            info!(owner = %node.identity, dependents = node.dependents.len(), "owner gone; checking its dependents");
        } else if !node.dependents.is_empty() {
            debug!(owner = %node.identity, dependents = node.dependents.len(), "owner gone; checking its dependents");
        }
        for dep in node.dependents {
            self.attempt_to_delete.add(dep);
        }
        for owner in &node.owners {
            // An owner deleting in the foreground may have been waiting for this one.
            if graph.get(&owner.uid).is_some_and(|o| o.deleting_dependents) {
                self.attempt_to_delete.add(owner.uid.clone());
            }
        }
    }

    /// An object that just started an orphaning deletion goes to attemptToOrphan; one that
    /// just started a foreground deletion waits for its dependents, which are checked now.
    fn process_transitions(&self, graph: &mut Graph, old: Option<&Value>, new: &Value, uid: &Uid) {
        if deletion_starts_with(old, new, FINALIZER_ORPHAN) {
            debug!(uid = %uid, "orphaning the dependents of an owner being deleted");
            self.attempt_to_orphan.add(uid.clone());
            return;
        }
        if !deletion_starts_with(old, new, FINALIZER_FOREGROUND) {
            return;
        }
        let Some(node) = graph.get_mut(uid) else {
            return;
        };
        node.deleting_dependents = true;
        if node.dependents.len() >= LARGE_CASCADE {
            info!(owner = %node.identity, dependents = node.dependents.len(), "foreground deletion: deleting dependents first");
        } else {
            debug!(owner = %node.identity, dependents = node.dependents.len(), "foreground deletion: deleting dependents first");
        }
        for dep in &node.dependents {
            self.attempt_to_delete.add(dep.clone());
        }
        self.attempt_to_delete.add(uid.clone());
    }
}

fn has_finalizer(obj: &Value, finalizer: &str) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|f| f.as_str() == Some(finalizer)))
}

pub(super) fn waits_for_dependents(obj: &Value) -> bool {
    object::deletion_timestamp(obj).is_some() && has_finalizer(obj, FINALIZER_FOREGROUND)
}

/// Whether `new` is being deleted with `finalizer` while `old` (if any) was not.
fn deletion_starts_with(old: Option<&Value>, new: &Value, finalizer: &str) -> bool {
    let deleting_with =
        |obj: &Value| object::deletion_timestamp(obj).is_some() && has_finalizer(obj, finalizer);
    deleting_with(new) && !old.is_some_and(deleting_with)
}

mod edges;
mod queries;
#[cfg(test)]
mod tests;
