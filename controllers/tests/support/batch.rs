//! What the Job, CronJob and TTL tests share: Jobs with an explicit selector, pods driven to a
//! phase through the status subresource (there is no kubelet), polling the registry.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use client::informer::{InformerConfig, InformerFactory};
use registry::options::{ListOptions, WriteOptions};
use registry::{RegistryError, Store, Subresource};
use serde_json::{json, Value};
use tokio::time::Instant;

use super::Harness;

/// Bound on every wait for a controller to get somewhere.
pub const WAIT: Duration = Duration::from_secs(30);

pub fn informers(h: &Harness) -> Arc<InformerFactory> {
    InformerFactory::new(h.registry.clone(), InformerConfig::default())
}

/// Starts a Job controller with short pod failure backoffs.
pub fn start_job_controller(h: &Harness) -> tokio_util::sync::CancellationToken {
    let config = controllers::job::JobControllerConfig {
        workers: 2,
        pod_failure_backoff: Duration::from_millis(20),
        max_pod_failure_backoff: Duration::from_millis(200),
        ..Default::default()
    };
    let controller =
        controllers::job::JobController::new(&informers(h), config).expect("job controller");
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(controller.run(stop.clone()));
    stop
}

/// The Job `name` as stored.
pub async fn get_job(h: &Harness, ns: &str, name: &str) -> Value {
    get(&h.store("batch", "jobs"), ns, name)
        .await
        .unwrap_or_else(|| panic!("job {name} exists"))
}

pub async fn wait_for<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        if check().await {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A Job's spec with a selector of its own and matching template labels, as a Job made by the
/// server's defaulting would have (`manualSelector`, so nothing is generated).
pub fn job_spec(name: &str, extra: Value) -> Value {
    let mut spec = template_spec(name, extra);
    spec["manualSelector"] = json!(true);
    spec["selector"] = json!({"matchLabels": {"job": name}});
    spec
}

/// A CronJob's jobTemplate spec: no selector, which the server generates for each Job (upstream
/// refuses one in a template).
pub fn template_spec(name: &str, extra: Value) -> Value {
    let mut spec = json!({
        "template": {
            "metadata": {"labels": {"job": name}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "work", "image": "busybox"}],
            },
        },
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    spec
}

pub fn job(name: &str, extra: Value) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": job_spec(name, extra),
    })
}

pub async fn create(store: &Store, ns: &str, obj: Value) -> Value {
    store
        .create(Some(ns), obj, &WriteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("create {} in {ns}: {e}", store.info.plural))
}

pub async fn get(store: &Store, ns: &str, name: &str) -> Option<Value> {
    match store.get(Some(ns), name, &ListOptions::default()).await {
        Ok(obj) => Some(obj),
        Err(RegistryError::NotFound { .. }) => None,
        Err(e) => panic!("get {name}: {e}"),
    }
}

pub async fn list(store: &Store, ns: &str) -> Vec<Value> {
    let list = store
        .list(Some(ns), &ListOptions::default())
        .await
        .expect("list");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The pods of the Job `job` (by its label) that are neither finished nor deleting.
pub async fn running_pods(pods: &Store, ns: &str, job: &str) -> Vec<Value> {
    list(pods, ns)
        .await
        .into_iter()
        .filter(|p| p["metadata"]["labels"]["job"] == job)
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
        .collect()
}

/// Writes the pod's phase as a kubelet would.
pub async fn set_phase(pods: &Store, pod: &Value, phase: &str) {
    set_status(pods, pod, json!({ "phase": phase })).await;
}

/// The status of a container that ended with `code`, as a kubelet reports it.
pub fn exited(container: &str, code: i64) -> Value {
    json!({
        "name": container, "ready": false, "restartCount": 0, "image": "busybox", "imageID": "",
        "state": {"terminated": {"exitCode": code, "reason": "Error"}},
    })
}

/// Sets the given fields of the pod's status (phase, containerStatuses, conditions...).
pub async fn set_status(pods: &Store, pod: &Value, fields: Value) {
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    for _ in 0..10 {
        let Some(mut current) = get(pods, ns, name).await else {
            return;
        };
        if let Some(fields) = fields.as_object() {
            for (key, value) in fields {
                current["status"][key] = value.clone();
            }
        }
        let result = pods
            .update(
                Some(ns),
                name,
                current,
                Subresource::Status,
                &WriteOptions::default(),
            )
            .await;
        match result {
            Ok(_) => return,
            Err(RegistryError::Conflict { .. }) => continue,
            Err(e) => panic!("set status of {name}: {e}"),
        }
    }
    panic!("set status of {name}: kept conflicting");
}

/// The True conditions of an object: type → reason.
pub fn true_conditions(obj: &Value) -> Vec<(String, String)> {
    obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["status"] == "True")
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (s("type"), s("reason"))
        })
        .collect()
}

pub fn has_condition(obj: &Value, type_: &str) -> bool {
    true_conditions(obj).iter().any(|(t, _)| t == type_)
}

/// Reasons of the events recorded about the object `name`.
pub async fn event_reasons(h: &Harness, ns: &str, name: &str) -> Vec<String> {
    list(&h.store("", "events"), ns)
        .await
        .into_iter()
        .filter(|e| e["involvedObject"]["name"] == name)
        .filter_map(|e| e["reason"].as_str().map(String::from))
        .collect()
}

/// Waits until the Job `job` has at least one running pod; returns them.
pub async fn wait_running(pods: &Store, ns: &str, job: &str) -> Vec<Value> {
    let deadline = Instant::now() + WAIT;
    loop {
        let running = running_pods(pods, ns, job).await;
        if !running.is_empty() {
            return running;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for pods of {job}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Marks a Job finished as the Job controller would ("Complete" or "Failed").
pub async fn finish_job(jobs: &Store, ns: &str, name: &str, condition: &str) {
    let now = registry::object::now();
    for _ in 0..10 {
        let Some(mut job) = get(jobs, ns, name).await else {
            panic!("job {name} exists");
        };
        job["status"] = json!({
            "startTime": job["status"]["startTime"].as_str().unwrap_or(&now),
            "conditions": [{
                "type": condition, "status": "True", "reason": "Test",
                "lastProbeTime": now, "lastTransitionTime": now,
            }],
        });
        if condition == "Complete" {
            job["status"]["completionTime"] = json!(now);
            job["status"]["succeeded"] = json!(1);
        } else {
            job["status"]["failed"] = json!(1);
        }
        match jobs
            .update(
                Some(ns),
                name,
                job,
                Subresource::Status,
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) => return,
            Err(RegistryError::Conflict { .. }) => continue,
            Err(e) => panic!("finish job {name}: {e}"),
        }
    }
    panic!("finish job {name}: kept conflicting");
}
