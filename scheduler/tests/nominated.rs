//! A pod a preemption nominated to a node (`status.nominatedNodeName`) is tried there first
//! and placed there when it fits, as upstream's evaluateNominatedNode, even when the search
//! would not choose it: every other node scores higher here, and with 200 nodes sampling
//! looks at only half of them. A nominated node that no longer fits leaves the search to
//! decide.

mod support;

use client::informer::{InformerConfig, InformerFactory};
use registry::Subresource;
use scheduler::{Scheduler, SchedulerConfig};
use serde_json::{json, Value};
use support::{write, Harness};
use test_support::{FromBackend, TestBackend};
use tokio_util::sync::CancellationToken;

const NODES: usize = 200;

/// A pending pod, nominated to `node`, made before any scheduler runs.
async fn nominated_pod(h: &Harness, name: &str, node: &str, extra: Value) {
    h.pod(name, "100m", extra).await;
    let mut pod: Value = h.get(name).await;
    pod["status"]["nominatedNodeName"] = json!(node);
    h.pods()
        .update(Some("default"), name, pod, Subresource::Status, &write())
        .await
        .expect("nominate");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nominated_pod_goes_to_its_node_when_it_still_fits() {
    // The harness's scheduler is stopped at once: the pods are made and nominated before
    // this one runs, and before any node exists, so that they wait (still nominated) for
    // the nodes, and every decision about them is made with their nominated node, if it
    // exists, in the cache (it is made first).
    let h = Harness::from_backend(TestBackend::embedded().await).await;
    h.stop.cancel();
    let prefer_gold = json!({"spec": {"affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}}]}}}});
    nominated_pod(&h, "nominated", "plain", prefer_gold.clone()).await;
    nominated_pod(&h, "stale", "full", prefer_gold.clone()).await;
    nominated_pod(&h, "gone", "no-such-node", prefer_gold.clone()).await;

    let factory = InformerFactory::new(h.inner.registry.clone(), InformerConfig::default());
    let scheduler = Scheduler::new(&factory, SchedulerConfig::default()).expect("scheduler");
    let stop = CancellationToken::new();
    tokio::spawn(scheduler.run(stop.clone()));
    for name in ["nominated", "stale", "gone"] {
        h.event(name, "FailedScheduling").await;
    }

    // Neither has the label every pod prefers; `full` has no room for the pod.
    h.node("plain", "8", json!({})).await;
    h.node("full", "0", json!({})).await;
    for n in 0..NODES - 2 {
        h.node(
            &format!("node-{n:03}"),
            "8",
            json!({"metadata": {"labels": {"tier": "gold"}}}),
        )
        .await;
    }

    assert_eq!(h.node_of("nominated").await, "plain");
    // No room on the nominated node, or no such node: placed by the search.
    assert_ne!(h.node_of("stale").await, "full");
    assert_ne!(h.node_of("gone").await, "no-such-node");
    stop.cancel();
}
