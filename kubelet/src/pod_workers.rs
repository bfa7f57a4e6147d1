//! The pod workers of every simulated node (upstream's podWorkers), as a work queue rather than
//! a goroutine per pod: each pod's worker is state kept by UID, and a fixed set of tasks runs
//! its steps from one shared queue (client's workqueue: a UID is queued once however often it
//! is added, and never stepped by two tasks at once). A pod change queues its UID; a step that
//! wants to look again later (a container's next change, a probe verdict, a grace period's
//! end, a retry) is a delayed add, one entry in the queue's timer heap. A pod with nothing to
//! do — a Running pod whose probes have settled — holds no task, no timer and no future.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use client::workqueue::RateLimitingQueue;
use serde_json::Value;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::pod_worker::{NodeContext, Step, Worker};

/// Tasks stepping pods, for all nodes together. A step is short (a status write, a network
/// set-up); enough of them run at once that a slow CNI plugin call does not hold up the rest.
pub const WORKERS: usize = 32;

/// A pod's worker between steps.
struct Slot {
    /// None while a task steps it.
    worker: Option<Box<Worker>>,
    /// The informer saw the pod deleted.
    removed: bool,
    /// When its last step asked to be looked at again.
    wake: Option<Instant>,
}

/// What the pod workers hold at a moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PodWorkStats {
    /// Pods with a worker (every pod of the nodes until the informer sees it go).
    pub pods: usize,
    /// Steps running now.
    pub stepping: usize,
    /// UIDs queued for a step.
    pub queued: usize,
    /// Pods that asked to be looked at again at some moment.
    pub timers: usize,
}

pub struct PodWorkers {
    slots: Mutex<HashMap<String, Slot>>,
    queue: RateLimitingQueue<String>,
    stepping: AtomicUsize,
}

impl Default for PodWorkers {
    fn default() -> Self {
        Self::new()
    }
}

impl PodWorkers {
    pub fn new() -> Self {
        Self {
            slots: Mutex::new(HashMap::new()),
            // Unnamed: no workqueue metrics. Steps wait by their own timings (back-offs,
            // grace periods, retries), never by the rate limiter.
            queue: RateLimitingQueue::with_default_rate_limiter(""),
            stepping: AtomicUsize::new(0),
        }
    }

    fn slots(&self) -> MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// HandlePodAdditions / HandlePodUpdates: the pod's worker (made on first sight) is
    /// stepped with the pod as the informer holds it then.
    pub fn update(&self, ctx: &Arc<NodeContext>, pod: &Value) {
        let uid = registry::object::uid(pod);
        let known = self.slots().contains_key(uid);
        if !known {
            // Made here, in the informer's order, so that a pod taken over keeps its address
            // before a pod seen after it sets up its network; outside the lock, which steps
            // take. Only this handler inserts, so nothing else can have inserted meanwhile.
            let worker = Box::new(Worker::new(ctx.clone(), pod));
            self.slots().insert(
                uid.to_string(),
                Slot {
                    worker: Some(worker),
                    removed: false,
                    wake: None,
                },
            );
        }
        self.queue.add(uid.to_string());
    }

    /// HandlePodRemoves: the worker stops what remains at its next step and is dropped.
    pub fn remove(&self, uid: &str) {
        let mut slots = self.slots();
        let Some(slot) = slots.get_mut(uid) else {
            return;
        };
        slot.removed = true;
        drop(slots);
        self.queue.add(uid.to_string());
    }

    pub fn stats(&self) -> PodWorkStats {
        let slots = self.slots();
        PodWorkStats {
            pods: slots.len(),
            stepping: self.stepping.load(Ordering::Relaxed),
            queued: self.queue.len(),
            timers: slots.values().filter(|s| s.wake.is_some()).count(),
        }
    }

    /// Runs the steps until `stop`. Unlike a controller's workers (`client::worker`), a step
    /// in flight when `stop` fires runs to its end, as a pod's sync did when each pod had its
    /// own task: a CNI ADD or DEL is not cut off midway. No step starts after it.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let mut tasks = JoinSet::new();
        for _ in 0..WORKERS {
            let this = self.clone();
            tasks.spawn(async move {
                while let Some(uid) = this.queue.get().await {
                    // Boxed: held inline, the step's future would size every idle task to it.
                    if let Some(after) = Box::pin(this.step(&uid)).await {
                        this.queue.add_after(uid.clone(), after);
                    }
                    this.queue.done(&uid);
                }
            });
        }
        stop.cancelled().await;
        self.queue.shut_down();
        while let Some(joined) = tasks.join_next().await {
            if let Err(e) = joined {
                warn!(error = %e, "a pod worker task failed");
            }
        }
    }

    /// One step of the pod with `uid`; when to step it again. The worker is taken out of its
    /// slot meanwhile; the queue never hands the UID to a second task before this one is done.
    async fn step(&self, uid: &str) -> Option<Duration> {
        let (mut worker, removed) = {
            let mut slots = self.slots();
            let slot = slots.get_mut(uid)?;
            (slot.worker.take()?, slot.removed)
        };
        self.stepping.fetch_add(1, Ordering::Relaxed);
        let _counted = Counted(&self.stepping);
        let step = worker.step(removed).await;
        let mut slots = self.slots();
        if step == Step::Finished {
            slots.remove(uid);
            return None;
        }
        let slot = slots.get_mut(uid)?;
        slot.worker = Some(worker);
        match step {
            Step::At(at) => {
                slot.wake = Some(at);
                Some(at.saturating_duration_since(Instant::now()))
            }
            Step::Idle | Step::Finished => {
                slot.wake = None;
                None
            }
        }
    }
}

/// Takes one off the count of running steps when a step ends.
struct Counted<'a>(&'a AtomicUsize);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
