//! The scheduler over a real registry: fit by resources, the unschedulable condition and
//! event then scheduling once a node comes, taints, node selectors, host ports, other
//! schedulers' pods.

mod support;

use std::time::Duration;

use client::informer::{InformerConfig, InformerFactory};
use scheduler::{Scheduler, SchedulerConfig};
use serde_json::{json, Value};
use support::Harness;
use test_support::{FromBackend, TestBackend};
use tokio_util::sync::CancellationToken;

test_support::both_backends!(
    crate::support::Harness;
    binds_to_the_only_fitting_node,
    unschedulable_then_scheduled_when_a_node_comes,
    taints_selectors_and_host_ports,
    other_schedulers_pods_are_left_alone,
);

async fn binds_to_the_only_fitting_node(h: &Harness) {
    h.node("small", "1", json!({})).await;
    h.node("big", "4", json!({})).await;
    h.pod("p", "2", json!({})).await;
    assert_eq!(h.node_of("p").await, "big");
    let pod = h.get("p").await;
    assert_eq!(pod["status"]["conditions"][0]["type"], "PodScheduled");
    assert_eq!(pod["status"]["conditions"][0]["status"], "True");
    let event = h.event("p", "Scheduled").await;
    assert_eq!(event["message"], "Successfully assigned default/p to big");
    assert_eq!(event["source"]["component"], "default-scheduler");
}

async fn unschedulable_then_scheduled_when_a_node_comes(h: &Harness) {
    h.node("a", "1", json!({})).await;
    h.node("b", "1", json!({})).await;
    h.node(
        "tainted",
        "8",
        json!({"spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}}),
    )
    .await;
    h.pod("big", "2", json!({})).await;
    let message = "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.";
    // The pod's informer may deliver it before the nodes' does ("no nodes available");
    // the nodes' arrival has it tried again, with the full answer.
    let pod = h
        .wait_pod("big", "unschedulable on the three nodes", |p| {
            p["status"]["conditions"][0]["reason"] == "Unschedulable"
                && p["status"]["conditions"][0]["message"] == message
        })
        .await;
    let condition = &pod["status"]["conditions"][0];
    assert_eq!(condition["status"], "False");
    let event = h
        .event_where("big", "FailedScheduling", |e| e["message"] == message)
        .await;
    assert_eq!(event["type"], "Warning");
    h.node("c", "4", json!({})).await;
    assert_eq!(h.node_of("big").await, "c");
    let pod = h.get("big").await;
    assert_eq!(pod["status"]["conditions"][0]["status"], "True");
}

async fn taints_selectors_and_host_ports(h: &Harness) {
    h.node(
        "gpu",
        "4",
        json!({"metadata": {"labels": {"disk": "ssd"}},
               "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}}),
    )
    .await;
    h.node(
        "plain",
        "4",
        json!({"metadata": {"labels": {"disk": "hdd"}}}),
    )
    .await;
    let tolerate = json!([{"key": "dedicated", "operator": "Equal", "value": "gpu"}]);
    h.pod(
        "tolerant",
        "1",
        json!({"spec": {"tolerations": tolerate, "nodeSelector": {"disk": "ssd"}}}),
    )
    .await;
    assert_eq!(h.node_of("tolerant").await, "gpu");
    h.pod(
        "intolerant",
        "1",
        json!({"spec": {"nodeSelector": {"disk": "ssd"}}}),
    )
    .await;
    let pod = h
        .wait_pod("intolerant", "unschedulable", |p| {
            p["status"]["conditions"][0]["reason"] == "Unschedulable"
        })
        .await;
    assert_eq!(
        pod["status"]["conditions"][0]["message"],
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    );
    let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}]}]}}});
    h.pod("affine", "1", json!({"spec": {"affinity": affinity}}))
        .await;
    assert_eq!(h.node_of("affine").await, "plain");
    let port = |name: &str| {
        json!({"spec": {"tolerations": tolerate, "containers": [{"name": "c", "image": "nginx",
            "resources": {"requests": {"cpu": "100m"}},
            "ports": [{"containerPort": 80, "hostPort": 8080, "name": name}]}]}})
    };
    h.pod("port-1", "1", port("a")).await;
    h.pod("port-2", "1", port("b")).await;
    let (one, two) = (h.node_of("port-1").await, h.node_of("port-2").await);
    assert_ne!(one, two, "host ports keep the pods apart");
    h.pod("port-3", "1", port("c")).await;
    let pod = h
        .wait_pod("port-3", "unschedulable", |p| {
            p["status"]["conditions"][0]["reason"] == "Unschedulable"
        })
        .await;
    assert!(pod["status"]["conditions"][0]["message"]
        .as_str()
        .is_some_and(
            |m| m.contains("2 node(s) didn't have free ports for the requested pod ports")
        ));
}

async fn other_schedulers_pods_are_left_alone(h: &Harness) {
    h.node("n", "4", json!({})).await;
    h.pod(
        "mine",
        "1",
        json!({"spec": {"schedulerName": "default-scheduler"}}),
    )
    .await;
    h.pod("theirs", "1", json!({"spec": {"schedulerName": "other"}}))
        .await;
    assert_eq!(h.node_of("mine").await, "n");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let theirs = h.get("theirs").await;
    assert!(theirs["spec"]["nodeName"].is_null());
    assert!(theirs["status"]["conditions"].is_null());
}

/// A scheduler started over a cluster decides only once its cache holds every node, as
/// upstream waits for its handlers: here the one node with room is the last of 1,500 its
/// node handler reads, and a pending pod made before it started goes there at its first
/// decision, never called unschedulable on a half-filled cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_scheduler_decides_with_every_node_in_its_cache() {
    let h = Harness::from_backend(TestBackend::embedded().await).await;
    h.stop.cancel();
    for n in 0..1_500 {
        h.node(&format!("full-{n:04}"), "0", json!({})).await;
    }
    h.node("zz-roomy", "8", json!({})).await;
    h.pod("early", "100m", json!({})).await;

    let factory = InformerFactory::new(h.inner.registry.clone(), InformerConfig::default());
    let scheduler = Scheduler::new(&factory, SchedulerConfig::default()).expect("scheduler");
    let stop = CancellationToken::new();
    tokio::spawn(scheduler.run(stop.clone()));
    assert_eq!(h.node_of("early").await, "zz-roomy");
    // Events are written in the background: give a failure's time to land.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let failed: Vec<Value> = h
        .events_of("early")
        .await
        .into_iter()
        .filter(|e| e["reason"] == "FailedScheduling")
        .collect();
    assert!(failed.is_empty(), "decided on a partial cache: {failed:?}");
    stop.cancel();
}
