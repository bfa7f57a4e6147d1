//! The pod conditions the kubelet owns (generate.go): PodReadyToStartContainers,
//! Initialized, ContainersReady and Ready. A condition keeps its lastTransitionTime while its
//! status stays the same.

use serde_json::{json, Value};

pub const OWNED: [&str; 4] = [
    "PodReadyToStartContainers",
    "Initialized",
    "ContainersReady",
    "Ready",
];

pub struct Condition {
    pub kind: &'static str,
    pub status: bool,
    pub reason: Option<&'static str>,
    pub message: Option<String>,
}

impl Condition {
    pub fn yes(kind: &'static str) -> Self {
        Self {
            kind,
            status: true,
            reason: None,
            message: None,
        }
    }

    pub fn no(kind: &'static str, reason: Option<&'static str>, message: Option<String>) -> Self {
        Self {
            kind,
            status: false,
            reason,
            message,
        }
    }
}

/// `containers with unready status: [a b]`, as upstream prints the names.
pub fn names_message(what: &str, names: &[&str]) -> String {
    format!("containers with {what} status: [{}]", names.join(" "))
}

/// The pod's conditions: those the kubelet does not own as they were, then its own, each
/// with the transition time it had if its status did not change.
pub fn merge(old: &Value, owned: Vec<Condition>, now: &str) -> Value {
    let old = old.as_array().cloned().unwrap_or_default();
    let mut out: Vec<Value> = old
        .iter()
        .filter(|c| !OWNED.contains(&c["type"].as_str().unwrap_or_default()))
        .cloned()
        .collect();
    for c in owned {
        let status = if c.status { "True" } else { "False" };
        let previous = old.iter().find(|o| o["type"] == c.kind);
        let since = previous
            .filter(|o| o["status"] == status)
            .and_then(|o| o["lastTransitionTime"].as_str())
            .unwrap_or(now);
        let mut v = json!({"type": c.kind, "status": status, "lastProbeTime": null,
            "lastTransitionTime": since});
        if let Some(reason) = c.reason {
            v["reason"] = json!(reason);
        }
        if let Some(message) = c.message {
            v["message"] = json!(message);
        }
        out.push(v);
    }
    Value::Array(out)
}

/// Whether every readiness gate's condition is True; the message of the first that is not.
pub fn readiness_gates(pod: &Value, conditions: &Value) -> Option<String> {
    let gates = pod["spec"]["readinessGates"].as_array()?;
    gates.iter().find_map(|g| {
        let kind = g["conditionType"].as_str().unwrap_or_default();
        let c = conditions
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == kind));
        match c {
            None => Some(format!(
                "corresponding condition of pod readiness gate \"{kind}\" does not exist."
            )),
            Some(c) if c["status"] != "True" => Some(format!(
                "the status of pod readiness gate \"{kind}\" is not \"True\", but {}",
                c["status"].as_str().unwrap_or_default()
            )),
            Some(_) => None,
        }
    })
}
