//! Preemption through the real binary and kubectl, on both backends: PriorityClasses made
//! with `kubectl create priorityclass`, a pod of higher priority that fits nowhere evicts a
//! lower one (marked DisruptionTarget by the scheduler, a `Preempted` event), is nominated to
//! the node and runs there; a class with `preemptionPolicy: Never` waits instead, and a pod
//! with nothing of lower priority to evict is told so, in upstream's words.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{start_embedded_with, start_on_etcd_with, Kubectl, Server};
use test_support::wait_until;

const LONG: Duration = Duration::from_secs(60);
const ONE_SMALL_NODE: [&str; 5] = ["--nodes", "1", "--scheduler", "--node-cpu", "2"];

fn pod(name: &str, class: &str, cpu: &str) -> String {
    format!(
        r#"{{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "{name}"}},
            "spec": {{"priorityClassName": "{class}", "terminationGracePeriodSeconds": 1,
                     "containers": [{{"name": "c", "image": "nginx",
                                     "resources": {{"requests": {{"cpu": "{cpu}"}}}}}}]}}}}"#
    )
}

fn scheduled_condition(s: &Server, name: &str) -> Value {
    let pod = s.json(&["get", "pod", name]);
    pod["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "PodScheduled").cloned())
        .unwrap_or(Value::Null)
}

fn wait_message(s: &Server, name: &str, expected: &str) {
    wait_until(&format!("{name}'s PodScheduled message"), LONG, || {
        scheduled_condition(s, name)["message"] == expected
    });
}

fn running(s: &Server, name: &str) -> bool {
    s.json(&["get", "pod", name])["status"]["phase"] == "Running"
}

fn preempts(s: &Server) {
    s.kubectl(&["create", "priorityclass", "low", "--value=10"]);
    s.kubectl(&["create", "priorityclass", "high", "--value=1000"]);
    s.kubectl(&[
        "create",
        "priorityclass",
        "patient",
        "--value=1000",
        "--preemption-policy=Never",
    ]);
    s.with_manifest("create", &pod("low", "low", "1500m"));
    wait_until("the low pod running", LONG, || running(s, "low"));

    // A class that never preempts waits.
    s.with_manifest("create", &pod("patient", "patient", "1"));
    wait_message(
        s,
        "patient",
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never.",
    );
    assert!(running(s, "low"));

    // A higher one evicts the low pod, is nominated and runs.
    s.with_manifest("create", &pod("high", "high", "1"));
    let uid = s.json(&["get", "pod", "high"])["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    wait_until("the high pod running", LONG, || running(s, "high"));
    let high = s.json(&["get", "pod", "high"]);
    assert_eq!(high["status"]["nominatedNodeName"], "node-0", "{high}");
    assert_eq!(high["spec"]["nodeName"], "node-0", "{high}");
    let events = s.kubectl(&[
        "get",
        "events",
        "--field-selector=involvedObject.name=low,reason=Preempted",
        "-o",
        "jsonpath={.items[*].message}",
    ]);
    assert_eq!(events, format!("Preempted by pod {uid} on node node-0"));
    wait_until("the low pod gone", LONG, || {
        !s.kubectl_raw(&["get", "pod", "low"]).status.success()
    });
    // The room the low pod left takes the patient one too.
    wait_until("the patient pod running", LONG, || running(s, "patient"));

    // Nothing of lower priority to evict.
    s.with_manifest("create", &pod("huge", "high", "4"));
    wait_message(
        s,
        "huge",
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
    );
    assert!(running(s, "high") && running(s, "patient"));
}

#[test]
fn a_higher_priority_pod_preempts() {
    preempts(&start_embedded_with(&ONE_SMALL_NODE));
}

#[test]
fn a_higher_priority_pod_preempts_on_etcd() {
    preempts(&start_on_etcd_with(&ONE_SMALL_NODE));
}
