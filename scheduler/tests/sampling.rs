//! Node sampling as upstream's percentageOfNodesToScore: in a cluster of 200 nodes a decision
//! stops filtering once it has found 100 that fit, and the next one starts where it stopped.
//! One node is preferred by every pod's node affinity: scoring every node puts every pod
//! there; sampling finds it in every other decision only.

mod support;

use std::time::Duration;

use client::informer::{InformerConfig, InformerFactory};
use scheduler::{Scheduler, SchedulerConfig};
use serde_json::json;
use support::Harness;
use test_support::{FromBackend, TestBackend};
use tokio_util::sync::CancellationToken;

const NODES: usize = 200;
const PODS: usize = 10;

/// How many of the pods the preferred node got, scheduling with `percentage`.
async fn pods_on_the_preferred_node(percentage: u32) -> usize {
    // The harness's own scheduler is stopped at once; this one has the percentage asked for.
    let h = Harness::from_backend(TestBackend::embedded().await).await;
    h.stop.cancel();
    let factory = InformerFactory::new(h.inner.registry.clone(), InformerConfig::default());
    let config = SchedulerConfig {
        percentage_of_nodes_to_score: percentage,
        ..SchedulerConfig::default()
    };
    let scheduler = Scheduler::new(&factory, config).expect("scheduler");
    let stop = CancellationToken::new();
    tokio::spawn(scheduler.run(stop.clone()));

    for n in 0..NODES - 1 {
        h.node(&format!("node-{n:03}"), "8", json!({})).await;
    }
    h.node(
        "gold",
        "64",
        json!({"metadata": {"labels": {"tier": "gold"}}}),
    )
    .await;
    // Every node in the scheduler's cache before the first decision.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let prefer_gold = json!({"spec": {"affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}}]}}}});
    let mut on_gold = 0;
    for p in 0..PODS {
        let name = format!("p{p}");
        h.pod(&name, "100m", prefer_gold.clone()).await;
        if h.node_of(&name).await == "gold" {
            on_gold += 1;
        }
    }
    stop.cancel();
    on_gold
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_cluster_is_sampled_and_every_node_is_looked_at_in_turn() {
    assert_eq!(
        pods_on_the_preferred_node(100).await,
        PODS,
        "scoring every node, every pod goes to the node it prefers"
    );
    // 200 nodes: 49% by the adaptive rule, raised to the floor of 100; decisions look at
    // the two halves in turn, so the preferred node is in every other sample.
    let sampled = pods_on_the_preferred_node(0).await;
    assert!(
        (PODS / 2 - 1..=PODS / 2 + 1).contains(&sampled),
        "{sampled} of {PODS} pods on the preferred node with sampling"
    );
}
