//! The disruption controller over a real registry (embedded store and etcd): the status of
//! PodDisruptionBudgets over a Deployment's pods, with an integer minAvailable (counting pods)
//! and a percentage (of the Deployment's scale); awaited disruptions and their expiry; a
//! budget whose pods have no known controller fails safe. There is no kubelet: the test
//! writes the pods' Ready condition through the status subresource.

mod support;

use std::time::Duration;

use controllers::disruption::{DisruptionController, DisruptionControllerConfig};
use registry::options::WriteOptions;
use registry::{object, Subresource};
use serde_json::{json, Value};
use support::batch::{create, get, informers, set_status, wait_for};
use support::Harness;
use tokio_util::sync::CancellationToken;

const NS: &str = "budgets";

test_support::both_backends!(
    crate::Harness;
    budgets_follow_a_deployments_pods,
    unknown_controllers_fail_safe,
);

fn start(h: &Harness) -> CancellationToken {
    let stop = CancellationToken::new();
    let controller =
        DisruptionController::new(&informers(h), DisruptionControllerConfig::default())
            .expect("disruption controller");
    tokio::spawn(controller.run(stop.clone()));
    stop
}

fn owner(obj: &Value) -> Value {
    json!([{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], "controller": true}])
}

fn template() -> Value {
    json!({"metadata": {"labels": {"app": "web"}},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

/// A Deployment of `replicas`, its ReplicaSet and three pods it controls.
async fn deployment_with_pods(h: &Harness, replicas: i64) -> Vec<Value> {
    let deployment = create(
        &h.store("apps", "deployments"),
        NS,
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                        "template": template()}}),
    )
    .await;
    let rs = create(
        &h.store("apps", "replicasets"),
        NS,
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
               "metadata": {"name": "web-1", "ownerReferences": owner(&deployment)},
               "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                        "template": template()}}),
    )
    .await;
    let mut pods = Vec::new();
    for i in 0..3 {
        pods.push(
            create(
                &h.store("", "pods"),
                NS,
                json!({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": format!("web-{i}"), "labels": {"app": "web"},
                                    "ownerReferences": owner(&rs)},
                       "spec": template()["spec"]}),
            )
            .await,
        );
    }
    pods
}

async fn ready(h: &Harness, pod: &Value) {
    set_status(
        &h.store("", "pods"),
        pod,
        json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                                                   "lastTransitionTime": object::now()}]}),
    )
    .await;
}

async fn budget(h: &Harness, name: &str, spec: Value) {
    create(
        &h.store("policy", "poddisruptionbudgets"),
        NS,
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": name}, "spec": spec}),
    )
    .await;
}

/// (expectedPods, desiredHealthy, currentHealthy, disruptionsAllowed) of a budget.
fn figures(pdb: &Value) -> (i64, i64, i64, i64) {
    let n = |f: &str| pdb["status"][f].as_i64().unwrap_or(-1);
    (
        n("expectedPods"),
        n("desiredHealthy"),
        n("currentHealthy"),
        n("disruptionsAllowed"),
    )
}

fn condition(pdb: &Value) -> (String, String) {
    let conditions = pdb["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    conditions
        .iter()
        .find(|c| c["type"] == "DisruptionAllowed")
        .map(|c| {
            let s = |f: &str| c[f].as_str().unwrap_or_default().to_string();
            (s("status"), s("reason"))
        })
        .unwrap_or_default()
}

async fn wait_figures(h: &Harness, name: &str, want: (i64, i64, i64, i64)) -> Value {
    let store = h.store("policy", "poddisruptionbudgets");
    wait_for(&format!("{name} at {want:?}"), || async {
        get(&store, NS, name)
            .await
            .is_some_and(|p| figures(&p) == want)
    })
    .await;
    get(&store, NS, name).await.expect("budget")
}

async fn set_disrupted(h: &Harness, name: &str, disrupted: Value) {
    let store = h.store("policy", "poddisruptionbudgets");
    let mut pdb = get(&store, NS, name).await.expect("budget");
    pdb["status"]["disruptedPods"] = disrupted;
    store
        .update(
            Some(NS),
            name,
            pdb,
            Subresource::Status,
            &WriteOptions::default(),
        )
        .await
        .expect("record a disruption");
}

async fn budgets_follow_a_deployments_pods(h: &Harness) {
    h.namespace(NS).await;
    let stop = start(h);
    let pods = deployment_with_pods(h, 4).await;
    ready(h, &pods[0]).await;
    ready(h, &pods[1]).await;
    budget(
        h,
        "count",
        json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}),
    )
    .await;
    budget(
        h,
        "share",
        json!({"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}),
    )
    .await;

    // An integer counts the pods there are; a percentage is of the Deployment's 4 replicas.
    let count = wait_figures(h, "count", (3, 1, 2, 1)).await;
    assert_eq!(condition(&count), ("True".into(), "SufficientPods".into()));
    assert_eq!(
        count["status"]["observedGeneration"],
        count["metadata"]["generation"]
    );
    let share = wait_figures(h, "share", (4, 2, 2, 0)).await;
    assert_eq!(
        condition(&share),
        ("False".into(), "InsufficientPods".into())
    );

    ready(h, &pods[2]).await;
    wait_figures(h, "count", (3, 1, 3, 2)).await;
    let share = wait_figures(h, "share", (4, 2, 3, 1)).await;
    assert_eq!(condition(&share), ("True".into(), "SufficientPods".into()));

    // Settled, nothing more is written.
    let before = object::resource_version(&share).to_string();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let store = h.store("policy", "poddisruptionbudgets");
    let after = get(&store, NS, "share").await.expect("budget");
    assert_eq!(object::resource_version(&after), before);

    // A pod an eviction recorded is not healthy while its deletion is awaited...
    set_disrupted(h, "count", json!({"web-0": object::now()})).await;
    let count = wait_figures(h, "count", (3, 1, 2, 1)).await;
    assert!(count["status"]["disruptedPods"]["web-0"].is_string());
    // ... and counts again once that wait is over (2 minutes, as upstream).
    let long_ago = object::timestamp(chrono::Utc::now() - chrono::Duration::seconds(300));
    set_disrupted(h, "count", json!({"web-0": long_ago})).await;
    let count = wait_figures(h, "count", (3, 1, 3, 2)).await;
    assert!(count["status"]["disruptedPods"].is_null());

    // A change of the spec moves the generation on; the status follows it.
    let mut spec_change = get(&store, NS, "count").await.expect("budget");
    spec_change["spec"]["minAvailable"] = json!(3);
    store
        .update(
            Some(NS),
            "count",
            spec_change,
            Subresource::Main,
            &WriteOptions::default(),
        )
        .await
        .expect("spec change");
    let count = wait_figures(h, "count", (3, 3, 3, 0)).await;
    assert_eq!(count["status"]["observedGeneration"], 2);
    assert_eq!(
        condition(&count),
        ("False".into(), "InsufficientPods".into())
    );
    stop.cancel();
}

async fn unknown_controllers_fail_safe(h: &Harness) {
    h.namespace(NS).await;
    let stop = start(h);
    let pod = create(
        &h.store("", "pods"),
        NS,
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "odd", "labels": {"app": "odd"},
                            "ownerReferences": [{"apiVersion": "example.com/v1", "kind": "Thing",
                                                 "name": "t", "uid": "u-1", "controller": true}]},
               "spec": template()["spec"]}),
    )
    .await;
    ready(h, &pod).await;
    budget(
        h,
        "odd",
        json!({"maxUnavailable": "50%", "selector": {"matchLabels": {"app": "odd"}}}),
    )
    .await;
    let store = h.store("policy", "poddisruptionbudgets");
    wait_for("SyncFailed", || async {
        get(&store, NS, "odd")
            .await
            .is_some_and(|p| condition(&p) == ("False".into(), "SyncFailed".into()))
    })
    .await;
    let odd = get(&store, NS, "odd").await.expect("budget");
    assert_eq!(odd["status"]["disruptionsAllowed"], 0);
    let message = &odd["status"]["conditions"][0]["message"];
    assert_eq!(message, "found no controllers for pod \"odd\"");

    // An integer minAvailable needs no controller: the pods are counted.
    budget(
        h,
        "plain",
        json!({"minAvailable": 0, "selector": {"matchLabels": {"app": "odd"}}}),
    )
    .await;
    wait_figures(h, "plain", (1, 0, 1, 1)).await;
    stop.cancel();
}
