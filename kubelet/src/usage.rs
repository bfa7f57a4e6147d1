//! What a simulated container uses (what a kubelet's `/metrics/resource` reports and
//! metrics-server serves as `metrics.k8s.io`), as kwok's resource-usage simulation scripts
//! it: a running container uses its requests, or kwok's default (1m CPU, 1Mi memory) for
//! what it does not request; the pod annotations `kwok.x-k8s.io/usage-cpu` and
//! `kwok.x-k8s.io/usage-memory` set every container's usage instead, either as one quantity
//! (`"500m"`) or as steps from the container's start, `"<offset>=<quantity>,..."`
//! (`"0s=100m,30s=900m"`: 100m for 30 s, then 900m). A node uses what its running pods use.

use chrono::{DateTime, Utc};
use registry::quota::Quantity;
use serde_json::Value;

pub const CPU_ANNOTATION: &str = "kwok.x-k8s.io/usage-cpu";
pub const MEMORY_ANNOTATION: &str = "kwok.x-k8s.io/usage-memory";

/// kwok's defaults for a container that neither requests nor is scripted.
const DEFAULT_CPU: &str = "1m";
const DEFAULT_MEMORY: &str = "1Mi";

/// One container's usage at a moment.
#[derive(Clone, Debug, PartialEq)]
pub struct ContainerUsage {
    pub name: String,
    pub cpu: Quantity,
    pub memory: Quantity,
}

/// `30s`, `2m`, `1h`, `1.5s`; None when not one.
fn offset_seconds(text: &str) -> Option<f64> {
    let text = text.trim();
    let (number, factor) = if let Some(n) = text.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = text.strip_suffix('h') {
        (n, 3600.0)
    } else {
        return None;
    };
    let value: f64 = number.parse().ok()?;
    (value >= 0.0).then_some(value * factor)
}

/// The quantity a script gives `elapsed` seconds after the start; None when the script is
/// not valid (it is then ignored, as a bad annotation would leave kwok's default).
pub fn scripted(script: &str, elapsed: f64) -> Option<Quantity> {
    if !script.contains('=') {
        return Quantity::parse(script);
    }
    let mut current = None;
    for step in script.split(',') {
        let (offset, quantity) = step.split_once('=')?;
        let offset = offset_seconds(offset)?;
        let quantity = Quantity::parse(quantity)?;
        if offset <= elapsed {
            current = Some(quantity);
        }
    }
    // Before the first step: the first step's value.
    current.or_else(|| {
        let (_, first) = script.split(',').next()?.split_once('=')?;
        Quantity::parse(first)
    })
}

fn request(container: &Value, resource: &str) -> Option<Quantity> {
    container["resources"]["requests"][resource]
        .as_str()
        .and_then(Quantity::parse)
        .or_else(|| {
            container["resources"]["limits"][resource]
                .as_str()
                .and_then(Quantity::parse)
        })
}

/// When the container started running, if it runs.
fn running_since(pod: &Value, name: &str) -> Option<DateTime<Utc>> {
    let status = pod["status"]["containerStatuses"]
        .as_array()?
        .iter()
        .find(|s| s["name"] == name)?;
    let started = status["state"]["running"]["startedAt"].as_str()?;
    DateTime::parse_from_rfc3339(started)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The usage of each running container of a running pod at `now`; None when the pod does
/// not run (metrics-server reports no metrics for it).
pub fn pod_usage(pod: &Value, now: DateTime<Utc>) -> Option<Vec<ContainerUsage>> {
    if pod["status"]["phase"] != "Running" || pod["metadata"]["deletionTimestamp"].is_string() {
        return None;
    }
    let annotations = &pod["metadata"]["annotations"];
    let mut out = Vec::new();
    for container in pod["spec"]["containers"].as_array()? {
        let name = container["name"].as_str().unwrap_or_default();
        let Some(started) = running_since(pod, name) else {
            continue;
        };
        let elapsed = (now - started).num_milliseconds().max(0) as f64 / 1000.0;
        let usage = |annotation: &str, resource: &str, default: &str| {
            annotations[annotation]
                .as_str()
                .and_then(|script| scripted(script, elapsed))
                .or_else(|| request(container, resource))
                .or_else(|| Quantity::parse(default))
                .unwrap_or_default()
        };
        out.push(ContainerUsage {
            name: name.to_string(),
            cpu: usage(CPU_ANNOTATION, "cpu", DEFAULT_CPU),
            memory: usage(MEMORY_ANNOTATION, "memory", DEFAULT_MEMORY),
        });
    }
    (!out.is_empty()).then_some(out)
}

/// What a node's running pods use together (CPU, memory).
pub fn node_usage<'a>(
    pods: impl IntoIterator<Item = &'a Value>,
    now: DateTime<Utc>,
) -> (Quantity, Quantity) {
    let (mut cpu, mut memory) = (Quantity::default(), Quantity::default());
    for containers in pods.into_iter().filter_map(|p| pod_usage(p, now)) {
        for c in containers {
            cpu.add(&c.cpu);
            memory.add(&c.memory);
        }
    }
    (cpu, memory)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .expect("a time")
            .with_timezone(&Utc)
    }

    fn pod(annotations: Value, requests: Value) -> Value {
        json!({"metadata": {"annotations": annotations},
            "spec": {"containers": [{"name": "app", "resources": {"requests": requests}}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "app",
                "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}})
    }

    #[test]
    fn requests_then_kwok_defaults() {
        let now = at("2026-01-01T00:01:00Z");
        let used = pod_usage(&pod(json!({}), json!({"cpu": "250m"})), now).expect("runs");
        assert_eq!(used[0].cpu.to_string(), "250m");
        assert_eq!(used[0].memory.to_string(), "1Mi");
    }

    #[test]
    fn annotations_script_usage_over_time() {
        let p = pod(
            json!({CPU_ANNOTATION: "0s=100m,30s=900m", MEMORY_ANNOTATION: "64Mi"}),
            json!({"cpu": "250m"}),
        );
        let early = pod_usage(&p, at("2026-01-01T00:00:10Z")).expect("runs");
        assert_eq!(early[0].cpu.to_string(), "100m");
        assert_eq!(early[0].memory.to_string(), "64Mi");
        let late = pod_usage(&p, at("2026-01-01T00:00:45Z")).expect("runs");
        assert_eq!(late[0].cpu.to_string(), "900m");
        assert!(scripted("0s=1,x=2", 5.0).is_none());
    }

    #[test]
    fn pods_not_running_use_nothing() {
        let mut p = pod(json!({}), json!({}));
        p["status"]["phase"] = json!("Pending");
        assert!(pod_usage(&p, at("2026-01-01T00:00:10Z")).is_none());
        let (cpu, _) = node_usage(
            [&pod(json!({}), json!({"cpu": "1"})), &p],
            at("2026-01-01T00:00:10Z"),
        );
        assert_eq!(cpu.to_string(), "1");
    }
}
