//! One pod's worker (upstream's podWorkers goroutine with SyncPod / SyncTerminatingPod):
//! sets up the sandbox and its network, runs the containers through the simulated runtime,
//! writes every change of status, and on deletion runs seed 004's flow: preStop, SIGTERM,
//! the grace period, kill, network tear-down, the final status, the final DELETE.

use registry::types::PodPhase;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use client::events::{EventRecorder, EventType};
use client::informer::Indexer;
use registry::object;
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::behavior::{owned_by_job, PodBehavior};
use crate::config::KubeletTimings;
use crate::network::{NetworkPlugin, SandboxRef};
use crate::runtime::container::{digest, KILLED};
use crate::runtime::{PodRuntime, RuntimeEvent, State, Termination};
use crate::status::manager::Written;
use crate::status::{generate, PodView, StatusManager};

/// upstream's minimumGracePeriodInSeconds for killing a container.
const MINIMUM_GRACE: Duration = Duration::from_secs(2);
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

/// A pod worker's wake-ups: `true` when the informer holds a newer pod, `false` once the
/// pod is gone from the store.
pub type PodUpdates = watch::Receiver<bool>;

struct Worker {
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
}

/// Runs the worker of `pod` (as the informer handed it) until the pod is gone.
pub async fn run(
    ctx: Arc<NodeContext>,
    pod: Arc<Value>,
    mut updates: PodUpdates,
    stop: CancellationToken,
) {
    let behavior = PodBehavior::of(&pod).unwrap_or_else(|why| {
        ctx.recorder
            .event(&pod, EventType::Warning, "FailedSimulation", why);
        PodBehavior::default()
    });
    let rt = PodRuntime::new(
        &pod,
        &behavior,
        ctx.timings.completing_run,
        ctx.timings.crash_loop_backoff,
        owned_by_job(&pod),
    );
    let finished = PodPhase::terminal(&pod);
    let start_time = pod["status"]["startTime"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(object::now);
    let mut w = Worker {
        namespace: object::namespace(&pod).to_string(),
        name: object::name(&pod).to_string(),
        uid: object::uid(&pod).to_string(),
        ctx,
        rt,
        sandbox: None,
        finished,
        start_time,
        written: None,
    };
    w.resume(&pod);
    let mut pod = Some(pod);
    loop {
        let Some(current) = pod.take().or_else(|| w.current()) else {
            w.removed().await;
            return;
        };
        if object::deletion_timestamp(&current).is_some() {
            w.terminate(current, &mut updates, &stop).await;
            return;
        }
        let wake = if w.finished {
            None
        } else {
            w.sync(&current).await
        };
        // Nothing decoded is kept while the worker waits.
        drop(current);
        let sleep = async {
            match wake {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = sleep => {}
            changed = updates.changed() => {
                let present = *updates.borrow_and_update();
                if changed.is_err() || !present {
                    w.removed().await;
                    return;
                }
            }
        }
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
        if self.written.is_none() {
            // The first status the API sees: Pending, containers creating.
            if !self.write_status(pod, now, false).await {
                return Some(now + WRITE_RETRY);
            }
        }
        if self.sandbox.is_none() {
            if let Err(retry) = self.set_up_sandbox(pod).await {
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

    /// seed 004: the kubelet's part of a graceful deletion.
    async fn terminate(
        &mut self,
        mut pod: Arc<Value>,
        updates: &mut PodUpdates,
        stop: &CancellationToken,
    ) {
        let begun = Instant::now();
        if !self.finished {
            let pre_stop = self
                .rt
                .all_mut()
                .filter(|c| c.is_running())
                .map(|c| c.script.pre_stop)
                .max()
                .unwrap_or_default();
            for c in self
                .rt
                .containers
                .iter()
                .chain(&self.rt.init)
                .filter(|c| c.is_running())
            {
                let message = format!("Stopping container {}", c.name);
                self.ctx
                    .recorder
                    .event(&pod, EventType::Normal, "Killing", message);
            }
            if !pre_stop.is_zero()
                && !self
                    .wait_grace(&mut pod, begun, Some(pre_stop), updates, stop)
                    .await
            {
                return;
            }
            let wall = Utc::now();
            let now = Instant::now();
            for c in self.rt.all_mut() {
                match &c.state {
                    State::Running { .. } if !c.script.ignore_sigterm => {
                        let code = c.script.sigterm_exit_code;
                        c.terminate(code, now, wall);
                    }
                    State::Waiting { .. } => {
                        c.state =
                            State::Terminated(c.last.clone().unwrap_or_else(|| unknown(now, wall)));
                    }
                    _ => {}
                }
            }
            if self.rt.any_running() {
                // Some ignore SIGTERM: they are killed when the grace period ends.
                self.write_status(&pod, now, true).await;
                if !self.wait_grace(&mut pod, begun, None, updates, stop).await {
                    return;
                }
                let (now, wall) = (Instant::now(), Utc::now());
                for c in self.rt.all_mut().filter(|c| c.is_running()) {
                    c.terminate(KILLED, now, wall);
                }
            }
            self.tear_down().await;
            self.finished = true;
        }
        let mut written = self.write_status(&pod, Instant::now(), true).await;
        while !written {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(WRITE_RETRY) => {}
            }
            written = self.write_status(&pod, Instant::now(), true).await;
        }
        let (ns, name, uid) = (&self.namespace, &self.name, &self.uid);
        while let Err(e) = self.ctx.status.delete_pod(ns, name, uid).await {
            warn!(pod = %format!("{ns}/{name}"), error = %e, "final delete failed; retrying");
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(WRITE_RETRY) => {}
            }
        }
    }

    /// Waits until `limit` after `begun` (default: the grace period, which a later delete may
    /// shorten); false if the pod went away meanwhile or the kubelet stops.
    async fn wait_grace(
        &mut self,
        pod: &mut Arc<Value>,
        begun: Instant,
        limit: Option<Duration>,
        updates: &mut PodUpdates,
        stop: &CancellationToken,
    ) -> bool {
        loop {
            let grace = limit.unwrap_or_else(|| grace_period(pod));
            tokio::select! {
                () = stop.cancelled() => return false,
                () = tokio::time::sleep_until(begun + grace) => return true,
                changed = updates.changed() => {
                    let present = *updates.borrow_and_update();
                    match self.current() {
                        Some(latest) if changed.is_ok() && present => *pod = latest,
                        _ => {
                            self.removed().await;
                            return false;
                        }
                    }
                }
            }
        }
    }
}

/// A container that never ran, reported as upstream reports it once the pod is stopped.
fn unknown(now: Instant, wall: chrono::DateTime<Utc>) -> Termination {
    Termination {
        exit_code: KILLED,
        reason: "ContainerStatusUnknown".to_string(),
        message: Some("The container could not be located when the pod was terminated".to_string()),
        started_at: None,
        finished_at: wall,
        container_id: None,
        finished: now,
    }
}

/// The pod's grace period (killContainer's choice), no shorter than upstream's minimum.
fn grace_period(pod: &Value) -> Duration {
    let seconds = object::deletion_grace_period(pod)
        .or_else(|| pod["spec"]["terminationGracePeriodSeconds"].as_i64())
        .unwrap_or(30)
        .max(0) as u64;
    Duration::from_secs(seconds).max(MINIMUM_GRACE)
}
