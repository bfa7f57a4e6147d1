//! The ReplicaSet controller (and its ReplicationController variant) over a real registry on
//! both backends: scaling up and down by rank, adoption and release, replacement of deleted
//! pods, status from the pods' readiness, and expectations holding creations to exactly the
//! replicas asked for while the informer lags.

mod support;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use client::informer::{InformerConfig, InformerFactory};
use controllers::replicaset::{ReplicaSetController, ReplicaSetControllerConfig, ReplicaSetKind};
use registry::options::{DeleteOptions, ListOptions, WriteOptions};
use registry::patch::PatchType;
use registry::{object, Store, Subresource};
use serde_json::{json, Value};
use support::Harness;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const NS: &str = "rs";
const WAIT: Duration = Duration::from_secs(15);

struct Running {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .expect("controller stops in time")
            .expect("controller does not panic");
    }
}

async fn start(h: &Harness, kind: ReplicaSetKind) -> Running {
    h.namespace(NS).await;
    let informers = InformerFactory::new(h.registry.clone(), InformerConfig::default());
    let controller =
        ReplicaSetController::new(&informers, ReplicaSetControllerConfig::for_kind(kind))
            .expect("controller");
    let stop = CancellationToken::new();
    let task = tokio::spawn(controller.run(stop.clone()));
    Running { stop, task }
}

async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + WAIT;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn sets(h: &Harness) -> Arc<Store> {
    h.store("apps", "replicasets")
}

fn pods_store(h: &Harness) -> Arc<Store> {
    h.store("", "pods")
}

fn containers() -> Value {
    json!({"containers": [{"name": "c", "image": "busybox"}]})
}

fn replica_set(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name, "tier": "web"}}, "spec": containers()},
        },
    })
}

async fn create(store: &Store, obj: Value) -> Value {
    store
        .create(Some(NS), obj, &WriteOptions::default())
        .await
        .expect("create")
}

async fn patch(store: &Store, name: &str, sub: Subresource, patch: Value) -> Value {
    let body = serde_json::to_vec(&patch).expect("json");
    store
        .patch(
            Some(NS),
            name,
            PatchType::Merge,
            &body,
            sub,
            &WriteOptions::default(),
        )
        .await
        .expect("patch")
}

async fn scale(store: &Store, name: &str, replicas: i64) {
    patch(
        store,
        name,
        Subresource::Main,
        json!({"spec": {"replicas": replicas}}),
    )
    .await;
}

/// The active pods of the namespace, by name.
async fn pods(h: &Harness) -> Vec<Value> {
    let list = pods_store(h)
        .list(Some(NS), &ListOptions::default())
        .await
        .expect("list pods");
    let mut items: Vec<Value> = list["items"].as_array().cloned().unwrap_or_default();
    items.retain(|p| object::deletion_timestamp(p).is_none());
    items.sort_by(|a, b| object::name(a).cmp(object::name(b)));
    items
}

async fn pod_count(h: &Harness) -> usize {
    pods(h).await.len()
}

async fn get(store: &Store, name: &str) -> Value {
    store
        .get(Some(NS), name, &ListOptions::default())
        .await
        .expect("get")
}

/// Stands in for the kubelet: the pod runs on `node`, ready since `ready_since` if given.
async fn set_pod_state(h: &Harness, pod: &str, phase: &str, ready_since: Option<&str>) {
    let mut status = json!({"phase": phase});
    if let Some(since) = ready_since {
        status["conditions"] =
            json!([{"type": "Ready", "status": "True", "lastTransitionTime": since}]);
    }
    patch(
        &pods_store(h),
        pod,
        Subresource::Status,
        json!({ "status": status }),
    )
    .await;
}

fn controller_of(pod: &Value) -> Option<&Value> {
    pod["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true)
}

async fn scale_up_creates_exactly_the_replicas_with_controller_refs(h: &Harness) {
    let running = start(h, ReplicaSetKind::ReplicaSet).await;
    let rs = create(&sets(h), replica_set("web", 0)).await;
    until("status observed", || async {
        get(&sets(h), "web").await["status"]["observedGeneration"] == 1
    })
    .await;
    assert_eq!(pod_count(h).await, 0);
    scale(&sets(h), "web", 4).await;
    until("4 pods", || async { pod_count(h).await == 4 }).await;
    for pod in pods(h).await {
        let reference = controller_of(&pod).expect("controller reference");
        assert_eq!(reference["uid"], rs["metadata"]["uid"]);
        assert_eq!(reference["kind"], "ReplicaSet");
        assert_eq!(reference["apiVersion"], "apps/v1");
        assert_eq!(reference["blockOwnerDeletion"], true);
        assert_eq!(pod["metadata"]["generateName"], "web-");
        assert!(object::name(&pod).starts_with("web-"));
        assert_eq!(
            pod["metadata"]["labels"],
            json!({"app": "web", "tier": "web"})
        );
    }
    until("status counts the pods", || async {
        let status = &get(&sets(h), "web").await["status"];
        status["replicas"] == 4
            && status["fullyLabeledReplicas"] == 4
            && status["observedGeneration"] == 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.pod_creations(), 4, "no pod created beyond the replicas");
    running.stop().await;
}

async fn scale_down_deletes_the_lowest_ranked_first(h: &Harness) {
    let running = start(h, ReplicaSetKind::ReplicaSet).await;
    create(&sets(h), replica_set("web", 4)).await;
    until("4 pods", || async { pod_count(h).await == 4 }).await;
    let names: Vec<String> = pods(h)
        .await
        .iter()
        .map(|p| object::name(p).to_string())
        .collect();
    // Two ready (one of them for longer), one running not ready, one left pending.
    set_pod_state(h, &names[0], "Running", Some("2024-01-01T00:00:00Z")).await;
    set_pod_state(h, &names[1], "Running", Some("2024-01-02T00:00:00Z")).await;
    set_pod_state(h, &names[2], "Running", None).await;
    until("ready counted", || async {
        get(&sets(h), "web").await["status"]["readyReplicas"] == 2
    })
    .await;
    scale(&sets(h), "web", 2).await;
    until("2 pods", || async { pod_count(h).await == 2 }).await;
    let left: Vec<String> = pods(h)
        .await
        .iter()
        .map(|p| object::name(p).to_string())
        .collect();
    assert_eq!(left, names[..2], "the not-ready pods went first");
    scale(&sets(h), "web", 1).await;
    until("1 pod", || async { pod_count(h).await == 1 }).await;
    let left: Vec<String> = pods(h)
        .await
        .iter()
        .map(|p| object::name(p).to_string())
        .collect();
    assert_eq!(left, names[..1], "the pod ready for less time went first");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.pod_creations(), 4);
    running.stop().await;
}

async fn orphans_are_adopted_and_unmatched_pods_released(h: &Harness) {
    let running = start(h, ReplicaSetKind::ReplicaSet).await;
    let orphan =
        json!({"metadata": {"name": "orphan", "labels": {"app": "web"}}, "spec": containers()});
    create(&pods_store(h), orphan).await;
    let rs = create(&sets(h), replica_set("web", 2)).await;
    until("orphan adopted", || async {
        controller_of(&get(&pods_store(h), "orphan").await)
            .is_some_and(|r| r["uid"] == rs["metadata"]["uid"])
    })
    .await;
    until("2 pods", || async { pod_count(h).await == 2 }).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        pod_count(h).await,
        2,
        "the adopted orphan counts toward the replicas"
    );
    assert_eq!(h.pod_creations(), 2, "the orphan and one new pod");

    patch(
        &pods_store(h),
        "orphan",
        Subresource::Main,
        json!({"metadata": {"labels": {"app": "elsewhere"}}}),
    )
    .await;
    until("released", || async {
        controller_of(&get(&pods_store(h), "orphan").await).is_none()
    })
    .await;
    until("a replacement", || async {
        let controlled = pods(h)
            .await
            .iter()
            .filter(|p| controller_of(p).is_some())
            .count();
        controlled == 2
    })
    .await;
    assert_eq!(pod_count(h).await, 3, "the released pod stays");
    running.stop().await;
}

async fn a_deleted_pod_is_replaced(h: &Harness) {
    let running = start(h, ReplicaSetKind::ReplicaSet).await;
    create(&sets(h), replica_set("web", 3)).await;
    until("3 pods", || async { pod_count(h).await == 3 }).await;
    let victim = object::name(&pods(h).await[0]).to_string();
    pods_store(h)
        .delete(Some(NS), &victim, DeleteOptions::default())
        .await
        .expect("delete pod");
    until("replaced", || async {
        let now = pods(h).await;
        now.len() == 3 && now.iter().all(|p| object::name(p) != victim)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.pod_creations(), 4);
    running.stop().await;
}

async fn status_follows_readiness_and_min_ready_seconds(h: &Harness) {
    let running = start(h, ReplicaSetKind::ReplicaSet).await;
    let mut rs = replica_set("web", 2);
    rs["spec"]["minReadySeconds"] = json!(2);
    create(&sets(h), rs).await;
    until("2 pods", || async { pod_count(h).await == 2 }).await;
    let names: Vec<String> = pods(h)
        .await
        .iter()
        .map(|p| object::name(p).to_string())
        .collect();
    let long_ago = "2024-01-01T00:00:00Z";
    set_pod_state(h, &names[0], "Running", Some(long_ago)).await;
    until("one ready and available", || async {
        let status = &get(&sets(h), "web").await["status"];
        status["readyReplicas"] == 1 && status["availableReplicas"] == 1
    })
    .await;
    let just_now = object::now();
    set_pod_state(h, &names[1], "Running", Some(&just_now)).await;
    until("two ready, one available", || async {
        let status = &get(&sets(h), "web").await["status"];
        status["readyReplicas"] == 2 && status["availableReplicas"] == 1
    })
    .await;
    // No pod event follows: the controller looks again once minReadySeconds have passed.
    until("two available", || async {
        get(&sets(h), "web").await["status"]["availableReplicas"] == 2
    })
    .await;
    running.stop().await;
}

async fn expectations_hold_creations_while_the_informer_lags(h: &Harness) {
    let running = start(h, ReplicaSetKind::ReplicaSet).await;
    create(&sets(h), replica_set("web", 0)).await;
    until("status observed", || async {
        get(&sets(h), "web").await["status"]["observedGeneration"] == 1
    })
    .await;
    h.slow_pod_watches(Duration::from_millis(150));
    scale(&sets(h), "web", 6).await;
    // Many syncs while the pods are on their way to the informer.
    for i in 0..30 {
        patch(
            &sets(h),
            "web",
            Subresource::Main,
            json!({"metadata": {"annotations": {"poke": i.to_string()}}}),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    until("6 pods", || async { pod_count(h).await == 6 }).await;
    until("the informer caught up", || async {
        get(&sets(h), "web").await["status"]["replicas"] == 6
    })
    .await;
    h.slow_pod_watches(Duration::ZERO);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(h.pod_creations(), 6, "pods created in all");
    assert_eq!(pod_count(h).await, 6);
    running.stop().await;
}

async fn replication_controllers_are_served_too(h: &Harness) {
    let running = start(h, ReplicaSetKind::ReplicationController).await;
    let rcs = h.store("", "replicationcontrollers");
    let rc = json!({
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "legacy"},
        "spec": {
            "replicas": 3,
            "selector": {"app": "legacy"},
            "template": {"metadata": {"labels": {"app": "legacy"}}, "spec": containers()},
        },
    });
    let rc = create(&rcs, rc).await;
    until("3 pods", || async { pod_count(h).await == 3 }).await;
    for pod in pods(h).await {
        let reference = controller_of(&pod).expect("controller reference");
        assert_eq!(reference["kind"], "ReplicationController");
        assert_eq!(reference["apiVersion"], "v1");
        assert_eq!(reference["uid"], rc["metadata"]["uid"]);
        assert_eq!(pod["metadata"]["generateName"], "legacy-");
    }
    scale(&rcs, "legacy", 1).await;
    until("1 pod", || async { pod_count(h).await == 1 }).await;
    until("status", || async {
        let status = &get(&rcs, "legacy").await["status"];
        status["replicas"] == 1 && status["observedGeneration"] == 2
    })
    .await;
    running.stop().await;
}

test_support::both_backends!(
    crate::support::Harness, worker_threads = 2;
    scale_up_creates_exactly_the_replicas_with_controller_refs,
    scale_down_deletes_the_lowest_ranked_first,
    orphans_are_adopted_and_unmatched_pods_released,
    a_deleted_pod_is_replaced,
    status_follows_readiness_and_min_ready_seconds,
    expectations_hold_creations_while_the_informer_lags,
    replication_controllers_are_served_too,
);
