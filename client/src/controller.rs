//! A controller's wiring as a builder, after kube-runtime's
//! `Controller::new(..).owns(..).watches(..).run(..)`: the informers it watches and what a change
//! of each queues, then `run`, which subscribes to them, waits until they have synced (upstream's
//! WaitForCacheSync), runs the workers over the queue until `stop`, and shuts everything down.
//!
//! The controller keeps its queue (its handlers and syncs add to it: expectations, requeues
//! after a delay) and its state; the builder takes a clone of the queue and an `Arc` of the
//! controller, the context every handler, mapper, task and sync is handed.
//!
//! ```ignore
//! // The DaemonSet controller: its own handlers where it keeps expectations or adopts orphans.
//! Controller::new("daemonset-controller", self.clone(), self.queue.clone())
//!     .workers(self.config.workers)
//!     .primary_with(&self.ds_informer, "DaemonSet", |ds, n| ds.on_daemon_set(n))
//!     .handles(&self.pod_informer, |ds, n| ds.on_pod(n))
//!     .handles(&self.node_informer, |ds, n| ds.on_node(&n))
//!     .owns(self.history.informer())
//!     .spawns(Self::backoff_gc)
//!     .run(stop, |ds, key| async move { ds.process(key).await })
//!     .await
//! // The EndpointSlice controller: a Service's own changes, and those of the pods it selects.
//! Controller::new("endpointslice-controller", self.clone(), self.queue.clone())
//!     .primary(&self.services, "Service")
//!     .watches(&self.pods, |eps, pod| services_for_pod(&eps.services, pod))
//! ```

use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::controller_utils::resolve_controller_ref;
use crate::informer::{dispatch, object_key, wait_for_sync, Notification, SharedInformer};
use crate::worker::{run_workers, Next};
use crate::workqueue::RateLimitingQueue;

/// What a change of a watched informer does; run on the informer's dispatch task, so quick.
type Handler<C> = Box<dyn Fn(&C, Notification) + Send + Sync>;
/// A loop run beside the workers (a periodic look at every object, a cache's expiry).
type Task<C> = Box<dyn FnOnce(Arc<C>, CancellationToken) -> BoxFuture<'static, ()> + Send>;

/// The wiring of one controller over context `C` (the controller itself) and queue keys `K`.
pub struct Controller<C, K> {
    name: &'static str,
    context: Arc<C>,
    queue: RateLimitingQueue<K>,
    workers: usize,
    /// The primary informer and its kind: owned objects are mapped to their owner through it.
    primary: Option<(SharedInformer, &'static str)>,
    /// Every informer the syncs read, with what its changes do (None: only waited for).
    informers: Vec<(SharedInformer, Option<Handler<C>>)>,
    tasks: Vec<Task<C>>,
}

impl<C, K> Controller<C, K>
where
    C: Send + Sync + 'static,
    K: Clone + Eq + Hash + Send + Sync + std::fmt::Debug + 'static,
{
    /// `name` is upstream's controller name (what logs say); `queue` is the controller's own.
    pub fn new(name: &'static str, context: Arc<C>, queue: RateLimitingQueue<K>) -> Self {
        Self {
            name,
            context,
            queue,
            workers: 1,
            primary: None,
            informers: Vec::new(),
            tasks: Vec::new(),
        }
    }

    /// Keys synced at once (upstream's `--concurrent-*-syncs`); one by default.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// The primary kind: any change of one queues its own key (namespace/name).
    pub fn primary(self, informer: &SharedInformer, kind: &'static str) -> Self
    where
        K: From<String>,
    {
        let queue = self.queue.clone();
        self.primary_with(informer, kind, move |_, n| {
            // A tombstone carries no object but still its key.
            let key = match &n {
                Notification::Delete(gone) => gone.key().ok(),
                other => other.latest().and_then(|obj| object_key(obj).ok()),
            };
            if let Some(key) = key {
                queue.add(K::from(key));
            }
        })
    }

    /// The primary kind with its own handler (one that keeps expectations, say); `owns` maps
    /// owned objects to their owner in `informer`.
    pub fn primary_with(
        mut self,
        informer: &SharedInformer,
        kind: &'static str,
        handler: impl Fn(&C, Notification) + Send + Sync + 'static,
    ) -> Self {
        self.primary = Some((informer.clone(), kind));
        self.handles(informer, handler)
    }

    /// Owned objects: a change queues the object of the primary kind that controls it (the
    /// owner reference marked `controller`, still the same object by uid). An update queues
    /// the owner before and the owner after, so one that lost the object looks again.
    ///
    /// # Panics
    /// Without a primary kind named first: a controller wired so panics as it is wired, so
    /// the first test that starts it shows the mistake (rather than owned objects ignored).
    pub fn owns(self, informer: &SharedInformer) -> Self
    where
        K: From<String>,
    {
        let (owners, kind) = self
            .primary
            .clone()
            .expect("Controller::owns needs the primary kind first");
        self.watches(informer, move |_, obj| {
            let owner = resolve_controller_ref(&owners, kind, obj)?;
            object_key(&owner).ok().map(K::from)
        })
    }

    /// Other kinds: `mapper` names the keys an object concerns, e.g. the Services selecting a
    /// pod. Every state a change shows is mapped, the old and the new of an update, so a key
    /// the object no longer maps to (a pod that left a selector) is looked at too; a deleted
    /// object is mapped as last seen.
    pub fn watches<I>(
        self,
        informer: &SharedInformer,
        mapper: impl Fn(&C, &Value) -> I + Send + Sync + 'static,
    ) -> Self
    where
        I: IntoIterator<Item = K>,
    {
        let queue = self.queue.clone();
        self.handles(informer, move |context, n| {
            for state in n.states() {
                for key in mapper(context, state) {
                    queue.add(key);
                }
            }
        })
    }

    /// A watched informer whose changes the controller handles itself (expectations
    /// bookkeeping, adoption of orphans, queueing after a delay).
    pub fn handles(
        mut self,
        informer: &SharedInformer,
        handler: impl Fn(&C, Notification) + Send + Sync + 'static,
    ) -> Self {
        self.informers
            .push((informer.clone(), Some(Box::new(handler))));
        self
    }

    /// An informer the syncs read but whose changes queue nothing: only waited for.
    pub fn reads(mut self, informer: &SharedInformer) -> Self {
        self.informers.push((informer.clone(), None));
        self
    }

    /// A loop run beside the workers once the informers have synced, until `stop`.
    pub fn spawns<F, Fut>(mut self, task: F) -> Self
    where
        F: FnOnce(Arc<C>, CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.tasks
            .push(Box::new(move |context, stop| task(context, stop).boxed()));
        self
    }

    /// Runs until `stop` fires: `reconcile` syncs one key and says what the queue does next.
    /// Runs once; the queue is shut down when it returns. A sync in flight when `stop` fires is
    /// dropped where it is (see `run_workers`).
    pub async fn run<F, Fut>(self, stop: CancellationToken, reconcile: F)
    where
        F: Fn(Arc<C>, K) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Next> + Send + 'static,
    {
        let Self {
            name,
            context,
            queue,
            workers,
            informers,
            tasks,
            ..
        } = self;
        info!(controller = name, workers, "starting controller");
        // Subscribed before waiting: the subscription replays what is known, then every
        // change, so nothing between the list and the workers' start is missed.
        let mut dispatchers = Vec::new();
        let mut watched = Vec::new();
        for (informer, handler) in informers {
            if let Some(handler) = handler {
                let context = context.clone();
                dispatchers.push(dispatch(informer.subscribe(), stop.clone(), move |n| {
                    handler(&context, n)
                }));
            }
            watched.push(informer);
        }
        let watched: Vec<&SharedInformer> = watched.iter().collect();
        let synced = tokio::select! {
            synced = wait_for_sync(&watched) => synced,
            () = stop.cancelled() => false,
        };
        if synced {
            let running: Vec<_> = tasks
                .into_iter()
                .map(|task| tokio::spawn(task(context.clone(), stop.clone())))
                .collect();
            let reconcile = Arc::new(reconcile);
            let sync = move |key| reconcile(context.clone(), key);
            // Returns once `stop` fired, which ends the tasks too.
            run_workers(name, queue.clone(), workers, stop.clone(), sync).await;
            for task in running {
                if let Err(e) = task.await {
                    warn!(controller = name, error = %e, "controller task failed");
                }
            }
        } else if !stop.is_cancelled() {
            warn!(controller = name, "informers stopped before they synced");
        }
        // Handlers still firing add nothing from here on.
        queue.shut_down();
        for dispatcher in dispatchers {
            if let Err(e) = dispatcher.await {
                warn!(controller = name, error = %e, "event dispatch failed");
            }
        }
        info!(controller = name, "controller stopped");
    }
}

#[cfg(test)]
mod tests;
