//! API Priority and Fairness' configuration as the server keeps it (upstream's
//! priority-and-fairness-config-producer) on both backends: created at start, mandatory
//! objects put back, suggested ones kept current only while their annotation (or an
//! untouched generation) lets the server, and objects it no longer suggests deleted unless
//! someone took them over.

mod support;

use registry::{Store, Subresource};
use serde_json::{json, Value};
use support::{delete, list, write, Harness};

test_support::both_backends!(crate::Harness;
    the_configuration_exists_from_the_start,
    deleted_objects_come_back,
    suggested_specs_follow_their_annotation,
    objects_no_longer_suggested_go_unless_taken_over,
);

const GROUP: &str = "flowcontrol.apiserver.k8s.io";

fn levels(h: &Harness) -> std::sync::Arc<Store> {
    h.store(GROUP, "prioritylevelconfigurations")
}

fn schemas(h: &Harness) -> std::sync::Arc<Store> {
    h.store(GROUP, "flowschemas")
}

async fn names(store: &Store) -> Vec<String> {
    let listed = store.list(None, &list()).await.expect("list");
    let mut names: Vec<String> = listed["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            o["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    names.sort();
    names
}

async fn get(store: &Store, name: &str) -> Value {
    store.get(None, name, &list()).await.expect("get")
}

async fn ensure(h: &Harness) {
    h.registry.ensure_flow_control().await.expect("ensure");
}

async fn the_configuration_exists_from_the_start(h: &Harness) {
    assert_eq!(
        names(&levels(h)).await,
        [
            "catch-all",
            "exempt",
            "global-default",
            "leader-election",
            "node-high",
            "system",
            "workload-high",
            "workload-low"
        ]
    );
    assert_eq!(
        names(&schemas(h)).await,
        [
            "catch-all",
            "exempt",
            "global-default",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "probes",
            "service-accounts",
            "system-leader-election",
            "system-node-high",
            "system-nodes"
        ]
    );
    let exempt = get(&levels(h), "exempt").await;
    assert_eq!(
        exempt["spec"],
        json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}})
    );
    assert_eq!(
        exempt["metadata"]["annotations"],
        json!({"apf.kubernetes.io/autoupdate-spec": "true"})
    );
    let managers = &get(&schemas(h), "probes").await["metadata"]["managedFields"];
    assert_eq!(
        managers[0]["manager"],
        "api-priority-and-fairness-config-producer-v1"
    );
    // A second pass changes nothing.
    let before = get(&schemas(h), "global-default").await;
    ensure(h).await;
    assert_eq!(get(&schemas(h), "global-default").await, before);
}

async fn deleted_objects_come_back(h: &Harness) {
    for (store, name) in [
        (schemas(h), "catch-all"),
        (levels(h), "catch-all"),
        (schemas(h), "global-default"),
    ] {
        store.delete(None, name, delete()).await.expect("delete");
    }
    ensure(h).await;
    assert_eq!(
        get(&levels(h), "catch-all").await["spec"]["limited"]["nominalConcurrencyShares"],
        5
    );
    assert_eq!(
        get(&schemas(h), "catch-all").await["spec"]["matchingPrecedence"],
        10000
    );
    assert_eq!(
        get(&schemas(h), "global-default").await["spec"]["matchingPrecedence"],
        9900
    );
}

async fn update(store: &Store, mut obj: Value, change: impl FnOnce(&mut Value)) -> Value {
    change(&mut obj);
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    store
        .update(None, &name, obj, Subresource::Main, &write())
        .await
        .expect("update")
        .0
}

async fn suggested_specs_follow_their_annotation(h: &Harness) {
    let store = levels(h);
    // Annotated true: the server's spec comes back.
    let changed = update(&store, get(&store, "workload-low").await, |o| {
        o["spec"]["limited"]["nominalConcurrencyShares"] = json!(7);
    })
    .await;
    assert_eq!(changed["spec"]["limited"]["nominalConcurrencyShares"], 7);
    ensure(h).await;
    assert_eq!(
        get(&store, "workload-low").await["spec"]["limited"]["nominalConcurrencyShares"],
        100
    );
    // Annotated false: the admin's spec stays.
    update(&store, get(&store, "workload-high").await, |o| {
        o["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"] = json!("false");
        o["spec"]["limited"]["nominalConcurrencyShares"] = json!(9);
    })
    .await;
    ensure(h).await;
    let kept = get(&store, "workload-high").await;
    assert_eq!(kept["spec"]["limited"]["nominalConcurrencyShares"], 9);
    // No annotation and a changed spec (generation past 1): taken over, marked false.
    update(&store, get(&store, "system").await, |o| {
        o["metadata"]["annotations"] = json!({});
        o["spec"]["limited"]["lendablePercent"] = json!(10);
    })
    .await;
    ensure(h).await;
    let system = get(&store, "system").await;
    assert_eq!(system["spec"]["limited"]["lendablePercent"], 10);
    assert_eq!(
        system["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
        "false"
    );
    // The exempt level's own tunables are the admin's even though it is mandatory.
    update(&store, get(&store, "exempt").await, |o| {
        o["spec"]["exempt"]["nominalConcurrencyShares"] = json!(12);
    })
    .await;
    ensure(h).await;
    assert_eq!(
        get(&store, "exempt").await["spec"]["exempt"]["nominalConcurrencyShares"],
        12
    );
}

fn custom_level(name: &str, annotations: Value) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}},
    })
}

async fn objects_no_longer_suggested_go_unless_taken_over(h: &Harness) {
    let store = levels(h);
    let auto = json!({"apf.kubernetes.io/autoupdate-spec": "true"});
    for (name, annotations) in [
        ("retired", auto),
        ("mine", json!({})),
        (
            "kept",
            json!({"apf.kubernetes.io/autoupdate-spec": "false"}),
        ),
    ] {
        store
            .create(None, custom_level(name, annotations), &write())
            .await
            .expect("create");
    }
    ensure(h).await;
    let left = names(&store).await;
    assert!(!left.contains(&"retired".to_string()), "{left:?}");
    assert!(left.contains(&"mine".to_string()) && left.contains(&"kept".to_string()));
}
