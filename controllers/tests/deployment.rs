//! The deployment controller over a real registry (embedded store and etcd). No ReplicaSet
//! controller runs: as upstream's deployment tests do, the tests stand in for it by writing
//! ReplicaSet status (replicas, ready, available, observedGeneration) themselves.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use client::informer::{InformerConfig, InformerFactory};
use controllers::deployment::{DeploymentController, DeploymentControllerConfig};
use futures::StreamExt;
use registry::options::{DeleteOptions, ListOptions, WriteOptions};
use registry::patch::PatchType;
use registry::{object, Store, Subresource, WatchEventType};
use serde_json::{json, Value};
use support::batch::wait_for;
use support::Harness;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const NS: &str = "deploy";
const WAIT: Duration = Duration::from_secs(30);
const REVISION: &str = "deployment.kubernetes.io/revision";

struct Running {
    stop: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl Running {
    async fn start(h: &Harness) -> Self {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        h.namespace(NS).await;
        let informers = InformerFactory::new(h.registry.clone(), InformerConfig::default());
        let controller =
            DeploymentController::new(&informers, DeploymentControllerConfig::default())
                .expect("deployment controller");
        let stop = CancellationToken::new();
        let tasks = vec![tokio::spawn(controller.run(stop.clone()))];
        Self { stop, tasks }
    }

    /// Stands in for the ReplicaSet controller: every ReplicaSet's pods are all there and
    /// available shortly after it is resized.
    fn simulate_replica_sets(&mut self, h: &Harness) {
        let rss = replica_sets(h);
        let stop = self.stop.clone();
        self.tasks.push(tokio::spawn(async move {
            while !stop.is_cancelled() {
                for rs in list(&rss).await {
                    let n = rs["spec"]["replicas"].as_i64().unwrap_or(1);
                    mark(&rss, &rs, n, n).await;
                }
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
        }));
    }

    async fn stop(self) {
        self.stop.cancel();
        for task in self.tasks {
            tokio::time::timeout(Duration::from_secs(10), task)
                .await
                .expect("stops within 10s")
                .expect("task");
        }
    }
}

fn deployments(h: &Harness) -> Arc<Store> {
    h.store("apps", "deployments")
}

fn replica_sets(h: &Harness) -> Arc<Store> {
    h.store("apps", "replicasets")
}

/// Waits until `fetch` finds something, and returns it.
async fn wait_for_value<F, Fut>(what: &str, mut fetch: F) -> Value
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<Value>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = fetch().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn list(store: &Store) -> Vec<Value> {
    let list = store
        .list(Some(NS), &ListOptions::default())
        .await
        .expect("list");
    list["items"].as_array().cloned().unwrap_or_default()
}

async fn get(store: &Store, name: &str) -> Value {
    store
        .get(Some(NS), name, &ListOptions::default())
        .await
        .expect("get")
}

/// Writes a ReplicaSet's status as its controller would, if it differs.
async fn mark(store: &Store, rs: &Value, replicas: i64, available: i64) {
    let status = json!({"replicas": replicas, "readyReplicas": available,
        "availableReplicas": available, "observedGeneration": object::generation(rs)});
    if rs["status"] == status {
        return;
    }
    let mut next = rs.clone();
    next["status"] = status;
    // A conflict means it changed meanwhile: the next round looks again.
    let _ = store
        .update(
            Some(NS),
            object::name(rs),
            next,
            Subresource::Status,
            &WriteOptions::default(),
        )
        .await;
}

fn deployment(name: &str, replicas: i64, strategy: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "strategy": strategy,
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}},
        },
    })
}

fn rolling(surge: Value, unavailable: Value) -> Value {
    json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}})
}

async fn create(h: &Harness, d: Value) -> Value {
    deployments(h)
        .create(Some(NS), d, &WriteOptions::default())
        .await
        .expect("create deployment")
}

async fn patch(h: &Harness, name: &str, patch: Value) {
    deployments(h)
        .patch(
            Some(NS),
            name,
            PatchType::Merge,
            patch.to_string().as_bytes(),
            Subresource::Main,
            &WriteOptions::default(),
        )
        .await
        .expect("patch deployment");
}

async fn set_image(h: &Harness, name: &str, image: &str) {
    let p =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}});
    patch(h, name, p).await;
}

fn condition<'a>(d: &'a Value, kind: &str) -> Option<&'a Value> {
    d["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

fn reason(d: &Value, kind: &str) -> String {
    condition(d, kind)
        .and_then(|c| c["reason"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The ReplicaSets of the namespace whose template runs `image`.
async fn with_image(h: &Harness, image: &str) -> Vec<Value> {
    list(&replica_sets(h))
        .await
        .into_iter()
        .filter(|rs| rs["spec"]["template"]["spec"]["containers"][0]["image"] == image)
        .collect()
}

/// Waits until the rollout of `name` is complete as `kubectl rollout status` judges it.
async fn rolled_out(h: &Harness, name: &str, replicas: i64) {
    let store = deployments(h);
    wait_for("the rollout to complete", || async {
        let d = get(&store, name).await;
        let s = &d["status"];
        object::generation(&d) <= s["observedGeneration"].as_i64().unwrap_or(0)
            && s["updatedReplicas"].as_i64().unwrap_or(0) == replicas
            && s["replicas"].as_i64().unwrap_or(0) == replicas
            && s["availableReplicas"].as_i64().unwrap_or(0) == replicas
            && reason(&d, "Progressing") == "NewReplicaSetAvailable"
    })
    .await;
}

async fn creates_a_replica_set_that_becomes_available(h: &Harness) {
    let running = Running::start(h).await;
    create(h, deployment("web", 3, rolling(json!("25%"), json!("25%")))).await;
    let rss = replica_sets(h);
    let rs = wait_for_value("the new replica set", || async {
        list(&rss).await.into_iter().next()
    })
    .await;
    let hash = rs["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .expect("hash label")
        .to_string();
    assert_eq!(object::name(&rs), format!("web-{hash}"));
    assert_eq!(
        rs["spec"]["selector"]["matchLabels"]["pod-template-hash"],
        hash.as_str()
    );
    assert_eq!(
        rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"],
        hash.as_str()
    );
    assert_eq!(rs["metadata"]["annotations"][REVISION], "1");
    assert_eq!(
        rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"],
        "3"
    );
    assert_eq!(
        rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"],
        "4"
    );
    assert_eq!(rs["metadata"]["ownerReferences"][0]["kind"], "Deployment");
    assert_eq!(rs["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(rs["spec"]["replicas"], 3);
    let store = deployments(h);
    wait_for("revision 1 and Unavailable", || async {
        let d = get(&store, "web").await;
        d["metadata"]["annotations"][REVISION] == "1"
            && reason(&d, "Available") == "MinimumReplicasUnavailable"
            && reason(&d, "Progressing") == "NewReplicaSetCreated"
    })
    .await;
    mark(&rss, &get(&rss, object::name(&rs)).await, 3, 3).await;
    rolled_out(h, "web", 3).await;
    let d = get(&store, "web").await;
    let available = condition(&d, "Available").expect("Available");
    assert_eq!(available["status"], "True");
    assert_eq!(available["reason"], "MinimumReplicasAvailable");
    let progressing = condition(&d, "Progressing").expect("Progressing");
    assert_eq!(
        progressing["message"],
        format!("ReplicaSet \"web-{hash}\" has successfully progressed.")
    );
    assert_eq!(d["status"]["readyReplicas"], 3);
    assert!(d["status"].get("unavailableReplicas").is_none());
    let events = h.store("", "events");
    let message = format!("Scaled up replica set web-{hash} from 0 to 3");
    wait_for("the scaling event", || async {
        list(&events).await.iter().any(|e| {
            e["reason"] == "ScalingReplicaSet"
                && e["message"] == message.as_str()
                && e["source"]["component"] == "deployment-controller"
        })
    })
    .await;
    running.stop().await;
}

/// What a watch of ReplicaSets saw: by name, spec replicas and available replicas.
type Seen = Arc<Mutex<Vec<Vec<(String, i64, i64)>>>>;

/// Records the ReplicaSets' state after every change a watch delivers.
async fn watch_replica_sets(h: &Harness, stop: CancellationToken) -> (Seen, JoinHandle<()>) {
    let mut events = replica_sets(h)
        .watch(Some(NS), None, &ListOptions::default())
        .await
        .expect("watch");
    let seen: Seen = Arc::default();
    let out = seen.clone();
    let task = tokio::spawn(async move {
        let mut state: std::collections::BTreeMap<String, (i64, i64)> = Default::default();
        loop {
            let event = tokio::select! {
                () = stop.cancelled() => break,
                e = events.next() => match e { Some(e) => e, None => break },
            };
            let rs = &event.object;
            let name = object::name(rs).to_string();
            match event.kind {
                WatchEventType::Added | WatchEventType::Modified => {}
                WatchEventType::Deleted => {
                    state.remove(&name);
                }
                WatchEventType::Bookmark | WatchEventType::Error => continue,
            }
            if event.kind != WatchEventType::Deleted {
                let spec = rs["spec"]["replicas"].as_i64().unwrap_or(1);
                let available = rs["status"]["availableReplicas"].as_i64().unwrap_or(0);
                state.insert(name, (spec, available));
            }
            let snapshot = state
                .iter()
                .map(|(n, (s, a))| (n.clone(), *s, *a))
                .collect();
            out.lock().expect("seen").push(snapshot);
        }
    });
    (seen, task)
}

async fn rolling_update_stays_within_surge_and_unavailability(h: &Harness) {
    let mut running = Running::start(h).await;
    running.simulate_replica_sets(h);
    create(h, deployment("web", 4, rolling(json!(1), json!(1)))).await;
    rolled_out(h, "web", 4).await;
    let stop = CancellationToken::new();
    let (seen, watcher) = watch_replica_sets(h, stop.clone()).await;
    set_image(h, "web", "nginx:2").await;
    rolled_out(h, "web", 4).await;
    let rss = replica_sets(h);
    wait_for("the old replica set to be empty", || async {
        with_image(h, "nginx:1")
            .await
            .iter()
            .all(|rs| rs["spec"]["replicas"] == 0)
    })
    .await;
    stop.cancel();
    watcher.await.expect("watcher");
    let seen = seen.lock().expect("seen").clone();
    let mut mixed = 0;
    for state in &seen {
        let total: i64 = state.iter().map(|(_, s, _)| s).sum();
        // A pod counts as available only while its ReplicaSet still wants it.
        let available: i64 = state.iter().map(|(_, s, a)| (*s).min(*a)).sum();
        assert!(
            total <= 5,
            "more than replicas + maxSurge: {state:?} in {seen:?}"
        );
        assert!(
            available >= 3,
            "fewer than replicas - maxUnavailable available: {state:?}"
        );
        if state.iter().filter(|(_, s, _)| *s > 0).count() > 1 {
            mixed += 1;
        }
    }
    assert!(mixed > 0, "the watch saw no intermediate state: {seen:?}");
    assert_eq!(list(&rss).await.len(), 2);
    let new = with_image(h, "nginx:2").await;
    assert_eq!(new[0]["metadata"]["annotations"][REVISION], "2");
    assert_eq!(
        get(&deployments(h), "web").await["metadata"]["annotations"][REVISION],
        "2"
    );
    running.stop().await;
}

async fn recreate_removes_old_pods_before_creating_new(h: &Harness) {
    let mut running = Running::start(h).await;
    running.simulate_replica_sets(h);
    create(h, deployment("web", 2, json!({"type": "Recreate"}))).await;
    rolled_out(h, "web", 2).await;
    let old = with_image(h, "nginx:1").await.remove(0);
    // A pod of the old ReplicaSet still running holds the new one back.
    let pods = h.store("", "pods");
    let pod = json!({"metadata": {"name": "old-pod", "namespace": NS,
            "labels": old["spec"]["template"]["metadata"]["labels"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": object::name(&old),
                "uid": object::uid(&old), "controller": true}]},
        "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}});
    pods.create(Some(NS), pod, &WriteOptions::default())
        .await
        .expect("create pod");
    set_image(h, "web", "nginx:2").await;
    let rss = replica_sets(h);
    wait_for("the old replica set scaled to zero", || async {
        let old = get(&rss, object::name(&old)).await;
        old["spec"]["replicas"] == 0 && old["status"]["replicas"] == 0
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        with_image(h, "nginx:2").await.is_empty(),
        "new replica set while an old pod runs"
    );
    pods.delete(Some(NS), "old-pod", DeleteOptions::default())
        .await
        .expect("delete pod");
    rolled_out(h, "web", 2).await;
    let new = with_image(h, "nginx:2").await;
    assert_eq!(new[0]["spec"]["replicas"], 2);
    running.stop().await;
}

async fn rollback_reuses_the_old_replica_set(h: &Harness) {
    let mut running = Running::start(h).await;
    running.simulate_replica_sets(h);
    create(h, deployment("web", 2, rolling(json!(1), json!(0)))).await;
    rolled_out(h, "web", 2).await;
    let first = with_image(h, "nginx:1").await.remove(0);
    set_image(h, "web", "nginx:2").await;
    rolled_out(h, "web", 2).await;
    // What `kubectl rollout undo` sends: the old ReplicaSet's template without its hash
    // label, as a typed client serialises it.
    let mut template = first["spec"]["template"].clone();
    template["metadata"]["labels"]
        .as_object_mut()
        .expect("labels")
        .remove("pod-template-hash");
    template["metadata"]["creationTimestamp"] = Value::Null;
    let ops = json!([{"op": "replace", "path": "/spec/template", "value": template}]);
    deployments(h)
        .patch(
            Some(NS),
            "web",
            PatchType::Json,
            ops.to_string().as_bytes(),
            Subresource::Main,
            &WriteOptions::default(),
        )
        .await
        .expect("undo");
    rolled_out(h, "web", 2).await;
    let rss = replica_sets(h);
    assert_eq!(list(&rss).await.len(), 2, "no third replica set");
    let reused = get(&rss, object::name(&first)).await;
    assert_eq!(reused["spec"]["replicas"], 2);
    assert_eq!(reused["metadata"]["annotations"][REVISION], "3");
    assert_eq!(
        reused["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"],
        "1"
    );
    wait_for("revision 3 on the deployment", || async {
        get(&deployments(h), "web").await["metadata"]["annotations"][REVISION] == "3"
    })
    .await;
    running.stop().await;
}

async fn pause_stops_the_rollout_but_not_scaling(h: &Harness) {
    let mut running = Running::start(h).await;
    running.simulate_replica_sets(h);
    create(h, deployment("web", 2, rolling(json!(1), json!(0)))).await;
    rolled_out(h, "web", 2).await;
    patch(h, "web", json!({"spec": {"paused": true}})).await;
    let store = deployments(h);
    wait_for("DeploymentPaused", || async {
        reason(&get(&store, "web").await, "Progressing") == "DeploymentPaused"
    })
    .await;
    set_image(h, "web", "nginx:2").await;
    patch(h, "web", json!({"spec": {"replicas": 3}})).await;
    let rss = replica_sets(h);
    wait_for("the paused deployment to scale", || async {
        with_image(h, "nginx:1")
            .await
            .first()
            .is_some_and(|rs| rs["spec"]["replicas"] == 3)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(list(&rss).await.len(), 1, "a paused deployment rolled out");
    patch(h, "web", json!({"spec": {"paused": false}})).await;
    rolled_out(h, "web", 3).await;
    assert_eq!(with_image(h, "nginx:2").await[0]["spec"]["replicas"], 3);
    running.stop().await;
}

async fn no_progress_exceeds_the_deadline(h: &Harness) {
    let running = Running::start(h).await;
    let mut d = deployment("web", 1, rolling(json!(1), json!(0)));
    d["spec"]["progressDeadlineSeconds"] = json!(2);
    create(h, d).await;
    let store = deployments(h);
    let seen = wait_for_value("ProgressDeadlineExceeded", || async {
        Some(get(&store, "web").await)
            .filter(|d| reason(d, "Progressing") == "ProgressDeadlineExceeded")
    })
    .await;
    let c = condition(&seen, "Progressing").expect("Progressing");
    assert_eq!(c["status"], "False");
    let rs = list(&replica_sets(h)).await.remove(0);
    assert_eq!(
        c["message"],
        format!(
            "ReplicaSet \"{}\" has timed out progressing.",
            object::name(&rs)
        )
    );
    running.stop().await;
}

async fn revision_history_limit_prunes_old_replica_sets(h: &Harness) {
    let mut running = Running::start(h).await;
    running.simulate_replica_sets(h);
    let mut d = deployment("web", 1, rolling(json!(1), json!(0)));
    d["spec"]["revisionHistoryLimit"] = json!(1);
    create(h, d).await;
    rolled_out(h, "web", 1).await;
    for image in ["nginx:2", "nginx:3"] {
        set_image(h, "web", image).await;
        rolled_out(h, "web", 1).await;
    }
    let rss = replica_sets(h);
    wait_for("the oldest replica set pruned", || async {
        list(&rss).await.len() == 2
    })
    .await;
    assert!(with_image(h, "nginx:1").await.is_empty());
    let revisions: Vec<Value> = list(&rss)
        .await
        .iter()
        .map(|rs| rs["metadata"]["annotations"][REVISION].clone())
        .collect();
    assert!(
        revisions.contains(&json!("2")) && revisions.contains(&json!("3")),
        "{revisions:?}"
    );
    running.stop().await;
}

test_support::both_backends!(
    crate::support::Harness, worker_threads = 2;
    creates_a_replica_set_that_becomes_available,
    rolling_update_stays_within_surge_and_unavailability,
    recreate_removes_old_pods_before_creating_new,
    rollback_reuses_the_old_replica_set,
    pause_stops_the_rollout_but_not_scaling,
    no_progress_exceeds_the_deadline,
    revision_history_limit_prunes_old_replica_sets,
);
