//! The namespace controller over a real registry (embedded store and etcd): a deleted
//! namespace loses all its content, pods first, then goes itself; content held by finalizers
//! or graceful pods keeps it Terminating with upstream's conditions saying why.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use client::informer::{InformerConfig, InformerFactory};
use controllers::namespace::{
    NamespaceController, NamespaceControllerConfig, CONTENT_FAILURE, CONTENT_REMAINING,
    DISCOVERY_FAILURE, FINALIZERS_REMAINING, GROUP_VERSION_PARSING_FAILURE,
};
use futures::StreamExt;
use registry::options::{DeleteOptions, ListOptions, WriteOptions};
use registry::{RegistryError, ResourceInfo, Store, Subresource, WatchEventType};
use serde_json::{json, Value};
use support::batch::wait_for;
use support::Harness;
use test_support::FromBackend;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn config() -> NamespaceControllerConfig {
    NamespaceControllerConfig {
        workers: 4,
        deletion_grace_period: Duration::from_millis(50),
        finalizer_estimate_seconds: 1,
        ..Default::default()
    }
}

struct Running {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    fn start(h: &Harness) -> Self {
        let controller =
            NamespaceController::new(&informers(h), config()).expect("namespace controller");
        let stop = CancellationToken::new();
        let task = tokio::spawn(controller.run(stop.clone()));
        Self { stop, task }
    }

    async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("controller stops within 10s")
            .expect("controller task");
    }
}

fn write() -> WriteOptions {
    WriteOptions::default()
}

async fn create(store: &Store, ns: &str, obj: Value) -> Value {
    store
        .create(Some(ns), obj, &write())
        .await
        .unwrap_or_else(|e| panic!("create {} in {ns}: {e}", store.info.plural))
}

async fn names(store: &Store, ns: &str) -> Vec<String> {
    let list = store
        .list(Some(ns), &ListOptions::default())
        .await
        .expect("list");
    let mut out = test_support::names(&list);
    out.sort();
    out
}

async fn get_namespace(h: &Harness, name: &str) -> Option<Value> {
    match h
        .store("", "namespaces")
        .get(None, name, &ListOptions::default())
        .await
    {
        Ok(ns) => Some(ns),
        Err(RegistryError::NotFound { .. }) => None,
        Err(e) => panic!("get namespace {name}: {e}"),
    }
}

async fn delete_namespace(h: &Harness, name: &str) {
    let outcome = h
        .store("", "namespaces")
        .delete(None, name, DeleteOptions::default())
        .await
        .expect("delete namespace");
    assert!(!outcome.deleted, "a namespace is first only marked");
    assert_eq!(outcome.object["status"]["phase"], "Terminating");
}

async fn wait_gone(h: &Harness, name: &str) {
    wait_for(&format!("namespace {name} to go"), || async {
        get_namespace(h, name).await.is_none()
    })
    .await;
}

/// type → (status, reason, message) of a namespace's conditions.
fn conditions(ns: &Value) -> Vec<(String, String, String, String)> {
    ns["status"]["conditions"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| {
                    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
                    (s("type"), s("status"), s("reason"), s("message"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn condition(ns: &Value, kind: &str) -> Option<(String, String, String)> {
    conditions(ns)
        .into_iter()
        .find(|(k, ..)| k == kind)
        .map(|(_, status, reason, message)| (status, reason, message))
}

fn status_of(ns: &Value, kind: &str) -> (String, String) {
    condition(ns, kind)
        .map(|(status, reason, _)| (status, reason))
        .unwrap_or_default()
}

/// Records every state of a namespace the registry's watch reports, to check the stages it
/// went through once it is gone.
fn record_states(h: &Harness, name: &str) -> Arc<Mutex<Vec<(WatchEventType, Value)>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let namespaces = h.store("", "namespaces");
    let name = name.to_string();
    let out = seen.clone();
    tokio::spawn(async move {
        let mut events = namespaces
            .watch(None, Some(&name), &ListOptions::default())
            .await
            .expect("watch namespace");
        while let Some(event) = events.next().await {
            let done = event.kind == WatchEventType::Deleted;
            if let Ok(mut seen) = out.lock() {
                seen.push((event.kind, event.object));
            }
            if done {
                break;
            }
        }
    });
    seen
}

fn pod(name: &str, node: Option<&str>, grace: i64) -> Value {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "busybox:1.36"}],
            "terminationGracePeriodSeconds": grace,
        },
    });
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
    }
    pod
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

/// One object of each of several kinds: (group, plural, object).
fn assorted(name: &str) -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("", "configmaps", configmap(name)),
        (
            "",
            "secrets",
            json!({"metadata": {"name": name}, "data": {"k": "dg=="}}),
        ),
        ("", "pods", pod(name, None, 30)),
        ("", "serviceaccounts", json!({"metadata": {"name": name}})),
        (
            "",
            "services",
            json!({"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}}),
        ),
        (
            "apps",
            "deployments",
            json!({
                "metadata": {"name": name},
                "spec": {
                    "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}},
                },
            }),
        ),
        (
            "rbac.authorization.k8s.io",
            "roles",
            json!({"metadata": {"name": name}, "rules": []}),
        ),
        (
            "coordination.k8s.io",
            "leases",
            json!({"metadata": {"name": name}, "spec": {"holderIdentity": "x"}}),
        ),
        (
            "batch",
            "cronjobs",
            json!({"metadata": {"name": name}, "spec": {
            "schedule": "* * * * *",
            "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}}}),
        ),
    ]
}

async fn deletes_all_content_then_the_namespace(h: &Harness) {
    h.namespace("doomed").await;
    h.namespace("kept").await;
    for ns in ["doomed", "kept"] {
        for (group, plural, obj) in assorted("one") {
            create(&h.store(group, plural), ns, obj).await;
        }
        for (group, plural, obj) in assorted("two") {
            create(&h.store(group, plural), ns, obj).await;
        }
    }
    let running = Running::start(h);
    delete_namespace(h, "doomed").await;
    wait_gone(h, "doomed").await;
    for (group, plural, _) in assorted("one") {
        let store = h.store(group, plural);
        assert_eq!(
            names(&store, "doomed").await,
            Vec::<String>::new(),
            "{plural}"
        );
        assert_eq!(
            names(&store, "kept").await,
            ["one", "two"],
            "{plural} elsewhere"
        );
    }
    let kept = get_namespace(h, "kept").await.expect("kept namespace");
    assert_eq!(kept["status"]["phase"], "Active");
    assert!(kept["metadata"]["deletionTimestamp"].is_null());
    running.stop().await;
}

async fn held_content_keeps_the_namespace_terminating_until_released(h: &Harness) {
    h.namespace("held").await;
    let configmaps = h.store("", "configmaps");
    let mut held = configmap("held");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&configmaps, "held", held).await;
    create(&configmaps, "held", configmap("free")).await;
    create(
        &h.store("", "secrets"),
        "held",
        json!({"metadata": {"name": "s"}}),
    )
    .await;
    let states = record_states(h, "held");
    let running = Running::start(h);
    delete_namespace(h, "held").await;

    wait_for("the finalizer to be reported", || async {
        let ns = get_namespace(h, "held").await.unwrap_or_default();
        status_of(&ns, FINALIZERS_REMAINING).0 == "True"
    })
    .await;
    let ns = get_namespace(h, "held").await.expect("held namespace");
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(
        condition(&ns, FINALIZERS_REMAINING),
        Some((
            "True".into(),
            "SomeFinalizersRemain".into(),
            "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances".into()
        ))
    );
    assert_eq!(
        condition(&ns, CONTENT_REMAINING),
        Some((
            "True".into(),
            "SomeResourcesRemain".into(),
            "Some resources are remaining: configmaps. has 1 resource instances".into()
        ))
    );
    assert_eq!(
        status_of(&ns, CONTENT_FAILURE),
        ("False".into(), "ContentDeleted".into())
    );
    assert_eq!(
        status_of(&ns, DISCOVERY_FAILURE),
        ("False".into(), "ResourcesDiscovered".into())
    );
    assert_eq!(
        status_of(&ns, GROUP_VERSION_PARSING_FAILURE),
        ("False".into(), "ParsedGroupVersions".into())
    );
    // Everything else went; the held one waits, marked deleting.
    assert_eq!(names(&configmaps, "held").await, ["held"]);
    assert_eq!(
        names(&h.store("", "secrets"), "held").await,
        Vec::<String>::new()
    );
    let cm = configmaps
        .get(Some("held"), "held", &ListOptions::default())
        .await
        .expect("held configmap");
    assert!(cm["metadata"]["deletionTimestamp"].is_string());
    // It stays so while held.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(get_namespace(h, "held").await.is_some());

    let mut released = cm.clone();
    released["metadata"]["finalizers"] = json!([]);
    configmaps
        .update(Some("held"), "held", released, Subresource::Main, &write())
        .await
        .expect("release the finalizer");
    wait_gone(h, "held").await;
    running.stop().await;

    // Before it went, the conditions said all was done. Emptying spec.finalizers through
    // `finalize` is itself what removes the namespace (upstream's
    // ShouldDeleteNamespaceDuringUpdate), so the last state seen is the one before it.
    wait_for("the namespace's deletion to be watched", || async {
        states
            .lock()
            .map(|s| s.last().is_some_and(|(k, _)| *k == WatchEventType::Deleted))
            .unwrap_or(false)
    })
    .await;
    let states = states.lock().map(|s| s.clone()).unwrap_or_default();
    let finalized = states
        .iter()
        .rev()
        .find(|(kind, _)| *kind == WatchEventType::Deleted)
        .map(|(_, ns)| ns.clone())
        .expect("the namespace's last state");
    for kind in [
        DISCOVERY_FAILURE,
        GROUP_VERSION_PARSING_FAILURE,
        CONTENT_FAILURE,
        CONTENT_REMAINING,
        FINALIZERS_REMAINING,
    ] {
        assert_eq!(status_of(&finalized, kind).0, "False", "{kind}");
    }
    assert_eq!(status_of(&finalized, CONTENT_REMAINING).1, "ContentRemoved");
    assert_eq!(
        status_of(&finalized, FINALIZERS_REMAINING).1,
        "ContentHasNoFinalizers"
    );
}

async fn creates_in_a_terminating_namespace_are_forbidden(h: &Harness) {
    h.namespace("closing").await;
    let configmaps = h.store("", "configmaps");
    let mut held = configmap("held");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&configmaps, "closing", held).await;
    let running = Running::start(h);
    delete_namespace(h, "closing").await;
    let refused = configmaps
        .create(Some("closing"), configmap("late"), &write())
        .await;
    match refused {
        Err(e @ RegistryError::Forbidden { .. }) => {
            assert_eq!(e.code(), 403);
            assert!(
                e.to_string()
                    .contains("unable to create new content in namespace closing because it is being terminated"),
                "{e}"
            );
        }
        other => panic!("expected Forbidden, got {other:?}"),
    }
    // Still refused once the controller has been through it.
    wait_for("the content to be deleted", || async {
        configmaps
            .get(Some("closing"), "held", &ListOptions::default())
            .await
            .is_ok_and(|cm| cm["metadata"]["deletionTimestamp"].is_string())
    })
    .await;
    let refused = h
        .store("", "secrets")
        .create(
            Some("closing"),
            json!({"metadata": {"name": "late"}}),
            &write(),
        )
        .await;
    assert!(
        matches!(refused, Err(RegistryError::Forbidden { .. })),
        "{refused:?}"
    );
    running.stop().await;
}

/// A namespaced custom resource like those a CRD installs, with the given verbs.
fn custom_resource(h: &Harness, kind: &str, plural: &str, verbs: &[&str]) -> ResourceInfo {
    let template = h.store("", "configmaps").info.as_ref().clone();
    ResourceInfo {
        group: "example.com".into(),
        version: "v1".into(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        short_names: Vec::new(),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        storage_path: format!("/example.com/{plural}"),
        ..template
    }
}

async fn content_of_resources_installed_later_is_deleted(h: &Harness) {
    h.namespace("custom").await;
    h.namespace("other").await;
    let running = Running::start(h);
    // Installed after the controller started; one without deletecollection, deleted one by one.
    let widgets = h.registry.install(Arc::new(custom_resource(
        h,
        "Widget",
        "widgets",
        &[
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "update",
            "watch",
        ],
    )));
    let gadgets = h.registry.install(Arc::new(custom_resource(
        h,
        "Gadget",
        "gadgets",
        &["create", "delete", "get", "list", "update", "watch"],
    )));
    for ns in ["custom", "other"] {
        for i in 0..5 {
            create(&widgets, ns, json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": format!("w{i}")}})).await;
            create(&gadgets, ns, json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": format!("g{i}")}})).await;
        }
    }
    delete_namespace(h, "custom").await;
    wait_gone(h, "custom").await;
    assert_eq!(names(&widgets, "custom").await, Vec::<String>::new());
    assert_eq!(names(&gadgets, "custom").await, Vec::<String>::new());
    assert_eq!(names(&widgets, "other").await.len(), 5);
    assert_eq!(names(&gadgets, "other").await.len(), 5);
    running.stop().await;
}

async fn graceful_pods_go_first_and_hold_up_the_rest(h: &Harness) {
    h.namespace("graceful").await;
    let pods = h.store("", "pods");
    let configmaps = h.store("", "configmaps");
    // Bound to a node: with no kubelet here it stays until deleted with no grace.
    create(&pods, "graceful", pod("bound", Some("node-1"), 2)).await;
    create(&pods, "graceful", pod("unbound", None, 2)).await;
    create(&configmaps, "graceful", configmap("guard")).await;
    let running = Running::start(h);
    delete_namespace(h, "graceful").await;

    wait_for("the remaining pod to be reported", || async {
        let ns = get_namespace(h, "graceful").await.unwrap_or_default();
        status_of(&ns, CONTENT_REMAINING).0 == "True"
    })
    .await;
    let ns = get_namespace(h, "graceful").await.expect("namespace");
    assert_eq!(
        condition(&ns, CONTENT_REMAINING),
        Some((
            "True".into(),
            "SomeResourcesRemain".into(),
            "Some resources are remaining: pods. has 1 resource instances".into()
        ))
    );
    assert_eq!(
        status_of(&ns, FINALIZERS_REMAINING),
        ("False".into(), "ContentHasNoFinalizers".into())
    );
    assert_eq!(names(&pods, "graceful").await, ["bound"]);
    let bound = pods
        .get(Some("graceful"), "bound", &ListOptions::default())
        .await
        .expect("bound pod");
    assert_eq!(bound["metadata"]["deletionGracePeriodSeconds"], 2);
    // Pods go first: nothing else is touched while one remains.
    let guard = configmaps
        .get(Some("graceful"), "guard", &ListOptions::default())
        .await
        .expect("configmap kept while pods remain");
    assert!(guard["metadata"]["deletionTimestamp"].is_null());

    // Once its grace period is over and it is still there, the deletion is failing.
    wait_for("the content failure to be reported", || async {
        let ns = get_namespace(h, "graceful").await.unwrap_or_default();
        status_of(&ns, CONTENT_FAILURE).0 == "True"
    })
    .await;
    let ns = get_namespace(h, "graceful").await.expect("namespace");
    assert_eq!(
        condition(&ns, CONTENT_FAILURE),
        Some((
            "True".into(),
            "ContentDeletionFailed".into(),
            "Failed to delete all resource types, 1 remaining: unexpected items still remain in namespace: graceful for gvr: /v1, Resource=pods".into()
        ))
    );
    assert_eq!(names(&configmaps, "graceful").await, ["guard"]);

    pods.delete(
        Some("graceful"),
        "bound",
        DeleteOptions {
            grace_period_seconds: Some(0),
            ..Default::default()
        },
    )
    .await
    .expect("force delete the pod");
    wait_gone(h, "graceful").await;
    assert_eq!(names(&configmaps, "graceful").await, Vec::<String>::new());
    running.stop().await;
}

async fn a_namespace_deleted_while_stopped_is_finished_on_start(h: &Harness) {
    h.namespace("later").await;
    create(&h.store("", "configmaps"), "later", configmap("c")).await;
    delete_namespace(h, "later").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(get_namespace(h, "later").await.is_some());
    let running = Running::start(h);
    wait_gone(h, "later").await;
    running.stop().await;
}

test_support::both_backends!(
    crate::support::Harness, worker_threads = 2;
    deletes_all_content_then_the_namespace,
    held_content_keeps_the_namespace_terminating_until_released,
    creates_in_a_terminating_namespace_are_forbidden,
    content_of_resources_installed_later_is_deleted,
    graceful_pods_go_first_and_hold_up_the_rest,
    a_namespace_deleted_while_stopped_is_finished_on_start,
);

/// How long a namespace with 10,000 objects over 5 resources takes to go. Run with
/// `cargo test -p controllers --test namespace_controller -- --ignored --nocapture`.
async fn bulk_deletion(h: &Harness, backend: &str) {
    const PER_RESOURCE: usize = 2_000;
    h.namespace("bulk").await;
    // Only a name: each of these kinds is valid so.
    let kinds = [
        ("", "configmaps"),
        ("", "secrets"),
        ("", "serviceaccounts"),
        ("coordination.k8s.io", "leases"),
        ("rbac.authorization.k8s.io", "roles"),
    ];
    let started = Instant::now();
    for (group, plural) in kinds {
        let store = h.store(group, plural);
        futures::stream::iter(0..PER_RESOURCE)
            .map(|i| {
                let store = store.clone();
                async move {
                    create(
                        &store,
                        "bulk",
                        json!({"metadata": {"name": format!("o{i}")}}),
                    )
                    .await
                }
            })
            .buffer_unordered(64)
            .collect::<Vec<_>>()
            .await;
    }
    let created = started.elapsed();
    let running = Running::start(h);
    let started = Instant::now();
    delete_namespace(h, "bulk").await;
    wait_gone(h, "bulk").await;
    let deleted = started.elapsed();
    println!(
        "{backend}: created {} objects in {created:?}; namespace deleted in {deleted:?} \
         (includes the {:?} deletion grace period)",
        PER_RESOURCE * kinds.len(),
        config().deletion_grace_period
    );
    for (group, plural) in kinds {
        assert!(names(&h.store(group, plural), "bulk").await.is_empty());
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measures speed; slow"]
async fn bulk_deletion_speed_embedded() {
    bulk_deletion(&Harness::embedded().await, "embedded").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measures speed; slow"]
async fn bulk_deletion_speed_etcd() {
    bulk_deletion(&Harness::etcd().await, "etcd").await;
}

fn informers(h: &Harness) -> Arc<InformerFactory> {
    InformerFactory::new(h.registry.clone(), InformerConfig::default())
}
