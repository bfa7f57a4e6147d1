//! Pods: READY, STATUS and RESTARTS summarise the container statuses as upstream's printPod
//! does, including init and sidecar containers.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::format::since;
use super::zero_values::{condition_true, deleting, get, int, items, text, time};
use super::{age, name, text_column, wide, TableColumn};

pub(in crate::catalogue) fn pod_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column(
            "Ready",
            "The aggregate readiness state of this pod for accepting traffic.",
            ready,
        ),
        text_column(
            "Status",
            "The aggregate status of the containers in this pod.",
            status,
        ),
        text_column(
            "Restarts",
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            restarts,
        ),
        age(),
        wide(text_column("IP", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.", ip)),
        wide(text_column("Node", "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename", node)),
        wide(text_column("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.", nominated_node)),
        wide(text_column("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates", readiness_gates)),
    ]
}

/// What the three summary columns show, computed in one pass over the statuses.
#[derive(Debug, PartialEq)]
struct Summary {
    ready: usize,
    total: usize,
    reason: String,
    restarts: i64,
    last_restart: Option<DateTime<Utc>>,
}

fn ready(pod: &Value) -> Value {
    let s = summarize(pod);
    Value::String(format!("{}/{}", s.ready, s.total))
}

fn status(pod: &Value) -> Value {
    Value::String(summarize(pod).reason)
}

fn restarts(pod: &Value) -> Value {
    Value::String(restarts_at(pod, Utc::now()))
}

/// RESTARTS, with the time since the last restart when upstream knows it.
fn restarts_at(pod: &Value, now: DateTime<Utc>) -> String {
    let s = summarize(pod);
    match s.last_restart {
        Some(at) if s.restarts != 0 => format!("{} ({} ago)", s.restarts, since(Some(at), now)),
        _ => s.restarts.to_string(),
    }
}

fn or_none(s: &str) -> Value {
    Value::String(if s.is_empty() { "<none>" } else { s }.to_string())
}

fn ip(pod: &Value) -> Value {
    // The internal type keeps only podIPs; a lone podIP converts into its first entry.
    let first = items(pod, &["status", "podIPs"])
        .first()
        .map_or("", |ip| text(ip, &["ip"]));
    if first.is_empty() {
        or_none(text(pod, &["status", "podIP"]))
    } else {
        or_none(first)
    }
}

fn node(pod: &Value) -> Value {
    or_none(text(pod, &["spec", "nodeName"]))
}

fn nominated_node(pod: &Value) -> Value {
    or_none(text(pod, &["status", "nominatedNodeName"]))
}

fn readiness_gates(pod: &Value) -> Value {
    let gates = items(pod, &["spec", "readinessGates"]);
    if gates.is_empty() {
        return or_none("");
    }
    let conditions = items(pod, &["status", "conditions"]);
    let passing = gates
        .iter()
        .filter(|g| condition_true(conditions, text(g, &["conditionType"])))
        .count();
    Value::String(format!("{passing}/{}", gates.len()))
}

fn restart_count(status: &Value) -> i64 {
    int(status, &["restartCount"]).unwrap_or(0)
}

fn last_termination(status: &Value) -> Option<DateTime<Utc>> {
    time(status, &["lastState", "terminated", "finishedAt"])
}

/// "Signal:9" / "ExitCode:1" for a termination without a reason.
fn exit_description(terminated: &Value) -> String {
    match int(terminated, &["signal"]).unwrap_or(0) {
        0 => format!("ExitCode:{}", int(terminated, &["exitCode"]).unwrap_or(0)),
        signal => format!("Signal:{signal}"),
    }
}

fn summarize(pod: &Value) -> Summary {
    let phase = text(pod, &["status", "phase"]);
    let status_reason = text(pod, &["status", "reason"]);
    let conditions = items(pod, &["status", "conditions"]);
    let mut reason = if status_reason.is_empty() {
        phase
    } else {
        status_reason
    }
    .to_string();
    if conditions
        .iter()
        .any(|c| text(c, &["type"]) == "PodScheduled" && text(c, &["reason"]) == "SchedulingGated")
    {
        reason = "SchedulingGated".to_string();
    }

    let init_specs = items(pod, &["spec", "initContainers"]);
    // Sidecars: init containers that keep running count as pod containers.
    let is_sidecar = |name: &str| {
        init_specs
            .iter()
            .any(|c| text(c, &["name"]) == name && text(c, &["restartPolicy"]) == "Always")
    };
    let mut total = items(pod, &["spec", "containers"]).len();
    total += init_specs
        .iter()
        .filter(|c| text(c, &["restartPolicy"]) == "Always")
        .count();

    let mut ready = 0;
    let mut restarts = 0;
    let mut last_restart = None;
    let mut sidecar_restarts = 0;
    let mut last_sidecar_restart = None;
    let mut initializing = false;
    for (i, cs) in items(pod, &["status", "initContainerStatuses"])
        .iter()
        .enumerate()
    {
        let sidecar = is_sidecar(text(cs, &["name"]));
        restarts += restart_count(cs);
        last_restart = last_restart.max(last_termination(cs));
        if sidecar {
            sidecar_restarts += restart_count(cs);
            last_sidecar_restart = last_sidecar_restart.max(last_termination(cs));
        }
        let terminated = get(cs, &["state", "terminated"]).filter(|t| t.is_object());
        let waiting_reason = text(cs, &["state", "waiting", "reason"]);
        match terminated {
            Some(t) if int(t, &["exitCode"]).unwrap_or(0) == 0 => continue,
            _ if sidecar && cs.get("started").and_then(Value::as_bool) == Some(true) => {
                if cs.get("ready").and_then(Value::as_bool) == Some(true) {
                    ready += 1;
                }
                continue;
            }
            Some(t) => {
                let why = text(t, &["reason"]);
                reason = if why.is_empty() {
                    format!("Init:{}", exit_description(t))
                } else {
                    format!("Init:{why}")
                };
            }
            None if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" => {
                reason = format!("Init:{waiting_reason}");
            }
            None => reason = format!("Init:{i}/{}", init_specs.len()),
        }
        initializing = true;
        break;
    }

    if !initializing || condition_true(conditions, "Initialized") {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        for cs in items(pod, &["status", "containerStatuses"]).iter().rev() {
            restarts += restart_count(cs);
            last_restart = last_restart.max(last_termination(cs));
            let waiting = text(cs, &["state", "waiting", "reason"]);
            let terminated = get(cs, &["state", "terminated"]).filter(|t| t.is_object());
            let running = get(cs, &["state", "running"]).is_some_and(Value::is_object);
            if !waiting.is_empty() {
                reason = waiting.to_string();
            } else if let Some(t) = terminated {
                let why = text(t, &["reason"]);
                reason = if why.is_empty() {
                    exit_description(t)
                } else {
                    why.to_string()
                };
            } else if running && cs.get("ready").and_then(Value::as_bool) == Some(true) {
                has_running = true;
                ready += 1;
            }
        }
        // A container still running keeps a pod whose others completed out of "Completed".
        if reason == "Completed" && has_running {
            reason = if condition_true(conditions, "Ready") {
                "Running"
            } else {
                "NotReady"
            }
            .to_string();
        }
    }

    if deleting(pod) {
        if status_reason == "NodeLost" {
            reason = "Unknown".to_string();
        } else if phase != "Succeeded" && phase != "Failed" {
            reason = "Terminating".to_string();
        }
    }

    Summary {
        ready,
        total,
        reason,
        restarts,
        last_restart,
    }
}

#[cfg(test)]
mod tests {
    use chrono::{SecondsFormat, TimeDelta};
    use serde_json::json;

    use super::*;

    fn ago(now: DateTime<Utc>, secs: i64) -> String {
        (now - TimeDelta::seconds(secs)).to_rfc3339_opts(SecondsFormat::Secs, true)
    }

    fn running(name: &str, ready: bool, restarts: i64, last_exit: Option<&str>) -> Value {
        let mut s = json!({
            "name": name, "ready": ready, "restartCount": restarts,
            "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}},
        });
        if let Some(at) = last_exit {
            s["lastState"] = json!({"terminated": {"exitCode": 1, "finishedAt": at}});
        }
        s
    }

    fn pod(statuses: Vec<Value>) -> Value {
        let containers: Vec<Value> = statuses
            .iter()
            .map(|s| json!({"name": s["name"], "image": "nginx"}))
            .collect();
        json!({
            "metadata": {"name": "web", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"containers": containers, "nodeName": "node-1"},
            "status": {"phase": "Running", "podIP": "10.0.0.5", "containerStatuses": statuses},
        })
    }

    #[test]
    fn running_pod_with_two_of_three_ready_and_restarts() {
        let now = Utc::now();
        let p = pod(vec![
            running("a", true, 2, Some(&ago(now, 300))),
            running("b", true, 0, None),
            running("c", false, 1, Some(&ago(now, 3600))),
        ]);
        assert_eq!(ready(&p), "2/3");
        assert_eq!(status(&p), "Running");
        assert_eq!(restarts_at(&p, now), "3 (5m ago)");
        assert_eq!(ip(&p), "10.0.0.5");
        assert_eq!(node(&p), "node-1");
        assert_eq!(nominated_node(&p), "<none>");
        assert_eq!(readiness_gates(&p), "<none>");
    }

    #[test]
    fn crash_looping_pod() {
        let now = Utc::now();
        let p = pod(vec![json!({
            "name": "app", "ready": false, "restartCount": 5,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(now, 90)}},
        })]);
        assert_eq!(ready(&p), "0/1");
        assert_eq!(status(&p), "CrashLoopBackOff");
        assert_eq!(restarts_at(&p, now), "5 (90s ago)");
    }

    #[test]
    fn terminating_pod() {
        let mut p = pod(vec![running("a", true, 0, None)]);
        p["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:05:00Z");
        assert_eq!(status(&p), "Terminating");
        assert_eq!(restarts_at(&p, Utc::now()), "0");
        p["status"]["reason"] = json!("NodeLost");
        assert_eq!(status(&p), "Unknown");
        p["status"]["reason"] = json!("");
        p["status"]["phase"] = json!("Succeeded");
        assert_ne!(status(&p), "Terminating");
    }

    #[test]
    fn completed_and_failed_containers() {
        let done = json!({"name": "a", "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}});
        let p = pod(vec![done.clone()]);
        assert_eq!(status(&p), "Completed");
        let mut with_running = pod(vec![done, running("b", true, 0, None)]);
        assert_eq!(status(&with_running), "NotReady");
        with_running["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
        assert_eq!(status(&with_running), "Running");
        let killed = pod(vec![json!({"name": "a",
            "state": {"terminated": {"exitCode": 137, "signal": 9}}})]);
        assert_eq!(status(&killed), "Signal:9");
    }

    #[test]
    fn init_containers_and_sidecars() {
        let mut p = pod(vec![
            json!({"name": "app", "state": {"waiting": {"reason": "PodInitializing"}}}),
        ]);
        p["spec"]["initContainers"] = json!([
            {"name": "setup"},
            {"name": "proxy", "restartPolicy": "Always"},
            {"name": "migrate"},
        ]);
        p["status"]["initContainerStatuses"] = json!([
            {"name": "setup", "state": {"terminated": {"exitCode": 0}}},
            {"name": "proxy", "started": true, "ready": true, "restartCount": 1,
             "state": {"running": {}}},
            {"name": "migrate", "state": {"running": {}}},
        ]);
        assert_eq!(status(&p), "Init:2/3");
        assert_eq!(ready(&p), "1/2");
        p["status"]["initContainerStatuses"][2] =
            json!({"name": "migrate", "state": {"terminated": {"exitCode": 3}}});
        assert_eq!(status(&p), "Init:ExitCode:3");
        p["status"]["initContainerStatuses"][2] =
            json!({"name": "migrate", "state": {"waiting": {"reason": "ImagePullBackOff"}}});
        assert_eq!(status(&p), "Init:ImagePullBackOff");
        assert_eq!(restarts_at(&p, Utc::now()), "1");
    }

    #[test]
    fn odd_objects_do_not_panic() {
        for odd in [
            json!(null),
            json!({}),
            json!({"spec": "x", "status": []}),
            json!({"status": {"containerStatuses": [1, "a", {"state": 3, "restartCount": "x"}]}}),
            json!({"spec": {"initContainers": [{}]}, "status": {"initContainerStatuses": [{}]}}),
        ] {
            for column in pod_columns() {
                if let super::super::Cell::Printer(f) = column.cell {
                    let _ = f(&odd);
                }
            }
        }
        assert_eq!(status(&json!({})), "");
        assert_eq!(ready(&json!({})), "0/0");
    }
}
