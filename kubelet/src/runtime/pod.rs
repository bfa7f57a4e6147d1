//! A pod's simulated containers moved through time as the kubelet's SyncPod moves them: init
//! containers one at a time in order, then every regular container; stopped containers
//! restarted as the restartPolicy says, behind CrashLoopBackOff.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio::time::Instant;

use registry::types::{ContainerRestartPolicy, RestartPolicy};

use super::container::{Container, State, StopCause, KILLED};
use super::go_duration;
use crate::behavior::PodBehavior;

/// Bounds the state changes one advance makes to one container (start, stop, restart...).
const MAX_PASSES: usize = 64;

/// What happened, for the pod's events (reason, message, warning?).
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeEvent {
    pub reason: &'static str,
    pub message: String,
    pub warning: bool,
}

impl RuntimeEvent {
    fn normal(reason: &'static str, message: String) -> Self {
        Self {
            reason,
            message,
            warning: false,
        }
    }

    fn warning(reason: &'static str, message: String) -> Self {
        Self {
            reason,
            message,
            warning: true,
        }
    }
}

pub struct PodRuntime {
    pub uid: String,
    /// `name_namespace(uid)`, as the kubelet names a pod in messages.
    pub full_name: String,
    pub restart_policy: RestartPolicy,
    pub init: Vec<Container>,
    pub containers: Vec<Container>,
}

impl PodRuntime {
    pub fn new(
        pod: &Value,
        behavior: &PodBehavior,
        completing_run: Duration,
        backoff: (Duration, Duration),
        job_owned: bool,
    ) -> Self {
        let uid = pod["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let spec = &pod["spec"];
        let list = |field: &str| spec[field].as_array().cloned().unwrap_or_default();
        let init = list("initContainers")
            .iter()
            .map(|c| {
                // An init container runs to completion; a sidecar runs until stopped.
                let completes = !ContainerRestartPolicy::restartable(c);
                let name = c["name"].as_str().unwrap_or_default();
                let script = behavior.script(name, completes, completing_run);
                Container::new(c, script, "PodInitializing", backoff)
            })
            .collect();
        let containers = list("containers")
            .iter()
            .map(|c| {
                let name = c["name"].as_str().unwrap_or_default();
                let script = behavior.script(name, job_owned, completing_run);
                Container::new(c, script, "ContainerCreating", backoff)
            })
            .collect();
        Self {
            full_name: format!(
                "{}_{}({uid})",
                pod["metadata"]["name"].as_str().unwrap_or_default(),
                pod["metadata"]["namespace"].as_str().unwrap_or_default()
            ),
            uid,
            restart_policy: RestartPolicy::of(pod),
            init,
            containers,
        }
    }

    /// The init container now due to run, if initialisation is not done.
    fn pending_init(&self) -> Option<usize> {
        self.init.iter().position(|c| !c.init_done())
    }

    /// How an init container restarts (upstream): a sidecar always; another one on failure
    /// unless the pod never restarts. A successful init container is never run again.
    fn init_policy(&self, c: &Container) -> RestartPolicy {
        match (c.restartable, self.restart_policy) {
            (true, _) => RestartPolicy::Always,
            (false, RestartPolicy::Never) => RestartPolicy::Never,
            (false, _) => RestartPolicy::OnFailure,
        }
    }

    pub fn initialized(&self) -> bool {
        self.pending_init().is_none()
    }

    /// Init containers that failed for good (restartPolicy Never): the pod fails.
    pub fn init_failed(&self) -> bool {
        self.restart_policy == RestartPolicy::Never
            && self.init.iter().any(|c| {
                !c.restartable && matches!(&c.state, State::Terminated(t) if t.exit_code != 0)
            })
    }

    /// Moves every container to `now`; the events of what happened, in order.
    pub fn advance(&mut self, now: Instant, wall: DateTime<Utc>) -> Vec<RuntimeEvent> {
        let mut events = Vec::new();
        // Sidecars already up keep running (restarted when they stop) through the rest.
        let until = self.pending_init().unwrap_or(self.init.len());
        let sidecars: Vec<usize> = (0..until).filter(|&i| self.init[i].restartable).collect();
        for i in sidecars {
            for _ in 0..MAX_PASSES {
                if !self.step_init(i, now, wall, &mut events) {
                    break;
                }
            }
        }
        // An init container finishing lets the next one (or the regular ones) start at once;
        // each pass makes progress, so the passes are bounded by the containers' changes.
        for _ in 0..MAX_PASSES {
            let Some(i) = self.pending_init() else {
                break;
            };
            if !self.step_init(i, now, wall, &mut events) {
                return events;
            }
        }
        if self.pending_init().is_some() {
            return events;
        }
        for c in &mut self.containers {
            settle(
                c,
                self.restart_policy,
                &self.uid,
                &self.full_name,
                now,
                wall,
                &mut events,
            );
        }
        events
    }

    /// Steps init container `i` once under its own restart policy; whether it changed.
    fn step_init(
        &mut self,
        i: usize,
        now: Instant,
        wall: DateTime<Utc>,
        events: &mut Vec<RuntimeEvent>,
    ) -> bool {
        let policy = self.init_policy(&self.init[i]);
        let before = self.init[i].state.clone();
        let c = &mut self.init[i];
        step(c, policy, &self.uid, &self.full_name, now, wall, events);
        c.state != before
    }

    /// The next moment something changes by itself; None when nothing will.
    pub fn deadline(&self, now: Instant) -> Option<Instant> {
        let sidecars = self.init[..self.pending_init().unwrap_or(self.init.len())]
            .iter()
            .filter(|c| c.restartable)
            .filter_map(|c| c.deadline(now));
        let next = match self.pending_init() {
            Some(i) => self.init[i].deadline(now),
            None => self.containers.iter().filter_map(|c| c.deadline(now)).min(),
        };
        sidecars.chain(next).min()
    }

    /// Every container, init ones first.
    pub fn all_mut(&mut self) -> impl Iterator<Item = &mut Container> {
        self.init.iter_mut().chain(self.containers.iter_mut())
    }

    pub fn any_running(&self) -> bool {
        self.init
            .iter()
            .chain(&self.containers)
            .any(Container::is_running)
    }
}

/// Steps a container until it stops changing at `now` (a start may already be due to end, a
/// run of 0 s, which ends in turn).
fn settle(
    c: &mut Container,
    policy: RestartPolicy,
    uid: &str,
    full_name: &str,
    now: Instant,
    wall: DateTime<Utc>,
    events: &mut Vec<RuntimeEvent>,
) {
    for _ in 0..MAX_PASSES {
        let before = c.state.clone();
        step(c, policy, uid, full_name, now, wall, events);
        if c.state == before {
            break;
        }
    }
}

/// One container's step at `now`: start it, notice its stop, or restart it.
fn step(
    c: &mut Container,
    policy: RestartPolicy,
    uid: &str,
    full_name: &str,
    now: Instant,
    wall: DateTime<Utc>,
    events: &mut Vec<RuntimeEvent>,
) {
    match &c.state {
        State::Waiting { .. } if c.last.is_none() => start(c, uid, now, wall, events),
        State::Waiting { .. } => {
            if c.retry_at.is_some_and(|at| at <= now) {
                if let Some(finished) = c.last.as_ref().map(|t| t.finished) {
                    c.backoff.next(finished);
                }
                c.restart_count += 1;
                start(c, uid, now, wall, events);
            }
        }
        State::Running { .. } => {
            let Some((at, cause)) = c.due_stop(now) else {
                return;
            };
            let code = match cause {
                StopCause::Exited => c.script.exit_code,
                StopCause::StartupProbe | StopCause::LivenessProbe => {
                    let probe = if cause == StopCause::StartupProbe {
                        "Startup"
                    } else {
                        "Liveness"
                    };
                    events.push(RuntimeEvent::warning(
                        "Unhealthy",
                        format!("{probe} probe failed: simulated failure"),
                    ));
                    events.push(RuntimeEvent::normal(
                        "Killing",
                        format!(
                            "Container {} failed {} probe, will be restarted",
                            c.name,
                            probe.to_lowercase()
                        ),
                    ));
                    KILLED
                }
            };
            c.terminate(code, at, wall);
            restart(c, policy, uid, full_name, now, wall, events);
        }
        State::Terminated(_) => restart(c, policy, uid, full_name, now, wall, events),
    }
}

fn start(
    c: &mut Container,
    uid: &str,
    now: Instant,
    wall: DateTime<Utc>,
    events: &mut Vec<RuntimeEvent>,
) {
    if c.restart_count == 0 {
        events.push(RuntimeEvent::normal(
            "Pulled",
            format!("Container image \"{}\" already present on machine", c.image),
        ));
    }
    events.push(RuntimeEvent::normal(
        "Created",
        format!("Created container: {}", c.name),
    ));
    events.push(RuntimeEvent::normal(
        "Started",
        format!("Started container {}", c.name),
    ));
    c.start(now, wall, uid);
}

/// A terminated container: restarted now, or waiting out its back-off, or left as it is.
fn restart(
    c: &mut Container,
    policy: RestartPolicy,
    uid: &str,
    full_name: &str,
    now: Instant,
    wall: DateTime<Utc>,
    events: &mut Vec<RuntimeEvent>,
) {
    let State::Terminated(t) = &c.state else {
        return;
    };
    if !policy.restarts(t.exit_code) {
        return;
    }
    let t = t.clone();
    match c.backoff.in_backoff_since(t.finished, now) {
        Some(backoff) => {
            c.retry_at = Some(t.finished + backoff);
            c.state = State::Waiting {
                reason: "CrashLoopBackOff".to_string(),
                message: Some(format!(
                    "back-off {} restarting failed container={} pod={full_name}",
                    go_duration(backoff),
                    c.name
                )),
            };
            c.last = Some(t);
            events.push(RuntimeEvent::warning(
                "BackOff",
                format!(
                    "Back-off restarting failed container {} in pod {full_name}",
                    c.name
                ),
            ));
        }
        None => {
            c.backoff.next(t.finished);
            c.last = Some(t);
            c.restart_count += 1;
            start(c, uid, now, wall, events);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use chrono::Utc;
    use serde_json::{json, Value};
    use tokio::time::Instant;

    use super::PodRuntime;
    use crate::behavior::PodBehavior;
    use crate::runtime::State;

    fn runtime(pod: &Value) -> PodRuntime {
        let behavior = PodBehavior::of(pod).expect("behavior");
        PodRuntime::new(
            pod,
            &behavior,
            Duration::from_secs(1),
            (Duration::from_secs(10), Duration::from_secs(300)),
            false,
        )
    }

    /// Advances in steps of half a second up to `secs`.
    fn run_for(rt: &mut PodRuntime, start: Instant, secs: u64) {
        for half in 0..=secs * 2 {
            rt.advance(start + Duration::from_millis(half * 500), Utc::now());
        }
    }

    #[test]
    fn an_init_container_that_succeeded_is_not_run_again_under_restart_always() {
        let pod = json!({"metadata": {"uid": "u", "name": "p", "namespace": "d"}, "spec": {
            "restartPolicy": "Always",
            "initContainers": [{"name": "setup", "image": "busybox"}],
            "containers": [{"name": "app", "image": "nginx"}],
        }});
        let mut rt = runtime(&pod);
        run_for(&mut rt, Instant::now(), 30);
        assert!(matches!(&rt.init[0].state, State::Terminated(t) if t.exit_code == 0));
        assert_eq!(rt.init[0].restart_count, 0);
        assert!(rt.initialized());
        assert!(rt.containers[0].is_running());
    }

    #[test]
    fn a_failed_init_container_is_retried_when_the_pod_restarts() {
        let pod = json!({"metadata": {"uid": "u", "name": "p", "namespace": "d",
            "annotations": {"sim.kube.io/behavior": r#"{"setup": {"runSeconds": 1, "exitCode": 1}}"#}},
            "spec": {
                "restartPolicy": "Always",
                "initContainers": [{"name": "setup", "image": "busybox"}],
                "containers": [{"name": "app", "image": "nginx"}],
        }});
        let mut rt = runtime(&pod);
        run_for(&mut rt, Instant::now(), 15);
        assert!(rt.init[0].restart_count >= 1, "retried on failure");
        assert!(!rt.initialized());
        assert!(!rt.containers[0].is_running());
    }

    #[test]
    fn a_sidecar_starts_first_and_keeps_running_beside_the_app() {
        let pod = json!({"metadata": {"uid": "u", "name": "p", "namespace": "d"}, "spec": {
            "restartPolicy": "Always",
            "initContainers": [
                {"name": "proxy", "image": "envoy", "restartPolicy": "Always"},
                {"name": "setup", "image": "busybox"},
            ],
            "containers": [{"name": "app", "image": "nginx"}],
        }});
        let mut rt = runtime(&pod);
        let start = Instant::now();
        rt.advance(start, Utc::now());
        assert!(rt.init[0].is_running(), "the sidecar starts first");
        assert!(
            rt.init[1].is_running(),
            "the next init container starts once it is up"
        );
        run_for(&mut rt, start, 30);
        assert!(rt.initialized());
        assert!(rt.init[0].is_running(), "the sidecar keeps running");
        assert_eq!(rt.init[0].restart_count, 0);
        assert!(matches!(&rt.init[1].state, State::Terminated(t) if t.exit_code == 0));
        assert!(rt.containers[0].is_running());
    }
}
