//! The status of a pod as the kubelet computes it from its runtime state (upstream's
//! generateAPIPodStatus, getPhase and convertToAPIContainerStatuses).

use std::net::Ipv4Addr;

use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::conditions::{self, names_message, Condition};
use registry::types::{PodPhase, RestartPolicy};

use crate::runtime::{Container, PodRuntime, State};

/// What the status is made of.
pub struct PodView<'a> {
    pub pod: &'a Value,
    pub runtime: &'a PodRuntime,
    pub pod_ip: Option<Ipv4Addr>,
    pub sandbox_ready: bool,
    pub host_ip: &'a str,
    pub start_time: &'a str,
    /// The pod is being (or has been) stopped for good: no container restarts any more.
    pub terminal: bool,
    pub now: Instant,
    /// The wall-clock time of `now`, for new transition times.
    pub wall: &'a str,
}

/// upstream's getPhase.
pub fn phase(rt: &PodRuntime, terminal: bool) -> PodPhase {
    if !rt.initialized() {
        return if rt.init_failed() || terminal {
            PodPhase::Failed
        } else {
            PodPhase::Pending
        };
    }
    let (mut waiting, mut running, mut stopped, mut succeeded) = (0, 0, 0, 0);
    for c in &rt.containers {
        match &c.state {
            State::Running { .. } => running += 1,
            State::Terminated(t) => {
                stopped += 1;
                if t.exit_code == 0 {
                    succeeded += 1;
                }
            }
            State::Waiting { .. } if c.last.is_some() => stopped += 1,
            State::Waiting { .. } => waiting += 1,
        }
    }
    if waiting > 0 {
        return if terminal {
            PodPhase::Failed
        } else {
            PodPhase::Pending
        };
    }
    if running > 0 {
        return PodPhase::Running;
    }
    if stopped == 0 {
        return PodPhase::Pending;
    }
    match (terminal, rt.restart_policy) {
        (false, RestartPolicy::Always) => PodPhase::Running,
        _ if stopped == succeeded => PodPhase::Succeeded,
        (false, RestartPolicy::OnFailure) => PodPhase::Running,
        _ => PodPhase::Failed,
    }
}

fn state_json(c: &Container) -> Value {
    match &c.state {
        State::Waiting { reason, message } => {
            let mut w = json!({"reason": reason});
            if let Some(m) = message {
                w["message"] = json!(m);
            }
            json!({"waiting": w})
        }
        State::Running { started_at, .. } => {
            json!({"running": {"startedAt": registry::object::timestamp(*started_at)}})
        }
        State::Terminated(_) => last_json(c.termination()),
    }
}

fn last_json(t: Option<&crate::runtime::Termination>) -> Value {
    let Some(t) = t else {
        return json!({});
    };
    let mut term = json!({"exitCode": t.exit_code, "reason": t.reason,
        "finishedAt": registry::object::timestamp(t.finished_at)});
    if let Some(at) = t.started_at {
        term["startedAt"] = json!(registry::object::timestamp(at));
    }
    if let Some(id) = &t.container_id {
        term["containerID"] = json!(id);
    }
    if let Some(m) = &t.message {
        term["message"] = json!(m);
    }
    json!({"terminated": term})
}

fn container_status(c: &Container, view: &PodView) -> Value {
    let ever_started = c.container_id.is_some();
    let mut s = json!({
        "name": c.name,
        "image": c.image,
        "imageID": if ever_started { c.image_id() } else { String::new() },
        "ready": !view.terminal && c.is_ready(view.now),
        "started": !view.terminal && c.is_started(view.now),
        "restartCount": c.restart_count,
        "state": state_json(c),
        "lastState": last_json(c.last.as_ref()),
    });
    if let Some(id) = &c.container_id {
        s["containerID"] = json!(id);
    }
    s
}

/// upstream's GetPodQOS, for a pod the registry left without a class.
fn qos_class(pod: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|f| pod["spec"][f].as_array())
        .flatten()
        .collect();
    let resources = |c: &Value, kind: &str| {
        c["resources"][kind]
            .as_object()
            .cloned()
            .unwrap_or_default()
    };
    if containers
        .iter()
        .all(|c| resources(c, "requests").is_empty() && resources(c, "limits").is_empty())
    {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let limits = resources(c, "limits");
        let requests = resources(c, "requests");
        ["cpu", "memory"].iter().all(|r| {
            limits
                .get(*r)
                .is_some_and(|l| requests.get(*r).is_none_or(|q| q == l))
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// The status to write: the stored one with everything the kubelet owns replaced.
pub fn generate(view: &PodView) -> Value {
    let rt = view.runtime;
    let old = &view.pod["status"];
    let phase = phase(rt, view.terminal);
    let mut status: Map<String, Value> = old.as_object().cloned().unwrap_or_default();

    let pending_init: Vec<&str> = rt
        .init
        .iter()
        .filter(|c| !c.init_done())
        .map(|c| c.name.as_str())
        .collect();
    // Sidecars count towards readiness as the regular containers do (upstream).
    let sidecars = rt.init.iter().filter(|c| c.restartable);
    let unready: Vec<&str> = rt
        .containers
        .iter()
        .chain(sidecars)
        .filter(|c| view.terminal || !c.is_ready(view.now))
        .map(|c| c.name.as_str())
        .collect();
    let mut owned = vec![if view.sandbox_ready {
        Condition::yes("PodReadyToStartContainers")
    } else {
        Condition::no("PodReadyToStartContainers", None, None)
    }];
    owned.push(if pending_init.is_empty() {
        Condition::yes("Initialized")
    } else {
        Condition::no(
            "Initialized",
            Some("ContainersNotInitialized"),
            Some(names_message("incomplete", &pending_init)),
        )
    });
    let containers_ready = if phase == PodPhase::Succeeded {
        Condition::no("ContainersReady", Some("PodCompleted"), None)
    } else if !unready.is_empty() {
        Condition::no(
            "ContainersReady",
            Some("ContainersNotReady"),
            Some(names_message("unready", &unready)),
        )
    } else {
        Condition::yes("ContainersReady")
    };
    let ready = if !containers_ready.status {
        Condition::no(
            "Ready",
            containers_ready.reason,
            containers_ready.message.clone(),
        )
    } else if let Some(message) = conditions::readiness_gates(view.pod, &old["conditions"]) {
        Condition::no("Ready", Some("ReadinessGatesNotReady"), Some(message))
    } else {
        Condition::yes("Ready")
    };
    owned.push(containers_ready);
    owned.push(ready);

    status.insert("phase".into(), json!(phase.as_str()));
    status.insert(
        "conditions".into(),
        conditions::merge(&old["conditions"], owned, view.wall),
    );
    status.insert("hostIP".into(), json!(view.host_ip));
    status.insert("hostIPs".into(), json!([{"ip": view.host_ip}]));
    if let Some(ip) = view.pod_ip {
        status.insert("podIP".into(), json!(ip.to_string()));
        status.insert("podIPs".into(), json!([{"ip": ip.to_string()}]));
    }
    status.insert("startTime".into(), json!(view.start_time));
    if !status.contains_key("qosClass") {
        status.insert("qosClass".into(), json!(qos_class(view.pod)));
    }
    if !rt.init.is_empty() {
        let init: Vec<Value> = rt.init.iter().map(|c| container_status(c, view)).collect();
        status.insert("initContainerStatuses".into(), Value::Array(init));
    }
    let containers: Vec<Value> = rt
        .containers
        .iter()
        .map(|c| container_status(c, view))
        .collect();
    status.insert("containerStatuses".into(), Value::Array(containers));
    Value::Object(status)
}
