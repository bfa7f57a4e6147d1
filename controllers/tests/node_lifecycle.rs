//! The node lifecycle and taint eviction controllers over a real registry (embedded store and
//! etcd): a node whose kubelet goes silent turns Unknown and gets the unreachable taints, one
//! that comes back loses them, and pods that do not tolerate a NoExecute taint are evicted at
//! once or after their tolerationSeconds.

mod support;

use std::time::Duration;

use chrono::Utc;
use client::clock::ManualClock;
use controllers::node_lifecycle::{
    HealthConfig, NodeLifecycleConfig, NodeLifecycleController, TaintEvictionController,
    NODE_NOT_FOUND,
};
use registry::object;
use registry::options::WriteOptions;
use serde_json::{json, Value};
use support::batch::{create, event_reasons, get, informers, wait_for};
use support::Harness;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

async fn node(h: &Harness, name: &str, heartbeat: &str, taints: Value) -> Value {
    let node = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name}, "spec": {"taints": taints}});
    let nodes = h.store("", "nodes");
    let created = nodes
        .create(None, node, &WriteOptions::default())
        .await
        .expect("create node");
    let mut ready = created.clone();
    ready["status"]["conditions"] = json!([{"type": "Ready", "status": "True",
        "reason": "KubeletReady", "lastHeartbeatTime": heartbeat, "lastTransitionTime": heartbeat}]);
    nodes
        .update(
            None,
            name,
            ready,
            registry::Subresource::Status,
            &WriteOptions::default(),
        )
        .await
        .expect("node status")
        .0
}

async fn get_node(h: &Harness, name: &str) -> Value {
    h.store("", "nodes")
        .get(None, name, &Default::default())
        .await
        .expect("node")
}

async fn update_node(h: &Harness, node: Value) {
    let name = object::name(&node).to_string();
    h.store("", "nodes")
        .update(
            None,
            &name,
            node,
            registry::Subresource::Main,
            &WriteOptions::default(),
        )
        .await
        .expect("update the node");
}

fn taint_keys(node: &Value) -> Vec<String> {
    node["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            format!(
                "{}:{}",
                t["key"].as_str().unwrap_or(""),
                t["effect"].as_str().unwrap_or("")
            )
        })
        .collect()
}

async fn a_silent_node_turns_unknown_and_is_tainted(h: &Harness) {
    let start = Utc::now();
    let clock = ManualClock::new(start);
    let config = NodeLifecycleConfig {
        health: HealthConfig::default(),
        monitor_period: Duration::from_millis(100),
        workers: 1,
        clock: clock.clone(),
    };
    let controller = NodeLifecycleController::new(&informers(h), config).expect("controller");
    let stop = CancellationToken::new();
    tokio::spawn(controller.run(stop.clone()));
    node(
        h,
        "quiet",
        &object::timestamp(start),
        json!([{"key": "team", "value": "a", "effect": "NoSchedule"}]),
    )
    .await;
    // Within the grace period nothing changes.
    clock.advance(chrono::Duration::seconds(30));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(taint_keys(&get_node(h, "quiet").await), ["team:NoSchedule"]);

    clock.advance(chrono::Duration::seconds(15));
    wait_for("the node to turn Unknown and be tainted", || async {
        let n = get_node(h, "quiet").await;
        let ready = n["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Ready").cloned())
            .unwrap_or_default();
        ready["status"] == "Unknown"
            && ready["reason"] == "NodeStatusUnknown"
            && taint_keys(&n)
                == [
                    "team:NoSchedule",
                    "node.kubernetes.io/unreachable:NoSchedule",
                    "node.kubernetes.io/unreachable:NoExecute",
                ]
    })
    .await;
    let n = get_node(h, "quiet").await;
    let conditions = n["status"]["conditions"].as_array().map(Vec::len);
    assert_eq!(
        conditions,
        Some(4),
        "every kubelet condition is Unknown: {n}"
    );
    wait_for("the NodeNotReady event", || async {
        event_reasons(h, NS, "quiet")
            .await
            .contains(&"NodeNotReady".to_string())
    })
    .await;

    // The kubelet posts again: the taints go.
    let mut back = n.clone();
    back["status"]["conditions"] = json!([{"type": "Ready", "status": "True", "reason": "KubeletReady",
        "lastHeartbeatTime": object::timestamp(clock_now(&clock)),
        "lastTransitionTime": object::timestamp(clock_now(&clock))}]);
    h.store("", "nodes")
        .update(
            None,
            "quiet",
            back,
            registry::Subresource::Status,
            &WriteOptions::default(),
        )
        .await
        .expect("status");
    wait_for("the unreachable taints to go", || async {
        taint_keys(&get_node(h, "quiet").await) == ["team:NoSchedule"]
    })
    .await;
    stop.cancel();
}

fn clock_now(clock: &ManualClock) -> chrono::DateTime<Utc> {
    use client::clock::Clock;
    clock.now()
}

fn pod(name: &str, node: &str, tolerations: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"nodeName": node, "tolerations": tolerations,
                    "containers": [{"name": "c", "image": "nginx"}]}})
}

async fn pods_are_evicted_from_no_execute_taints(h: &Harness) {
    let controller = TaintEvictionController::new(&informers(h)).expect("controller");
    let stop = CancellationToken::new();
    tokio::spawn(controller.run(stop.clone()));
    let now = object::timestamp(Utc::now());
    node(
        h,
        "broken",
        &now,
        json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": now}]),
    )
    .await;
    node(h, "fine", &now, json!([])).await;
    let maintenance =
        json!([{"key": "example.com/maintenance", "effect": "NoExecute", "timeAdded": now}]);
    node(h, "drained", &now, maintenance).await;
    let pods = h.store("", "pods");
    let for_two_seconds = json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                  "effect": "NoExecute", "tolerationSeconds": 2}]);
    // Admission gives every pod 300 s for unreachable; nothing tolerates the maintenance taint.
    create(&pods, NS, pod("doomed", "drained", json!([]))).await;
    create(&pods, NS, pod("patient", "broken", for_two_seconds)).await;
    create(
        &pods,
        NS,
        pod("forever", "broken", json!([{"operator": "Exists"}])),
    )
    .await;
    create(&pods, NS, pod("elsewhere", "fine", json!([]))).await;

    let terminating =
        |p: Option<Value>| p.is_some_and(|p| object::deletion_timestamp(&p).is_some());
    wait_for("the untolerating pod to be evicted", || async {
        terminating(get(&pods, NS, "doomed").await)
    })
    .await;
    let doomed = get(&pods, NS, "doomed").await.unwrap_or_default();
    let disruption = doomed["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "DisruptionTarget").cloned())
        .unwrap_or_default();
    assert_eq!(disruption["reason"], "DeletionByTaintManager", "{doomed}");
    assert!(
        !terminating(get(&pods, NS, "patient").await),
        "evicted before its tolerationSeconds"
    );
    wait_for("the pod tolerating 2 s to be evicted", || async {
        terminating(get(&pods, NS, "patient").await)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!terminating(get(&pods, NS, "forever").await));
    assert!(!terminating(get(&pods, NS, "elsewhere").await));
    assert!(event_reasons(h, NS, "doomed")
        .await
        .contains(&"TaintManagerEviction".to_string()));
    stop.cancel();
}

/// A NoExecute taint put on a node later reaches the pods already on it (found through the
/// pod index by node), and only those; a node update that leaves the NoExecute taints as they
/// were evicts nothing.
async fn a_taint_added_later_evicts_the_pods_already_on_the_node(h: &Harness) {
    let controller = TaintEvictionController::new(&informers(h)).expect("controller");
    let stop = CancellationToken::new();
    tokio::spawn(controller.run(stop.clone()));
    let now = object::timestamp(Utc::now());
    node(h, "busy", &now, json!([])).await;
    node(h, "quiet", &now, json!([])).await;
    let pods = h.store("", "pods");
    for name in ["a", "b", "c"] {
        create(&pods, NS, pod(name, "busy", json!([]))).await;
    }
    create(&pods, NS, pod("bystander", "quiet", json!([]))).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    let mut busy = get_node(h, "busy").await;
    busy["metadata"]["labels"] = json!({"touched": "yes"});
    busy["spec"]["taints"] = json!([{"key": "example.com/soft", "effect": "NoSchedule"}]);
    update_node(h, busy).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let terminating =
        |p: Option<Value>| p.is_some_and(|p| object::deletion_timestamp(&p).is_some());
    assert!(
        !terminating(get(&pods, NS, "a").await),
        "evicted without a NoExecute taint"
    );

    let mut busy = get_node(h, "busy").await;
    busy["spec"]["taints"] = json!([{"key": "example.com/maintenance", "effect": "NoExecute",
                                     "timeAdded": object::timestamp(Utc::now())}]);
    update_node(h, busy).await;
    for name in ["a", "b", "c"] {
        wait_for("the pods on the tainted node to be evicted", || async {
            terminating(get(&pods, NS, name).await)
        })
        .await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!terminating(get(&pods, NS, "bystander").await));
    stop.cancel();
}

async fn a_pod_on_a_missing_node_waits_with_an_event(h: &Harness) {
    let controller = TaintEvictionController::new(&informers(h)).expect("controller");
    let stop = CancellationToken::new();
    tokio::spawn(controller.run(stop.clone()));
    let pods = h.store("", "pods");
    create(&pods, NS, pod("stray", "ghost", json!([]))).await;
    wait_for("the NodeNotFound event", || async {
        event_reasons(h, NS, "stray")
            .await
            .contains(&NODE_NOT_FOUND.to_string())
    })
    .await;
    let stray = get(&pods, NS, "stray").await.unwrap_or_default();
    assert!(object::deletion_timestamp(&stray).is_none(), "{stray}");
    assert_eq!(stray["spec"]["nodeName"], "ghost");
    stop.cancel();
}

test_support::both_backends!(
    crate::support::Harness, worker_threads = 2;
    a_silent_node_turns_unknown_and_is_tainted,
    pods_are_evicted_from_no_execute_taints,
    a_taint_added_later_evicts_the_pods_already_on_the_node,
    a_pod_on_a_missing_node_waits_with_an_event,
);
