//! The DaemonSet controller over a real registry (embedded store and etcd). There are no
//! kubelets or scheduler: tests create Node objects themselves and a helper task stands in
//! for the kubelets, marking daemon pods Running and Ready.

mod support;

use std::sync::Arc;
use std::time::Duration;

use controllers::daemonset::{DaemonSetController, DaemonSetControllerConfig};
use registry::options::{DeleteOptions, WriteOptions};
use registry::patch::PatchType;
use registry::{object, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use support::batch::{create, event_reasons, get, informers, list, set_phase, wait_for};
use support::Harness;
use tokio_util::sync::CancellationToken;

const NS: &str = "daemons";
const HASH: &str = "controller-revision-hash";

fn start(h: &Harness) -> CancellationToken {
    let config = DaemonSetControllerConfig {
        failed_pod_backoff: (Duration::from_millis(50), Duration::from_secs(1)),
        ..Default::default()
    };
    let controller = DaemonSetController::new(&informers(h), config).expect("controller");
    let stop = CancellationToken::new();
    tokio::spawn(controller.run(stop.clone()));
    stop
}

fn pods(h: &Harness) -> Arc<Store> {
    h.store("", "pods")
}

fn daemon_sets(h: &Harness) -> Arc<Store> {
    h.store("apps", "daemonsets")
}

async fn node(h: &Harness, name: &str, labels: Value, taints: Value) {
    let node = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}});
    h.store("", "nodes")
        .create(None, node, &WriteOptions::default())
        .await
        .expect("create node");
}

async fn patch(store: &Store, ns: Option<&str>, name: &str, patch: Value) {
    store
        .patch(
            ns,
            name,
            PatchType::Merge,
            patch.to_string().as_bytes(),
            Subresource::Main,
            &WriteOptions::default(),
        )
        .await
        .expect("patch");
}

fn daemon_set(name: &str, spec: Value) -> Value {
    let mut ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "agent:1"}]}}}});
    if let (Some(s), Some(extra)) = (ds["spec"].as_object_mut(), spec.as_object()) {
        s.extend(extra.clone());
    }
    ds
}

/// The live pods of the DaemonSet `ds`, with the node each is pinned to.
async fn live_pods(h: &Harness, ds: &str) -> Vec<(String, Value)> {
    list(&pods(h), NS)
        .await
        .into_iter()
        .filter(|p| p["metadata"]["labels"]["app"] == ds)
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| {
            let node = p["spec"]["affinity"]["nodeAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
                ["matchFields"][0]["values"][0]
                .as_str()
                .unwrap_or_default()
                .to_string();
            (node, p)
        })
        .collect()
}

async fn nodes_of(h: &Harness, ds: &str) -> Vec<String> {
    let mut nodes: Vec<String> = live_pods(h, ds).await.into_iter().map(|(n, _)| n).collect();
    nodes.sort();
    nodes
}

/// Stands in for the kubelets: every pending pod becomes Running and Ready.
fn kubelets(h: &Harness, stop: &CancellationToken) {
    let (pods, stop) = (pods(h), stop.clone());
    tokio::spawn(async move {
        while !stop.is_cancelled() {
            for pod in list(&pods, NS).await {
                if pod["status"]["phase"] == "Pending" || pod["status"]["phase"].is_null() {
                    mark_ready(&pods, &pod).await;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
}

async fn mark_ready(pods: &Store, pod: &Value) {
    let mut next = pod.clone();
    next["status"] = json!({"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": object::now()}]});
    match pods
        .update(
            Some(NS),
            object::name(pod),
            next,
            Subresource::Status,
            &WriteOptions::default(),
        )
        .await
    {
        Ok(_) | Err(RegistryError::NotFound { .. } | RegistryError::Conflict { .. }) => {}
        Err(e) => panic!("mark ready: {e}"),
    }
}

async fn status(h: &Harness, name: &str) -> Value {
    get(&daemon_sets(h), NS, name).await.expect("daemon set")["status"].clone()
}

async fn one_pod_per_eligible_node(h: &Harness) {
    h.namespace(NS).await;
    node(h, "n1", json!({"role": "edge"}), json!(null)).await;
    node(
        h,
        "n2",
        json!({"role": "edge"}),
        json!([{"key": "gpu", "effect": "NoSchedule"}]),
    )
    .await;
    node(h, "n3", json!({}), json!(null)).await;
    // Cordoned: the default tolerations let daemons run there anyway.
    let cordoned = json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]);
    node(h, "n4", json!({"role": "edge"}), cordoned).await;
    let stop = start(h);
    let spec = json!({"template": {"metadata": {"labels": {"app": "agent"}}, "spec": {
        "nodeSelector": {"role": "edge"}, "containers": [{"name": "c", "image": "agent:1"}]}}});
    create(&daemon_sets(h), NS, daemon_set("agent", spec)).await;
    wait_for("pods on n1 and n4", || async {
        nodes_of(h, "agent").await == ["n1", "n4"]
    })
    .await;
    let pods_now = live_pods(h, "agent").await;
    let pod = &pods_now[0].1;
    assert!(pod["metadata"]["labels"][HASH].is_string());
    assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
    let tolerations = pod["spec"]["tolerations"].as_array().map(Vec::len);
    assert_eq!(tolerations, Some(6));
    wait_for("status counts", || async {
        let s = status(h, "agent").await;
        s["desiredNumberScheduled"] == 2
            && s["currentNumberScheduled"] == 2
            && s["numberMisscheduled"] == 0
            && s["observedGeneration"] == 1
    })
    .await;

    // Nodes join, are relabelled and leave.
    node(h, "n5", json!({"role": "edge"}), json!(null)).await;
    wait_for("a pod on n5", || async {
        nodes_of(h, "agent").await == ["n1", "n4", "n5"]
    })
    .await;
    patch(
        &h.store("", "nodes"),
        None,
        "n1",
        json!({"metadata": {"labels": {"role": null}}}),
    )
    .await;
    wait_for("n1's pod gone", || async {
        nodes_of(h, "agent").await == ["n4", "n5"]
    })
    .await;
    h.store("", "nodes")
        .delete(None, "n4", DeleteOptions::default())
        .await
        .expect("delete node");
    wait_for("n4's pod gone", || async {
        nodes_of(h, "agent").await == ["n5"]
    })
    .await;
    // A NoExecute taint evicts; tolerating it brings the pod back.
    let evict = json!({"spec": {"taints": [{"key": "maint", "effect": "NoExecute"}]}});
    patch(&h.store("", "nodes"), None, "n5", evict).await;
    wait_for("n5's pod evicted", || async {
        nodes_of(h, "agent").await.is_empty()
    })
    .await;
    let tolerate = json!({"spec": {"template": {"spec": {"tolerations": [
        {"key": "maint", "operator": "Exists"}]}}}});
    patch(&daemon_sets(h), Some(NS), "agent", tolerate).await;
    wait_for("n5 runs it again", || async {
        nodes_of(h, "agent").await == ["n5"]
    })
    .await;
    let reasons = event_reasons(h, NS, "agent").await;
    assert!(
        reasons.iter().any(|r| r == "SuccessfulCreate"),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r == "SuccessfulDelete"),
        "{reasons:?}"
    );
    stop.cancel();
}

async fn three_nodes(h: &Harness) {
    h.namespace(NS).await;
    for n in ["n1", "n2", "n3"] {
        node(h, n, json!({}), json!(null)).await;
    }
}

async fn all_ready(h: &Harness, name: &str, nodes: i64) -> bool {
    let s = status(h, name).await;
    s["numberReady"] == nodes
        && s["updatedNumberScheduled"] == nodes
        && s["numberAvailable"] == nodes
        && s["desiredNumberScheduled"] == nodes
        && s["observedGeneration"]
            == get(&daemon_sets(h), NS, name)
                .await
                .map(|d| object::generation(&d))
                .unwrap_or(0)
}

async fn set_image(h: &Harness, name: &str, image: &str) {
    let change =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}});
    patch(&daemon_sets(h), Some(NS), name, change).await;
}

/// Rolls to `image`, sampling pods until done: (most nodes short of a ready pod at once,
/// most pods on one node at once).
async fn roll(h: &Harness, name: &str, image: &str) -> (usize, usize) {
    set_image(h, name, image).await;
    let (mut worst_missing, mut most_on_node) = (0, 0);
    let deadline = tokio::time::Instant::now() + support::batch::WAIT;
    loop {
        let pods = live_pods(h, name).await;
        let mut per_node = std::collections::HashMap::<String, (usize, bool)>::new();
        for (n, p) in &pods {
            let e = per_node.entry(n.clone()).or_default();
            e.0 += 1;
            e.1 |= p["status"]["phase"] == "Running";
        }
        let ready_nodes = per_node.values().filter(|(_, ready)| *ready).count();
        worst_missing = worst_missing.max(3usize.saturating_sub(ready_nodes));
        most_on_node = most_on_node.max(per_node.values().map(|(c, _)| *c).max().unwrap_or(0));
        let done = pods.len() == 3
            && pods
                .iter()
                .all(|(_, p)| p["spec"]["containers"][0]["image"] == image)
            && all_ready(h, name, 3).await;
        if done {
            return (worst_missing, most_on_node);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "rollout to {image} timed out"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn rolling_update_respects_max_unavailable(h: &Harness) {
    three_nodes(h).await;
    let stop = start(h);
    kubelets(h, &stop);
    let strategy = json!({"updateStrategy": {"type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1}}});
    create(&daemon_sets(h), NS, daemon_set("roll", strategy)).await;
    wait_for("three ready pods", || all_ready(h, "roll", 3)).await;
    let (missing, most) = roll(h, "roll", "agent:2").await;
    assert!(
        missing <= 1,
        "{missing} nodes were without a ready pod at once"
    );
    assert_eq!(most, 1);
    // Two revisions, the current one numbered highest and naming the pods' hash.
    let revisions = list(&h.store("apps", "controllerrevisions"), NS).await;
    assert_eq!(revisions.len(), 2);
    let newest = revisions
        .iter()
        .max_by_key(|r| r["revision"].as_i64())
        .expect("revision");
    assert_eq!(newest["revision"], 2);
    let pods_now = live_pods(h, "roll").await;
    assert_eq!(
        pods_now[0].1["metadata"]["labels"][HASH],
        newest["metadata"]["labels"][HASH]
    );
    // Back to the first template: its revision is renumbered 3, nothing new is made.
    roll(h, "roll", "agent:1").await;
    let revisions = list(&h.store("apps", "controllerrevisions"), NS).await;
    let mut numbers: Vec<i64> = revisions
        .iter()
        .filter_map(|r| r["revision"].as_i64())
        .collect();
    numbers.sort();
    assert_eq!(numbers, [2, 3]);
    stop.cancel();
}

async fn rolling_update_with_max_surge(h: &Harness) {
    three_nodes(h).await;
    let stop = start(h);
    kubelets(h, &stop);
    let strategy = json!({"updateStrategy": {"type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "34%"}}});
    create(&daemon_sets(h), NS, daemon_set("surge", strategy)).await;
    wait_for("three ready pods", || all_ready(h, "surge", 3)).await;
    let (missing, most) = roll(h, "surge", "agent:2").await;
    assert_eq!(missing, 0, "a node was left without a ready pod");
    assert_eq!(most, 2, "new pods start beside the old ones");
    stop.cancel();
}

async fn on_delete_replaces_only_deleted_pods(h: &Harness) {
    three_nodes(h).await;
    let stop = start(h);
    kubelets(h, &stop);
    create(
        &daemon_sets(h),
        NS,
        daemon_set("od", json!({"updateStrategy": {"type": "OnDelete"}})),
    )
    .await;
    wait_for("three ready pods", || all_ready(h, "od", 3)).await;
    set_image(h, "od", "agent:2").await;
    wait_for("status sees the new generation", || async {
        let s = status(h, "od").await;
        s["observedGeneration"] == 2 && s["updatedNumberScheduled"].is_null()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = live_pods(h, "od").await;
    assert!(before
        .iter()
        .all(|(_, p)| p["spec"]["containers"][0]["image"] == "agent:1"));
    pods(h)
        .delete(
            Some(NS),
            object::name(&before[0].1),
            DeleteOptions::default(),
        )
        .await
        .expect("delete pod");
    wait_for("one updated pod", || async {
        status(h, "od").await["updatedNumberScheduled"] == 1 && nodes_of(h, "od").await.len() == 3
    })
    .await;
    stop.cancel();
}

async fn failed_pods_are_replaced(h: &Harness) {
    h.namespace(NS).await;
    node(h, "n1", json!({}), json!(null)).await;
    let stop = start(h);
    create(&daemon_sets(h), NS, daemon_set("fail", json!({}))).await;
    wait_for("a pod", || async { nodes_of(h, "fail").await.len() == 1 }).await;
    let first = live_pods(h, "fail").await.remove(0).1;
    set_phase(&pods(h), &first, "Failed").await;
    wait_for("a replacement", || async {
        let now = live_pods(h, "fail").await;
        now.len() == 1 && object::name(&now[0].1) != object::name(&first)
    })
    .await;
    let reasons = event_reasons(h, NS, "fail").await;
    assert!(
        reasons.iter().any(|r| r == "FailedDaemonPod"),
        "{reasons:?}"
    );
    stop.cancel();
}

test_support::both_backends!(
    crate::support::Harness, worker_threads = 2;
    one_pod_per_eligible_node,
    rolling_update_respects_max_unavailable,
    rolling_update_with_max_surge,
    on_delete_replaces_only_deleted_pods,
    failed_pods_are_replaced,
);
