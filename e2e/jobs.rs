//! The Job, CronJob and TTL controllers through the real binary with the real kubectl, on the
//! embedded store and on etcd. The test plays the kubelet (the server runs no node and no
//! scheduler): it writes pods' phases through `PUT .../pods/NAME/status`.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{start_embedded_with, start_on_etcd_with, Kubectl, Server, NO_NODES};
use test_support::wait_until;

const PODS: &str = "/api/v1/namespaces/default/pods";
const WAIT: Duration = Duration::from_secs(60);

/// The unfinished pods controlled by the Job `job`.
fn running_pods(s: &Server, job: &str) -> Vec<Value> {
    let list = s.get(PODS).json();
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| {
            p["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|r| r.iter().any(|r| r["kind"] == "Job" && r["name"] == job))
        })
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
        .cloned()
        .collect()
}

/// Finishes the next pod of `job` with `phase`, as a kubelet would report it.
fn finish_next_pod(s: &Server, job: &str, phase: &str) {
    finish_next_pod_with(s, job, &json!({ "phase": phase }));
}

/// Finishes `count` pods of `job` with the given status fields, one after another.
fn finish_pods(s: &Server, job: &str, count: usize, status: &Value) {
    for _ in 0..count {
        finish_next_pod_with(s, job, status);
    }
}

/// Finishes the next pod of `job` with the given status fields.
fn finish_next_pod_with(s: &Server, job: &str, status: &Value) {
    let mut pods = Vec::new();
    wait_until(&format!("a pod of {job}"), WAIT, || {
        pods = running_pods(s, job);
        !pods.is_empty()
    });
    let mut pod = pods.remove(0);
    if let Some(fields) = status.as_object() {
        for (key, value) in fields {
            pod["status"][key] = value.clone();
        }
    }
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let r = s.send_json("PUT", &format!("{PODS}/{name}/status"), &pod);
    assert_eq!(r.status, 200, "finish {name}: {}", r.body);
}

fn jsonpath(s: &Server, resource: &str, path: &str) -> String {
    s.kubectl(&["get", resource, "-o", &format!("jsonpath={path}")])
}

fn jobs(s: &Server) {
    // A Job made by kubectl completes once its pod succeeds.
    s.kubectl(&["create", "job", "hello", "--image=busybox", "--", "true"]);
    finish_next_pod(s, "hello", "Succeeded");
    s.kubectl(&[
        "wait",
        "--for=condition=complete",
        "job/hello",
        "--timeout=60s",
    ]);
    assert_eq!(jsonpath(s, "job/hello", "{.status.succeeded}"), "1");
    // Events are written in the background.
    let mut described = String::new();
    wait_until("the Job's events in describe", WAIT, || {
        described = s.kubectl(&["describe", "job", "hello"]);
        ["SuccessfulCreate", "Completed", "job-controller"]
            .iter()
            .all(|needle| described.contains(needle))
    });

    // Failing pods past backoffLimit fail the Job and leave nothing running.
    s.with_manifest(
        "create",
        &json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "doomed"},
            "spec": {
                "backoffLimit": 1,
                "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": ["false"]}],
                }},
            },
        })
        .to_string(),
    );
    finish_next_pod(s, "doomed", "Failed");
    // The replacement comes after the pod failure backoff (10s).
    finish_next_pod(s, "doomed", "Failed");
    s.kubectl(&[
        "wait",
        "--for=condition=failed",
        "job/doomed",
        "--timeout=60s",
    ]);
    let reason = jsonpath(
        s,
        "job/doomed",
        r#"{.status.conditions[?(@.type=="Failed")].reason}"#,
    );
    assert_eq!(reason, "BackoffLimitExceeded");
    assert_eq!(jsonpath(s, "job/doomed", "{.status.failed}"), "2");
    assert!(running_pods(s, "doomed").is_empty());

    // A CronJob: its columns, and a Job made from it by kubectl (client-side).
    s.kubectl(&[
        "create",
        "cronjob",
        "tick",
        "--image=busybox",
        "--schedule=*/1 * * * *",
    ]);
    let table = s.kubectl(&["get", "cronjob", "tick"]);
    let mut lines = table.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    );
    let row = lines.next().unwrap_or_default();
    assert!(
        row.starts_with("tick") && row.contains("*/1 * * * *"),
        "{row}"
    );
    assert_eq!(
        jsonpath(s, "cronjob/tick", "{.spec.concurrencyPolicy}"),
        "Allow"
    );
    s.kubectl(&["create", "job", "by-hand", "--from=cronjob/tick"]);
    assert_eq!(
        jsonpath(s, "job/by-hand", "{.metadata.ownerReferences[0].name}"),
        "tick"
    );
    finish_next_pod(s, "by-hand", "Succeeded");
    s.kubectl(&[
        "wait",
        "--for=condition=complete",
        "job/by-hand",
        "--timeout=60s",
    ]);
}

fn policies(s: &Server) {
    // An Indexed Job completes once each of its indexes has a succeeded pod.
    s.with_manifest(
        "create",
        &json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "indexed"},
            "spec": {
                "completionMode": "Indexed", "completions": 3, "parallelism": 3,
                "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                }},
            },
        })
        .to_string(),
    );
    finish_pods(s, "indexed", 3, &json!({"phase": "Succeeded"}));
    s.kubectl(&[
        "wait",
        "--for=condition=complete",
        "job/indexed",
        "--timeout=60s",
    ]);
    assert_eq!(
        jsonpath(s, "job/indexed", "{.status.completedIndexes}"),
        "0-2"
    );
    assert_eq!(jsonpath(s, "job/indexed", "{.status.succeeded}"), "3");

    // A pod failure policy fails the Job on the first exit code it names.
    s.with_manifest(
        "create",
        &json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "fatal"},
            "spec": {
                "podFailurePolicy": {"rules": [{
                    "action": "FailJob",
                    "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]},
                }]},
                "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                }},
            },
        })
        .to_string(),
    );
    let exited = json!({
        "phase": "Failed",
        "containerStatuses": [{
            "name": "c", "ready": false, "restartCount": 0, "image": "busybox", "imageID": "",
            "state": {"terminated": {"exitCode": 42, "reason": "Error"}},
        }],
    });
    finish_next_pod_with(s, "fatal", &exited);
    s.kubectl(&[
        "wait",
        "--for=condition=failed",
        "job/fatal",
        "--timeout=60s",
    ]);
    let reason = jsonpath(
        s,
        "job/fatal",
        r#"{.status.conditions[?(@.type=="Failed")].reason}"#,
    );
    assert_eq!(reason, "PodFailurePolicy");
}

#[test]
fn policies_on_embedded() {
    policies(&start_embedded_with(&NO_NODES));
}

#[test]
fn policies_on_etcd() {
    policies(&start_on_etcd_with(&NO_NODES));
}

#[test]
fn jobs_on_embedded() {
    jobs(&start_embedded_with(&NO_NODES));
}

#[test]
fn jobs_on_etcd() {
    jobs(&start_on_etcd_with(&NO_NODES));
}
