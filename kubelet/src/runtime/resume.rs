//! Taking over the containers of a pod that already runs: the pod's status is this simulated
//! runtime's durable record, as a real node's container runtime outlives a kubelet restart.
//! A kubelet that starts (a server restarted, or another server won the leader election)
//! picks each running container up where the status left it, so a hand-over restarts
//! nothing and keeps startedAt, restartCount and the readiness the pod already had.

use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio::time::Instant;

use super::container::{Container, State, Termination};
use super::pod::PodRuntime;

/// The runtime-clock instant `wall_then` corresponds to, given that `wall_now` is `now`.
fn instant_of(wall_then: DateTime<Utc>, now: Instant, wall_now: DateTime<Utc>) -> Instant {
    let elapsed = (wall_now - wall_then).to_std().unwrap_or_default();
    // An instant before this machine booted cannot be represented: it is long past anyway.
    now.checked_sub(elapsed).unwrap_or(now)
}

fn time(v: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(v.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn termination(t: &Value, now: Instant, wall: DateTime<Utc>) -> Option<Termination> {
    let finished_at = time(&t["finishedAt"])?;
    Some(Termination {
        exit_code: t["exitCode"]
            .as_i64()
            .and_then(|c| i32::try_from(c).ok())
            .unwrap_or_default(),
        reason: t["reason"].as_str().unwrap_or("Error").to_string(),
        message: t["message"].as_str().map(str::to_string),
        started_at: time(&t["startedAt"]),
        finished_at,
        container_id: t["containerID"].as_str().map(str::to_string),
        finished: instant_of(finished_at, now, wall),
    })
}

fn resume_container(c: &mut Container, status: &Value, now: Instant, wall: DateTime<Utc>) {
    c.restart_count = status["restartCount"]
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or_default();
    c.last = termination(&status["lastState"]["terminated"], now, wall);
    let state = &status["state"];
    if let Some(started_at) = time(&state["running"]["startedAt"]) {
        c.container_id = status["containerID"].as_str().map(str::to_string);
        c.state = State::Running {
            since: instant_of(started_at, now, wall),
            started_at,
        };
    } else if let Some(t) = termination(&state["terminated"], now, wall) {
        c.container_id = t.container_id.clone();
        c.state = State::Terminated(t);
    } else if c.last.is_some() {
        // Waiting to restart: as upstream's kubelet, a new one starts with a fresh back-off.
        c.retry_at = Some(now);
    }
}

impl PodRuntime {
    /// Picks up the containers `pod`'s status shows; containers it does not show stay as new.
    pub fn resume(&mut self, pod: &Value, now: Instant, wall: DateTime<Utc>) {
        let statuses = |field: &str| pod["status"][field].as_array().cloned().unwrap_or_default();
        let init = statuses("initContainerStatuses");
        let regular = statuses("containerStatuses");
        for (containers, statuses) in [(&mut self.init, &init), (&mut self.containers, &regular)] {
            for c in containers.iter_mut() {
                if let Some(s) = statuses.iter().find(|s| s["name"] == c.name.as_str()) {
                    resume_container(c, s, now, wall);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::behavior::PodBehavior;

    fn runtime(pod: &Value) -> PodRuntime {
        let second = Duration::from_secs(1);
        PodRuntime::new(
            pod,
            &PodBehavior::default(),
            second,
            (second, second),
            false,
        )
    }

    #[test]
    fn running_containers_keep_their_start_and_restarts() {
        let wall = Utc::now();
        let started = wall - chrono::Duration::seconds(30);
        let pod = json!({
            "metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {"initContainers": [{"name": "init", "image": "busybox"}],
                     "containers": [{"name": "app", "image": "nginx"}]},
            "status": {
                "initContainerStatuses": [{"name": "init", "restartCount": 0, "state": {"terminated": {
                    "exitCode": 0, "reason": "Completed", "startedAt": started.to_rfc3339(),
                    "finishedAt": started.to_rfc3339(), "containerID": "sim://i"}}}],
                "containerStatuses": [{"name": "app", "restartCount": 2, "containerID": "sim://a",
                    "state": {"running": {"startedAt": started.to_rfc3339()}}}]
            }
        });
        let mut rt = runtime(&pod);
        let now = Instant::now();
        rt.resume(&pod, now, wall);
        assert!(rt.initialized());
        let app = &rt.containers[0];
        assert_eq!(app.restart_count, 2);
        assert_eq!(app.container_id.as_deref(), Some("sim://a"));
        assert!(app.is_ready(now), "ready since long before the hand-over");
        let events = rt.advance(now, wall);
        assert!(events.is_empty(), "nothing restarts: {events:?}");
        match &rt.containers[0].state {
            State::Running { started_at, .. } => {
                assert_eq!(started_at.timestamp(), started.timestamp())
            }
            other => panic!("not running: {other:?}"),
        }
    }

    #[test]
    fn a_pod_without_statuses_starts_afresh() {
        let pod = json!({
            "metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            "status": {"phase": "Pending"}
        });
        let mut rt = runtime(&pod);
        rt.resume(&pod, Instant::now(), Utc::now());
        assert!(matches!(rt.containers[0].state, State::Waiting { .. }));
        assert_eq!(rt.containers[0].restart_count, 0);
    }
}
