//! One pod's worker state (upstream's podWorkers entry with SyncPod / SyncTerminatingPod):
//! sets up the sandbox and its network, runs the containers through the simulated runtime,
//! writes every change of status, and on deletion runs seed 004's flow (`terminate`). It is
//! plain state, not a task: [`Worker::step`] does what is due now and says when it wants to
//! be looked at again, and `pod_workers` runs steps from a shared queue, so a pod with
//! nothing to do costs no task and no sleeping future.

mod terminate;

pub use terminate::Stopping;

use registry::types::PodPhase;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use client::events::{EventRecorder, EventType};
use client::informer::Indexer;
use registry::object;
use serde_json::Value;
use tokio::time::Instant;
use tracing::{debug, warn};

use crate::behavior::{owned_by_job, PodBehavior};
use crate::config::KubeletTimings;
use crate::network::{NetworkPlugin, SandboxRef};
use crate::runtime::container::digest;
use crate::runtime::{PodRuntime, RuntimeEvent};
use crate::status::manager::Written;
use crate::status::{generate, PodView, StatusManager};

/// A failed status write is tried again after this long.
const WRITE_RETRY: Duration = Duration::from_secs(1);

/// What every pod worker of one node shares.
pub struct NodeContext {
    pub node_name: String,
    /// The pods informer's cache: a worker reads its pod from here when it wakes, so that
    /// no decoded pod is held between syncs (a decoded pod is some 30 KB of maps; its
    /// stored bytes, which the cache shares with the watch cache, a tenth of that).
    pub pods: Arc<Indexer>,
    pub host_ip: String,
    pub network: Arc<dyn NetworkPlugin>,
    pub status: StatusManager,
    pub recorder: EventRecorder,
    pub timings: KubeletTimings,
}

pub struct Worker {
    ctx: Arc<NodeContext>,
    namespace: String,
    name: String,
    uid: String,
    rt: PodRuntime,
    sandbox: Option<(SandboxRef, Ipv4Addr)>,
    /// The sandbox was torn down: the pod has finished.
    finished: bool,
    start_time: String,
    /// The status last written, as JSON: compared with the next one, and the base of the
    /// next write (newer than the informer's copy may be).
    written: Option<Box<[u8]>>,
    /// How far the pod's deletion has gone.
    stopping: Stopping,
}

/// What a step leaves to do.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing until the pod changes.
    Idle,
    /// Look again at this moment (a container's next change, a grace period's end, a retry).
    At(Instant),
    /// The pod is gone and everything of it released: the worker can be dropped.
    Finished,
}

impl Step {
    fn from_deadline(at: Option<Instant>) -> Self {
        at.map_or(Step::Idle, Step::At)
    }
}

impl Worker {
    /// The worker of `pod` as the informer handed it. A pod an earlier kubelet ran is taken
    /// over here, before any other pod of the node sets up its network.
    pub fn new(ctx: Arc<NodeContext>, pod: &Value) -> Self {
        let behavior = PodBehavior::of(pod).unwrap_or_else(|why| {
            ctx.recorder
                .event(pod, EventType::Warning, "FailedSimulation", why);
            PodBehavior::default()
        });
        let rt = PodRuntime::new(
            pod,
            &behavior,
            ctx.timings.completing_run,
            ctx.timings.crash_loop_backoff,
            owned_by_job(pod),
        );
        let start_time = pod["status"]["startTime"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(object::now);
        let mut w = Worker {
            namespace: object::namespace(pod).to_string(),
            name: object::name(pod).to_string(),
            uid: object::uid(pod).to_string(),
            ctx,
            rt,
            sandbox: None,
            finished: PodPhase::terminal(pod),
            start_time,
            written: None,
            stopping: Stopping::NotYet,
        };
        w.resume(pod);
        w
    }

    /// Does what is due for the pod now (`removed`: the informer saw it deleted). The pod is
    /// read from the informer's cache and dropped before the step returns, so nothing
    /// decoded is kept between steps.
    pub async fn step(&mut self, removed: bool) -> Step {
        let current = if removed { None } else { self.current() };
        let Some(pod) = current else {
            self.removed().await;
            return Step::Finished;
        };
        if self.stopping != Stopping::NotYet || object::deletion_timestamp(&pod).is_some() {
            return self.terminate(&pod).await;
        }
        if self.finished {
            return Step::Idle;
        }
        Step::from_deadline(self.sync(&pod).await)
    }
}

impl Worker {
    fn namespace(&self) -> &str {
        &self.namespace
    }

    fn name(&self) -> &str {
        &self.name
    }

    /// The pod as the informer holds it now; None once this pod (this UID) is gone.
    fn current(&self) -> Option<Arc<Value>> {
        let key = format!("{}/{}", self.namespace, self.name);
        self.ctx
            .pods
            .get(&key)
            .filter(|pod| object::uid(pod) == self.uid)
    }

    fn record(&self, pod: &Value, events: Vec<RuntimeEvent>) {
        for e in events {
            let kind = if e.warning {
                EventType::Warning
            } else {
                EventType::Normal
            };
            self.ctx.recorder.event(pod, kind, e.reason, e.message);
        }
    }

    /// One SyncPod: moves the pod on to now and writes its status; when to look again.
    async fn sync(&mut self, pod: &Value) -> Option<Instant> {
        let now = Instant::now();
        if self.sandbox.is_none() {
            if let Err(retry) = self.set_up_sandbox(pod).await {
                // Until the sandbox comes up the API shows the pod Pending, containers
                // creating. A sandbox set up at once needs no such write: the status below
                // says as much or more, and on etcd each write is a revision of the pod.
                if self.written.is_none() && !self.write_status(pod, now, false).await {
                    return Some(now + WRITE_RETRY);
                }
                return Some(now + retry);
            }
        }
        let events = self.rt.advance(now, Utc::now());
        self.record(pod, events);
        let phase = crate::status::generate::phase(&self.rt, false);
        if phase.is_terminal() {
            // A finished pod's sandbox goes (upstream kills it); its IP stays in the status.
            self.tear_down().await;
            self.finished = true;
        }
        if !self.write_status(pod, now, self.finished).await {
            return Some(now + WRITE_RETRY);
        }
        if self.finished {
            None
        } else {
            self.rt.deadline(now)
        }
    }

    fn sandbox_ref(&self) -> SandboxRef {
        SandboxRef {
            namespace: self.namespace().to_string(),
            name: self.name().to_string(),
            sandbox_id: digest(&[&self.uid, "sandbox"]),
            uid: self.uid.clone(),
        }
    }

    /// A pod an earlier kubelet of this node ran (before a restart or a hand-over to this
    /// server) is taken over as its status shows it: its containers keep running and its
    /// sandbox keeps its address.
    fn resume(&mut self, pod: &Value) {
        let status = &pod["status"];
        if status["containerStatuses"].is_null() && status["initContainerStatuses"].is_null() {
            return;
        }
        self.rt.resume(pod, Instant::now(), Utc::now());
        if self.finished {
            return;
        }
        let Some(ip) = status["podIP"].as_str().and_then(|ip| ip.parse().ok()) else {
            return;
        };
        let sandbox = self.sandbox_ref();
        if self.ctx.network.adopt(&sandbox, ip) {
            debug!(pod = %self.name(), %ip, "resumed a running pod");
            self.sandbox = Some((sandbox, ip));
        }
    }

    async fn set_up_sandbox(&mut self, pod: &Value) -> Result<(), Duration> {
        let sandbox = self.sandbox_ref();
        match self.ctx.network.set_up_pod(&sandbox).await {
            Ok(status) => {
                self.sandbox = Some((sandbox, status.ip));
                Ok(())
            }
            Err(e) => {
                let message = format!(
                    "Failed to create pod sandbox: plugin {} failed to set up pod \"{}_{}\" network: {e}",
                    self.ctx.network.name(),
                    self.name(),
                    self.namespace()
                );
                self.ctx
                    .recorder
                    .event(pod, EventType::Warning, "FailedCreatePodSandBox", message);
                Err(self.ctx.timings.sandbox_retry)
            }
        }
    }

    async fn tear_down(&mut self) {
        if self.finished {
            return;
        }
        if let Some((sandbox, _)) = &self.sandbox {
            if let Err(e) = self.ctx.network.tear_down_pod(sandbox).await {
                warn!(pod = %self.name(), error = %e, "network tear-down failed");
            }
        }
    }

    /// Writes the status if it changed; false if the write failed.
    async fn write_status(&mut self, pod: &Value, now: Instant, terminal: bool) -> bool {
        let mut base = pod.clone();
        if let Some(written) = &self.written {
            // What this kubelet wrote last is newer than the informer's copy may be.
            if let Ok(status) = serde_json::from_slice(written) {
                base["status"] = status;
            }
        }
        let wall = object::now();
        let view = PodView {
            pod: &base,
            runtime: &self.rt,
            pod_ip: self.sandbox.as_ref().map(|(_, ip)| *ip),
            sandbox_ready: self.sandbox.is_some() && !self.finished,
            host_ip: &self.ctx.host_ip,
            start_time: &self.start_time,
            terminal,
            now,
            wall: &wall,
        };
        let status = generate(&view);
        // A status is a tree of maps whose keys serialise sorted: equal statuses are equal
        // bytes.
        let encoded = serde_json::to_vec(&status).unwrap_or_default();
        if self.written.as_deref() == Some(encoded.as_slice()) {
            return true;
        }
        let (ns, name, uid) = (&self.namespace, &self.name, &self.uid);
        match self.ctx.status.set_status(ns, name, uid, &status).await {
            Ok(Written::Done) | Ok(Written::Gone) => {
                self.written = Some(encoded.into_boxed_slice());
                true
            }
            Err(e) => {
                warn!(pod = %format!("{ns}/{name}"), error = %e, "status write failed");
                false
            }
        }
    }

    /// The pod left the store without this kubelet's final delete (a forced delete):
    /// upstream's HandlePodRemoves, whatever still runs is killed and the network goes.
    async fn removed(&mut self) {
        debug!(pod = %self.name(), "pod removed; stopping what remains");
        self.tear_down().await;
        self.finished = true;
    }
}
