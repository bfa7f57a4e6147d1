//! seed 004: the kubelet's part of a graceful deletion (upstream's SyncTerminatingPod and
//! SyncTerminatedPod), as steps: preStop hooks, SIGTERM, the grace period (which a later
//! delete may shorten), kill, network tear-down, the final status, the final DELETE. Each
//! wait is a moment the worker asks to be looked at again, not a sleeping task.

use std::time::Duration;

use chrono::Utc;
use client::events::EventType;
use registry::object;
use serde_json::Value;
use tokio::time::Instant;
use tracing::warn;

use super::{Step, Worker, WRITE_RETRY};
use crate::runtime::container::KILLED;
use crate::runtime::{State, Termination};

/// upstream's minimumGracePeriodInSeconds for killing a container.
const MINIMUM_GRACE: Duration = Duration::from_secs(2);

/// How far a pod's deletion has gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopping {
    /// The pod is not being deleted.
    NotYet,
    /// The preStop hooks run until `until`; the grace period counts from `begun`.
    PreStop { begun: Instant, until: Instant },
    /// SIGTERM was sent and some containers ignore it: they are killed when the grace
    /// period from `begun` ends.
    Grace { begun: Instant },
    /// Everything stopped: the final status and the final DELETE remain (retried).
    Final,
    /// The final DELETE went through; the worker waits for the informer to see the pod go.
    Deleted,
}

impl Worker {
    /// Moves the deletion of `pod` on as far as it goes now.
    pub(super) async fn terminate(&mut self, pod: &Value) -> Step {
        let now = Instant::now();
        if self.stopping == Stopping::NotYet {
            self.stopping = if self.finished {
                Stopping::Final
            } else {
                self.begin(pod, now)
            };
        }
        if let Stopping::PreStop { begun, until } = self.stopping {
            if now < until {
                return Step::At(until);
            }
            self.sigterm(pod, begun).await;
        }
        if let Stopping::Grace { begun } = self.stopping {
            // Read from the latest pod: a second delete may have shortened it.
            let end = begun + grace_period(pod);
            if now < end {
                return Step::At(end);
            }
            let (now, wall) = (Instant::now(), Utc::now());
            for c in self.rt.all_mut().filter(|c| c.is_running()) {
                c.terminate(KILLED, now, wall);
            }
            self.tear_down().await;
            self.finished = true;
            self.stopping = Stopping::Final;
        }
        if self.stopping == Stopping::Final {
            if !self.write_status(pod, Instant::now(), true).await {
                return Step::At(Instant::now() + WRITE_RETRY);
            }
            let (ns, name, uid) = (&self.namespace, &self.name, &self.uid);
            if let Err(e) = self.ctx.status.delete_pod(ns, name, uid).await {
                warn!(pod = %format!("{ns}/{name}"), error = %e, "final delete failed; retrying");
                return Step::At(Instant::now() + WRITE_RETRY);
            }
            self.stopping = Stopping::Deleted;
        }
        Step::Idle
    }

    /// The deletion is seen: Killing events for what runs, and the preStop hooks' time.
    fn begin(&mut self, pod: &Value, now: Instant) -> Stopping {
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
                .event(pod, EventType::Normal, "Killing", message);
        }
        Stopping::PreStop {
            begun: now,
            until: now + pre_stop,
        }
    }

    /// SIGTERM to every running container that heeds it; containers that never ran are
    /// reported stopped. What still runs waits for the end of the grace period.
    async fn sigterm(&mut self, pod: &Value, begun: Instant) {
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
            self.write_status(pod, now, true).await;
            self.stopping = Stopping::Grace { begun };
        } else {
            self.tear_down().await;
            self.finished = true;
            self.stopping = Stopping::Final;
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
