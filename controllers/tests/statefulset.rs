//! The StatefulSet controller over a real registry (embedded store and etcd). There are no
//! kubelets: tests mark pods Running and Ready themselves, by hand or with a task that
//! readies every pending pod.

mod support;

use std::sync::Arc;
use std::time::Duration;

use client::informer::{InformerConfig, InformerFactory};
use controllers::garbage_collector::{GarbageCollector, GcConfig};
use controllers::statefulset::{StatefulSetController, StatefulSetControllerConfig};
use registry::options::{DeleteOptions, ListOptions, WriteOptions};
use registry::patch::PatchType;
use registry::{object, Store, Subresource};
use serde_json::{json, Value};
use support::batch::wait_for;
use support::Harness;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const NS: &str = "sts";
const WAIT: Duration = Duration::from_secs(30);

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
        Self::launch(h)
    }

    /// The controllers again, after an earlier [`Running::stop`].
    fn launch(h: &Harness) -> Self {
        let informers = InformerFactory::new(h.registry.clone(), InformerConfig::default());
        let controller =
            StatefulSetController::new(&informers, StatefulSetControllerConfig::default())
                .expect("statefulset controller");
        let gc = GarbageCollector::new(informers.clone(), GcConfig::default());
        let stop = CancellationToken::new();
        let tasks = vec![
            tokio::spawn(controller.run(stop.clone())),
            tokio::spawn(gc.run(stop.clone())),
        ];
        Self { stop, tasks }
    }

    /// Stands in for the kubelets: every pending pod becomes Running and Ready.
    fn ready_pods(&mut self, h: &Harness) {
        let pods = pods(h);
        let stop = self.stop.clone();
        self.tasks.push(tokio::spawn(async move {
            while !stop.is_cancelled() {
                for pod in list(&pods).await {
                    if pod["status"]["phase"] == "Pending"
                        && object::deletion_timestamp(&pod).is_none()
                    {
                        set_phase(&pods, &pod, "Running", true).await;
                    }
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

fn pods(h: &Harness) -> Arc<Store> {
    h.store("", "pods")
}

fn sets(h: &Harness) -> Arc<Store> {
    h.store("apps", "statefulsets")
}

async fn list(store: &Store) -> Vec<Value> {
    store
        .list(Some(NS), &ListOptions::default())
        .await
        .expect("list")["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn names(store: &Store) -> Vec<String> {
    let mut names: Vec<String> = list(store)
        .await
        .iter()
        .map(|o| object::name(o).to_string())
        .collect();
    names.sort();
    names
}

async fn get(store: &Store, name: &str) -> Option<Value> {
    store
        .get(Some(NS), name, &ListOptions::default())
        .await
        .ok()
}

/// Writes a pod's phase and Ready condition, as a kubelet would.
async fn set_phase(pods: &Store, pod: &Value, phase: &str, ready: bool) {
    let mut next = pod.clone();
    next["status"]["phase"] = json!(phase);
    next["status"]["conditions"] = json!([{"type": "Ready",
        "status": if ready { "True" } else { "False" },
        "lastTransitionTime": object::now()}]);
    // A conflict means it changed meanwhile: the next round looks again.
    let _ = pods
        .update(
            Some(NS),
            object::name(pod),
            next,
            Subresource::Status,
            &WriteOptions::default(),
        )
        .await;
}

async fn ready(h: &Harness, name: &str) {
    let pods = pods(h);
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(pod) = get(&pods, name).await {
            set_phase(&pods, &pod, "Running", true).await;
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for pod {name}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn statefulset(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "serviceName": "nginx",
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}},
        },
    })
}

async fn create(h: &Harness, set: Value) -> Value {
    sets(h)
        .create(Some(NS), set, &WriteOptions::default())
        .await
        .expect("create statefulset")
}

async fn patch(h: &Harness, name: &str, patch: Value) {
    sets(h)
        .patch(
            Some(NS),
            name,
            PatchType::Merge,
            patch.to_string().as_bytes(),
            Subresource::Main,
            &WriteOptions::default(),
        )
        .await
        .expect("patch statefulset");
}

async fn set_image(h: &Harness, name: &str, image: &str) {
    let p =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}});
    patch(h, name, p).await;
}

fn image(pod: &Value) -> &str {
    pod["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default()
}

async fn images(h: &Harness) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = list(&pods(h))
        .await
        .iter()
        .map(|p| (object::name(p).to_string(), image(p).to_string()))
        .collect();
    out.sort();
    out
}

async fn status_where(
    h: &Harness,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let sets = sets(h);
    let deadline = Instant::now() + WAIT;
    loop {
        let found = get(&sets, name).await.unwrap_or_default();
        if check(&found) {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {}",
            found["status"]
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn event_messages(h: &Harness, reason: &str) -> Vec<String> {
    list(&h.store("", "events"))
        .await
        .iter()
        .filter(|e| e["reason"] == reason)
        .filter_map(|e| e["message"].as_str().map(str::to_string))
        .collect()
}

async fn ordered_creation_and_scale_down(h: &Harness) {
    let running = Running::start(h).await;
    create(h, statefulset("web", 3)).await;
    let pods = pods(h);
    for (i, name) in ["web-0", "web-1", "web-2"].into_iter().enumerate() {
        wait_for(name, || async { get(&pods, name).await.is_some() }).await;
        // The next ordinal waits for this one to be Running and Ready.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(names(&pods).await.len(), i + 1, "{:?}", names(&pods).await);
        ready(h, name).await;
    }
    let set = status_where(h, "web", "all ready", |s| s["status"]["readyReplicas"] == 3).await;
    let status = &set["status"];
    assert_eq!(status["replicas"], 3);
    assert_eq!(status["currentReplicas"], 3);
    assert_eq!(status["updatedReplicas"], 3);
    assert_eq!(status["availableReplicas"], 3);
    assert_eq!(status["observedGeneration"], object::generation(&set));
    assert_eq!(status["currentRevision"], status["updateRevision"]);
    assert_eq!(status["collisionCount"], 0);
    let pod = get(&pods, "web-1").await.expect("web-1");
    let labels = &pod["metadata"]["labels"];
    assert_eq!(labels["statefulset.kubernetes.io/pod-name"], "web-1");
    assert_eq!(labels["apps.kubernetes.io/pod-index"], "1");
    assert_eq!(labels["controller-revision-hash"], status["updateRevision"]);
    assert_eq!(pod["spec"]["hostname"], "web-1");
    assert_eq!(pod["spec"]["subdomain"], "nginx");
    assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
    let created = event_messages(h, "SuccessfulCreate").await;
    assert!(
        created.contains(&"create Pod web-0 in StatefulSet web successful".to_string()),
        "{created:?}"
    );

    // Scale down: the highest ordinal goes first, one at a time.
    patch(h, "web", json!({"spec": {"replicas": 1}})).await;
    wait_for("web-2 gone", || async {
        get(&pods, "web-2").await.is_none()
    })
    .await;
    wait_for("web-1 gone", || async {
        get(&pods, "web-1").await.is_none()
    })
    .await;
    assert_eq!(names(&pods).await, ["web-0"]);
    status_where(h, "web", "one replica", |s| s["status"]["replicas"] == 1).await;
    let deleted = event_messages(h, "SuccessfulDelete").await;
    assert!(
        deleted.contains(&"delete Pod web-2 in StatefulSet web successful".to_string()),
        "{deleted:?}"
    );
    running.stop().await;
}

async fn scale_down_waits_for_unhealthy_pods(h: &Harness) {
    let mut running = Running::start(h).await;
    running.ready_pods(h);
    let mut set = statefulset("web", 3);
    set["spec"]["ordinals"] = json!({"start": 2});
    create(h, set).await;
    status_where(h, "web", "all ready", |s| s["status"]["readyReplicas"] == 3).await;
    let pods = pods(h);
    assert_eq!(names(&pods).await, ["web-2", "web-3", "web-4"]);
    running.stop().await;
    // No kubelet now: web-2, which stays, turns unready, so scaling down waits for it. It
    // turns unready before the controller starts again, so its informers list it so: the
    // pod's change and the scale-down would otherwise race on two watches.
    let web2 = get(&pods, "web-2").await.expect("web-2");
    set_phase(&pods, &web2, "Running", false).await;
    let running = Running::launch(h);
    patch(h, "web", json!({"spec": {"replicas": 1}})).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(names(&pods).await, ["web-2", "web-3", "web-4"]);
    ready(h, "web-2").await;
    wait_for("scaled down", || async { names(&pods).await == ["web-2"] }).await;
    running.stop().await;
}

async fn parallel_creates_and_deletes_at_once(h: &Harness) {
    let running = Running::start(h).await;
    let mut set = statefulset("web", 3);
    set["spec"]["podManagementPolicy"] = json!("Parallel");
    create(h, set).await;
    let pods = pods(h);
    wait_for("all three pods without readiness", || async {
        names(&pods).await == ["web-0", "web-1", "web-2"]
    })
    .await;
    patch(h, "web", json!({"spec": {"replicas": 0}})).await;
    wait_for("all gone", || async { names(&pods).await.is_empty() }).await;
    running.stop().await;
}

async fn rolling_update_respects_the_partition(h: &Harness) {
    let mut running = Running::start(h).await;
    running.ready_pods(h);
    create(h, statefulset("web", 3)).await;
    let first = status_where(h, "web", "ready", |s| s["status"]["readyReplicas"] == 3).await;
    let old_revision = first["status"]["currentRevision"].clone();
    patch(
        h,
        "web",
        json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 1}}}}),
    )
    .await;
    set_image(h, "web", "nginx:2").await;
    let set = status_where(h, "web", "partitioned roll out", |s| {
        s["status"]["updatedReplicas"] == 2 && s["status"]["readyReplicas"] == 3
    })
    .await;
    assert_eq!(
        images(h).await,
        [
            ("web-0".into(), "nginx:1".into()),
            ("web-1".into(), "nginx:2".into()),
            ("web-2".into(), "nginx:2".into())
        ]
    );
    assert_eq!(set["status"]["currentRevision"], old_revision);
    assert_ne!(set["status"]["updateRevision"], old_revision);
    assert_eq!(set["status"]["currentReplicas"], 1);

    patch(
        h,
        "web",
        json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}),
    )
    .await;
    let done = status_where(h, "web", "roll out complete", |s| {
        s["status"]["updatedReplicas"] == 3
            && s["status"]["readyReplicas"] == 3
            && s["status"]["currentRevision"] == s["status"]["updateRevision"]
    })
    .await;
    assert_eq!(done["status"]["currentReplicas"], 3);
    assert!(images(h).await.iter().all(|(_, i)| i == "nginx:2"));
    let revisions = list(&h.store("apps", "controllerrevisions")).await;
    assert_eq!(revisions.len(), 2);
    let numbers: Vec<i64> = revisions
        .iter()
        .filter_map(|r| r["revision"].as_i64())
        .collect();
    assert!(numbers.contains(&1) && numbers.contains(&2), "{numbers:?}");

    // Back to the first template: its revision is reused and renumbered, no third one.
    set_image(h, "web", "nginx:1").await;
    let back = status_where(h, "web", "rolled back", |s| {
        s["status"]["updateRevision"] == old_revision
            && s["status"]["currentRevision"] == old_revision
            && s["status"]["updatedReplicas"] == 3
    })
    .await;
    assert_eq!(back["status"]["readyReplicas"], 3);
    let revisions = list(&h.store("apps", "controllerrevisions")).await;
    assert_eq!(revisions.len(), 2);
    let reused = revisions
        .iter()
        .find(|r| r["metadata"]["name"] == old_revision)
        .expect("old revision");
    assert_eq!(reused["revision"], 3);
    running.stop().await;
}

async fn on_delete_waits_for_pods_to_be_deleted(h: &Harness) {
    let mut running = Running::start(h).await;
    running.ready_pods(h);
    let mut set = statefulset("web", 2);
    set["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
    create(h, set).await;
    status_where(h, "web", "ready", |s| s["status"]["readyReplicas"] == 2).await;
    set_image(h, "web", "nginx:2").await;
    status_where(h, "web", "new revision", |s| {
        s["status"]["updateRevision"] != s["status"]["currentRevision"]
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(images(h).await.iter().all(|(_, i)| i == "nginx:1"));
    let pods = pods(h);
    pods.delete(Some(NS), "web-1", DeleteOptions::default())
        .await
        .expect("delete web-1");
    wait_for("web-1 recreated at the new revision", || async {
        get(&pods, "web-1")
            .await
            .is_some_and(|p| image(&p) == "nginx:2")
    })
    .await;
    let set = status_where(h, "web", "one updated", |s| {
        s["status"]["updatedReplicas"] == 1 && s["status"]["readyReplicas"] == 2
    })
    .await;
    assert_eq!(set["status"]["currentReplicas"], 1);
    assert_eq!(image(&get(&pods, "web-0").await.expect("web-0")), "nginx:1");
    running.stop().await;
}

async fn claims_are_created_and_retained_by_policy(h: &Harness) {
    let mut running = Running::start(h).await;
    running.ready_pods(h);
    let mut set = statefulset("web", 3);
    set["spec"]["volumeClaimTemplates"] = json!([{"metadata": {"name": "www"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]);
    set["spec"]["persistentVolumeClaimRetentionPolicy"] =
        json!({"whenDeleted": "Retain", "whenScaled": "Delete"});
    let created = create(h, set).await;
    status_where(h, "web", "ready", |s| s["status"]["readyReplicas"] == 3).await;
    let claims = h.store("", "persistentvolumeclaims");
    assert_eq!(
        names(&claims).await,
        ["www-web-0", "www-web-1", "www-web-2"]
    );
    let claim = get(&claims, "www-web-0").await.expect("claim");
    assert_eq!(claim["metadata"]["labels"]["app"], "web");
    assert!(claim["metadata"]["ownerReferences"]
        .as_array()
        .is_none_or(|r| r.is_empty()));
    let pod = get(&pods(h), "web-0").await.expect("pod");
    assert_eq!(
        pod["spec"]["volumes"][0],
        json!({"name": "www", "persistentVolumeClaim": {"claimName": "www-web-0"}})
    );

    // whenScaled: Delete — the scaled-down pod's claim goes with it.
    patch(h, "web", json!({"spec": {"replicas": 2}})).await;
    wait_for("www-web-2 deleted", || async {
        names(&claims).await == ["www-web-0", "www-web-1"]
    })
    .await;

    // whenDeleted: Delete — the remaining claims name the set as owner.
    patch(
        h,
        "web",
        json!({"spec": {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"}}}),
    )
    .await;
    wait_for("claims owned by the set", || async {
        list(&claims)
            .await
            .iter()
            .all(|c| c["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"])
    })
    .await;
    running.stop().await;
}

async fn failed_pods_are_recreated(h: &Harness) {
    let mut running = Running::start(h).await;
    running.ready_pods(h);
    create(h, statefulset("web", 2)).await;
    status_where(h, "web", "ready", |s| s["status"]["readyReplicas"] == 2).await;
    let pods = pods(h);
    let old = get(&pods, "web-0").await.expect("web-0");
    set_phase(&pods, &old, "Failed", false).await;
    wait_for("web-0 recreated", || async {
        get(&pods, "web-0")
            .await
            .is_some_and(|p| object::uid(&p) != object::uid(&old))
    })
    .await;
    let events = event_messages(h, "RecreatingFailedPod").await;
    assert!(
        events.contains(&format!(
            "StatefulSet {NS}/web is recreating failed Pod web-0"
        )),
        "{events:?}"
    );
    status_where(h, "web", "ready again", |s| {
        s["status"]["readyReplicas"] == 2
    })
    .await;
    running.stop().await;
}

test_support::both_backends!(
    crate::support::Harness, worker_threads = 2;
    ordered_creation_and_scale_down,
    scale_down_waits_for_unhealthy_pods,
    parallel_creates_and_deletes_at_once,
    rolling_update_respects_the_partition,
    on_delete_waits_for_pods_to_be_deleted,
    claims_are_created_and_retained_by_policy,
    failed_pods_are_recreated,
    revisions_carry_the_sets_annotations,
);

/// A revision carries the set's annotations when it is made, as upstream's newRevision copies
/// them, so `kubectl rollout history` shows each revision's change-cause.
async fn revisions_carry_the_sets_annotations(h: &Harness) {
    let running = Running::start(h).await;
    let mut set = statefulset("web", 0);
    set["metadata"]["annotations"] = json!({"kubernetes.io/change-cause": "first"});
    create(h, set).await;
    let revisions = h.store("apps", "controllerrevisions");
    wait_for("the first revision", || async {
        !list(&revisions).await.is_empty()
    })
    .await;
    let first = list(&revisions).await.remove(0);
    assert_eq!(
        first["metadata"]["annotations"]["kubernetes.io/change-cause"], "first",
        "{first}"
    );
    patch(
        h,
        "web",
        json!({"metadata": {"annotations": {"kubernetes.io/change-cause": "second"}},
               "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}),
    )
    .await;
    let second_made = || async { list(&revisions).await.iter().any(|r| r["revision"] == 2) };
    wait_for("the second revision", second_made).await;
    let second = list(&revisions)
        .await
        .into_iter()
        .find(|r| r["revision"] == 2)
        .expect("the second revision");
    assert_eq!(
        second["metadata"]["annotations"]["kubernetes.io/change-cause"], "second",
        "{second}"
    );
    running.stop().await;
}
