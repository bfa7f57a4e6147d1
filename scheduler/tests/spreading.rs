//! How the scheduler spreads pods: required pod anti-affinity keeps replicas on separate nodes
//! (and leaves one more Pending), a DoNotSchedule topology spread constraint keeps zones within
//! maxSkew, and least-allocated scoring evens out equal pods over equal nodes.

mod support;

use std::collections::BTreeMap;

use serde_json::json;
use support::Harness;

test_support::both_backends!(
    crate::support::Harness;
    anti_affinity_keeps_replicas_apart,
    topology_spread_holds_max_skew,
    least_allocated_evens_out_equal_pods,
);

async fn anti_affinity_keeps_replicas_apart(h: &Harness) {
    for name in ["n1", "n2", "n3"] {
        h.node(name, "8", json!({})).await;
    }
    let apart = json!({"spec": {"affinity": {"podAntiAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "web"}},
        "topologyKey": "kubernetes.io/hostname",
    }]}}}});
    let mut nodes = Vec::new();
    for i in 0..3 {
        let name = format!("web-{i}");
        h.pod(&name, "100m", apart.clone()).await;
        nodes.push(h.node_of(&name).await);
    }
    nodes.sort();
    assert_eq!(nodes, ["n1", "n2", "n3"]);
    h.pod("web-3", "100m", apart).await;
    let pod = h
        .wait_pod("web-3", "unschedulable", |p| {
            p["status"]["conditions"][0]["reason"] == "Unschedulable"
        })
        .await;
    let message = pod["status"]["conditions"][0]["message"]
        .as_str()
        .unwrap_or_default();
    // The replicas already placed repel it first (upstream checks existing pods' rules first).
    let expected =
        "0/3 nodes are available: 3 node(s) didn't satisfy existing pods anti-affinity rules.";
    assert!(message.starts_with(expected), "{message}");
}

async fn topology_spread_holds_max_skew(h: &Harness) {
    for (name, zone) in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b")] {
        let labels = json!({"metadata": {"labels": {"topology.kubernetes.io/zone": zone}}});
        h.node(name, "8", labels).await;
    }
    let spread = json!({"spec": {"topologySpreadConstraints": [{
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }]}});
    let mut per_zone: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..6 {
        let name = format!("web-{i}");
        h.pod(&name, "100m", spread.clone()).await;
        let node = h.node_of(&name).await;
        let zone = if node.starts_with('a') { "a" } else { "b" };
        *per_zone.entry(zone.to_string()).or_default() += 1;
        let (a, b) = (
            per_zone.get("a").copied().unwrap_or(0),
            per_zone.get("b").copied().unwrap_or(0),
        );
        assert!(
            a.abs_diff(b) <= 1,
            "skew above 1 after {name}: {per_zone:?}"
        );
    }
    assert_eq!(
        per_zone,
        BTreeMap::from([("a".to_string(), 3), ("b".to_string(), 3)])
    );
}

async fn least_allocated_evens_out_equal_pods(h: &Harness) {
    for name in ["n1", "n2", "n3"] {
        h.node(name, "4", json!({})).await;
    }
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..6 {
        let name = format!("p-{i}");
        h.pod(&name, "1", json!({})).await;
        *per_node.entry(h.node_of(&name).await).or_default() += 1;
    }
    assert_eq!(
        per_node.values().copied().collect::<Vec<_>>(),
        [2, 2, 2],
        "{per_node:?}"
    );
}
