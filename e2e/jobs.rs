//! The Job, CronJob and TTL controllers through the real binary with the real kubectl, on the
//! embedded store and on etcd. The test plays the kubelet: it writes pods' phases through
//! `PUT .../pods/NAME/status`.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{start, start_on_etcd, Kubectl, Server};
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
    let mut pods = Vec::new();
    wait_until(&format!("a pod of {job}"), WAIT, || {
        pods = running_pods(s, job);
        !pods.is_empty()
    });
    let mut pod = pods.remove(0);
    pod["status"]["phase"] = json!(phase);
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let r = s.send_json("PUT", &format!("{PODS}/{name}/status"), &pod);
    assert_eq!(r.status, 200, "set {name} {phase}: {}", r.body);
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

#[test]
fn jobs_on_embedded() {
    jobs(&start());
}

#[test]
fn jobs_on_etcd() {
    jobs(&start_on_etcd());
}
