//! The garbage collector over a real registry (embedded store and etcd): background, orphan
//! and foreground cascades, the three ways to unblock a foreground deletion, references to
//! owners that never existed or are gone, resources installed while it runs, and the DOT graph.

mod support;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use client::informer::{InformerConfig, InformerFactory};
use controllers::garbage_collector::{GarbageCollector, GcConfig};
use futures::StreamExt;
use registry::options::{DeleteOptions, DeleteOptionsWire, ListOptions, WriteOptions};
use registry::{Catalogue, Registry, ResourceInfo, Store, Subresource, WatchEventType};
use serde_json::{json, Value};
use support::Harness;
use test_support::TestBackend;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const NS: &str = "gc";
/// Every wait is bounded by this; collection normally takes milliseconds.
const WAIT: Duration = Duration::from_secs(10);
const HOLD: &str = "example.com/hold";

struct Running {
    gc: Arc<GarbageCollector>,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    /// Stops the collector and checks it stops promptly and cleanly.
    async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .expect("garbage collector stops in time")
            .expect("garbage collector task does not panic");
    }
}

async fn start(h: &Harness) -> Running {
    start_on(&h.registry).await
}

async fn start_on(registry: &Arc<Registry>) -> Running {
    registry
        .store("", "v1", "namespaces")
        .expect("namespaces")
        .create(
            None,
            json!({"metadata": {"name": NS}}),
            &WriteOptions::default(),
        )
        .await
        .expect("create namespace");
    let gc = GarbageCollector::new(
        InformerFactory::new(registry.clone(), InformerConfig::default()),
        GcConfig {
            progress_interval: Duration::from_secs(1),
            ..GcConfig::default()
        },
    );
    let stop = CancellationToken::new();
    let task = tokio::spawn(gc.clone().run(stop.clone()));
    until("monitors synced", || async { gc.is_synced() }).await;
    Running { gc, stop, task }
}

/// Waits until `check` holds, failing the test after [`WAIT`].
async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + WAIT;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn namespace_of(store: &Store) -> Option<&'static str> {
    store.info.namespaced.then_some(NS)
}

fn with_meta(mut obj: Value, name: &str, owners: &[Value]) -> Value {
    obj["metadata"] = json!({"name": name, "namespace": NS});
    if !owners.is_empty() {
        obj["metadata"]["ownerReferences"] = json!(owners);
    }
    obj
}

fn configmap(name: &str, owners: &[Value]) -> Value {
    with_meta(json!({"data": {"k": "v"}}), name, owners)
}

fn containers() -> Value {
    json!({"containers": [{"name": "c", "image": "busybox"}]})
}

fn pod(name: &str, owners: &[Value]) -> Value {
    with_meta(json!({"spec": containers()}), name, owners)
}

fn workload(name: &str, owners: &[Value]) -> Value {
    let spec = json!({
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": containers()},
    });
    with_meta(json!({ "spec": spec }), name, owners)
}

/// An ownerReference to a stored object.
fn owner_ref(owner: &Value, block: Option<bool>) -> Value {
    let mut r = json!({
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    });
    if let Some(block) = block {
        r["blockOwnerDeletion"] = json!(block);
    }
    r
}

async fn create(store: &Store, obj: Value) -> Value {
    store
        .create(namespace_of(store), obj, &WriteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("create in {}: {e}", store.info.plural))
}

async fn get(store: &Store, name: &str) -> Option<Value> {
    store
        .get(namespace_of(store), name, &ListOptions::default())
        .await
        .ok()
}

async fn delete(store: &Store, name: &str, policy: &str) {
    store
        .delete(
            namespace_of(store),
            name,
            DeleteOptions::parse(DeleteOptionsWire {
                propagation_policy: Some(policy.to_string()),
                ..Default::default()
            })
            .expect("valid options"),
        )
        .await
        .unwrap_or_else(|e| panic!("delete {name}: {e}"));
}

async fn gone(store: &Store, name: &str) {
    let what = format!("{} {name} to be gone", store.info.plural);
    until(&what, || async { get(store, name).await.is_none() }).await;
}

/// Reads, changes and writes back an object (retrying on conflicts with the collector).
async fn edit(store: &Store, name: &str, change: impl Fn(&mut Value)) {
    for _ in 0..20 {
        let mut obj = get(store, name).await.expect("object to edit");
        change(&mut obj);
        let written = store
            .update(
                namespace_of(store),
                name,
                obj,
                Subresource::Main,
                &WriteOptions::default(),
            )
            .await;
        match written {
            Ok(_) => return,
            Err(registry::RegistryError::Conflict { .. }) => continue,
            Err(e) => panic!("update {name}: {e}"),
        }
    }
    panic!("update {name}: kept conflicting");
}

fn owner_uids(obj: &Value) -> Vec<String> {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r["uid"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn is_deleting(obj: &Value) -> bool {
    obj["metadata"]["deletionTimestamp"].is_string()
}

fn has_finalizer(obj: &Value, finalizer: &str) -> bool {
    obj["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}

async fn background_deletion_collects_all_dependents(h: &Harness) {
    let gc = start(h).await;
    let (deployments, replicasets) = (
        h.store("apps", "deployments"),
        h.store("apps", "replicasets"),
    );
    let (configmaps, pods) = (h.store("", "configmaps"), h.store("", "pods"));
    let deployment = create(&deployments, workload("web", &[])).await;
    let owner = [owner_ref(&deployment, None)];
    let rs = create(&replicasets, workload("web-1", &owner)).await;
    for i in 0..3 {
        create(&configmaps, configmap(&format!("cm-{i}"), &owner)).await;
        create(
            &pods,
            pod(&format!("web-{i}"), &[owner_ref(&rs, Some(true))]),
        )
        .await;
    }
    create(&pods, pod("direct", &owner)).await;
    create(&configmaps, configmap("unrelated", &[])).await;

    delete(&deployments, "web", "Background").await;
    assert!(
        get(&deployments, "web").await.is_none(),
        "the owner goes at once"
    );
    gone(&replicasets, "web-1").await;
    for i in 0..3 {
        gone(&configmaps, &format!("cm-{i}")).await;
        gone(&pods, &format!("web-{i}")).await;
    }
    gone(&pods, "direct").await;
    assert!(get(&configmaps, "unrelated").await.is_some());
    // Counted once each delete returns, which may be just after the object is seen gone.
    until("deletes counted", || async { gc.gc.stats().deleted >= 8 }).await;
    gc.stop().await;
}

async fn orphan_deletion_keeps_dependents_without_the_reference(h: &Harness) {
    let gc = start(h).await;
    let configmaps = h.store("", "configmaps");
    let owner = create(&configmaps, configmap("owner", &[])).await;
    let other = create(&configmaps, configmap("other", &[])).await;
    let owner_uid = owner["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let other_uid = other["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for i in 0..3 {
        create(
            &configmaps,
            configmap(&format!("only-{i}"), &[owner_ref(&owner, Some(true))]),
        )
        .await;
    }
    create(
        &configmaps,
        configmap("both", &[owner_ref(&owner, None), owner_ref(&other, None)]),
    )
    .await;

    delete(&configmaps, "owner", "Orphan").await;
    gone(&configmaps, "owner").await;
    for i in 0..3 {
        let dep = get(&configmaps, &format!("only-{i}"))
            .await
            .expect("orphan kept");
        assert!(owner_uids(&dep).is_empty(), "reference removed: {dep}");
    }
    let both = get(&configmaps, "both").await.expect("kept");
    assert_eq!(owner_uids(&both), [other_uid]);
    assert!(!owner_uids(&both).contains(&owner_uid));
    gc.stop().await;
}

/// Names of DELETED events of a store from `from` on, with their revisions.
fn record_deletions(store: Arc<Store>, from: String, log: Arc<Mutex<Vec<(i64, String)>>>) {
    tokio::spawn(async move {
        let opts = ListOptions {
            resource_version: Some(from),
            ..Default::default()
        };
        let Ok(mut events) = store.watch(Some(NS), None, &opts).await else {
            return;
        };
        while let Some(event) = events.next().await {
            if event.kind != WatchEventType::Deleted {
                continue;
            }
            let meta = &event.object["metadata"];
            let revision = meta["resourceVersion"]
                .as_str()
                .and_then(|r| r.parse().ok())
                .unwrap_or_default();
            let name = format!(
                "{}/{}",
                store.info.kind,
                meta["name"].as_str().unwrap_or_default()
            );
            log.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((revision, name));
        }
    });
}

async fn foreground_chain_is_deleted_leaves_first(h: &Harness) {
    let gc = start(h).await;
    let (deployments, replicasets) = (
        h.store("apps", "deployments"),
        h.store("apps", "replicasets"),
    );
    let (pods, configmaps) = (h.store("", "pods"), h.store("", "configmaps"));
    let deployment = create(&deployments, workload("web", &[])).await;
    let rs = create(
        &replicasets,
        workload("web-1", &[owner_ref(&deployment, Some(true))]),
    )
    .await;
    for i in 0..4 {
        create(
            &pods,
            pod(&format!("web-{i}"), &[owner_ref(&rs, Some(true))]),
        )
        .await;
    }
    // Not blocking: collected too, but nothing waits for it.
    create(
        &configmaps,
        configmap("loose", &[owner_ref(&deployment, Some(false))]),
    )
    .await;
    let from = rs["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_string();
    let log = Arc::new(Mutex::new(Vec::new()));
    for store in [&deployments, &replicasets, &pods] {
        record_deletions(store.clone(), from.clone(), log.clone());
    }

    delete(&deployments, "web", "Foreground").await;
    let marked = get(&deployments, "web")
        .await
        .expect("stays while dependents go");
    assert!(is_deleting(&marked) && has_finalizer(&marked, "foregroundDeletion"));
    gone(&deployments, "web").await;
    gone(&replicasets, "web-1").await;
    gone(&configmaps, "loose").await;
    for i in 0..4 {
        gone(&pods, &format!("web-{i}")).await;
    }
    until("all deletions seen", || async {
        log.lock().map(|l| l.len()).unwrap_or_default() == 6
    })
    .await;
    let mut order = log.lock().map(|l| l.clone()).unwrap_or_default();
    order.sort();
    let names: Vec<&str> = order.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(
        names[4..],
        ["ReplicaSet/web-1", "Deployment/web"],
        "{names:?}"
    );
    assert!(
        names[..4].iter().all(|n| n.starts_with("Pod/")),
        "{names:?}"
    );
    gc.stop().await;
}

enum Unblock {
    RemoveFinalizer,
    RemoveReference,
    StopBlocking,
}

/// An owner deleted in the foreground, held by a dependent that has a finalizer of its own,
/// is released by `how`.
async fn blocked_foreground_owner(h: &Harness, how: Unblock) {
    let gc = start(h).await;
    let configmaps = h.store("", "configmaps");
    let owner = create(&configmaps, configmap("owner", &[])).await;
    let mut dependent = configmap("held", &[owner_ref(&owner, Some(true))]);
    dependent["metadata"]["finalizers"] = json!([HOLD]);
    create(&configmaps, dependent).await;

    delete(&configmaps, "owner", "Foreground").await;
    // The collector deletes the dependent, which its own finalizer keeps.
    until("dependent being deleted", || async {
        get(&configmaps, "held")
            .await
            .is_some_and(|d| is_deleting(&d))
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let waiting = get(&configmaps, "owner").await.expect("owner waits");
    assert!(is_deleting(&waiting) && has_finalizer(&waiting, "foregroundDeletion"));

    match how {
        Unblock::RemoveFinalizer => {
            edit(&configmaps, "held", |d| {
                d["metadata"]["finalizers"] = json!([])
            })
            .await;
            gone(&configmaps, "held").await;
        }
        Unblock::RemoveReference => {
            edit(&configmaps, "held", |d| {
                if let Some(m) = d["metadata"].as_object_mut() {
                    m.remove("ownerReferences");
                }
            })
            .await;
        }
        Unblock::StopBlocking => {
            edit(&configmaps, "held", |d| {
                d["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] = json!(false);
            })
            .await;
        }
    }
    gone(&configmaps, "owner").await;
    if get(&configmaps, "held").await.is_some() {
        edit(&configmaps, "held", |d| {
            d["metadata"]["finalizers"] = json!([])
        })
        .await;
        gone(&configmaps, "held").await;
    }
    gc.stop().await;
}

async fn foreground_unblocked_when_the_dependent_goes(h: &Harness) {
    blocked_foreground_owner(h, Unblock::RemoveFinalizer).await;
}

async fn foreground_unblocked_when_the_reference_is_removed(h: &Harness) {
    blocked_foreground_owner(h, Unblock::RemoveReference).await;
}

async fn foreground_unblocked_when_the_reference_stops_blocking(h: &Harness) {
    blocked_foreground_owner(h, Unblock::StopBlocking).await;
}

async fn a_dependent_losing_one_of_two_owners_lives_on(h: &Harness) {
    let gc = start(h).await;
    let configmaps = h.store("", "configmaps");
    let first = create(&configmaps, configmap("first", &[])).await;
    let second = create(&configmaps, configmap("second", &[])).await;
    create(
        &configmaps,
        configmap(
            "shared",
            &[owner_ref(&first, Some(true)), owner_ref(&second, None)],
        ),
    )
    .await;
    delete(&configmaps, "first", "Background").await;
    let second_uid = second["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    until("the dead owner's reference removed", || async {
        get(&configmaps, "shared")
            .await
            .is_some_and(|d| owner_uids(&d) == [second_uid.clone()])
    })
    .await;
    // And it stays.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(get(&configmaps, "shared").await.is_some());
    delete(&configmaps, "second", "Background").await;
    gone(&configmaps, "shared").await;
    gc.stop().await;
}

async fn owners_that_never_existed_leave_nothing_behind(h: &Harness) {
    let gc = start(h).await;
    let configmaps = h.store("", "configmaps");
    let made_up = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost",
        "uid": "00000000-0000-0000-0000-000000000001"});
    create(&configmaps, configmap("haunted", &[made_up])).await;
    // The name exists, but as another object.
    let namesake = create(&configmaps, configmap("namesake", &[])).await;
    let mut wrong_uid = owner_ref(&namesake, None);
    wrong_uid["uid"] = json!("00000000-0000-0000-0000-000000000002");
    create(&configmaps, configmap("misled", &[wrong_uid])).await;
    gone(&configmaps, "haunted").await;
    gone(&configmaps, "misled").await;
    assert!(get(&configmaps, "namesake").await.is_some());
    gc.stop().await;
}

async fn a_dependent_created_after_its_owner_is_collected(h: &Harness) {
    let gc = start(h).await;
    let configmaps = h.store("", "configmaps");
    let owner = create(&configmaps, configmap("owner", &[])).await;
    delete(&configmaps, "owner", "Background").await;
    create(&configmaps, configmap("late", &[owner_ref(&owner, None)])).await;
    gone(&configmaps, "late").await;
    gc.stop().await;
}

fn widget_info(base: &Store, group: &str) -> ResourceInfo {
    let mut info: ResourceInfo = base.info.as_ref().clone();
    info.group = group.into();
    info.kind = "Widget".into();
    info.list_kind = "WidgetList".into();
    info.plural = "widgets".into();
    info.singular = "widget".into();
    info.short_names = Vec::new();
    info.storage_path = "/example.com/widgets".into();
    info
}

fn monitors(gc: &GarbageCollector, resource: &str) -> bool {
    gc.monitored_resources().iter().any(|r| r == resource)
}

async fn resources_installed_later_are_monitored_and_collected(h: &Harness) {
    let gc = start(h).await;
    let configmaps = h.store("", "configmaps");
    // An owner of a kind nobody serves yet cannot be checked: its dependent waits.
    let unknown = json!({"apiVersion": "example.com/v1", "kind": "Widget", "name": "never",
        "uid": "00000000-0000-0000-0000-000000000003"});
    create(&configmaps, configmap("waits-for-widgets", &[unknown])).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(get(&configmaps, "waits-for-widgets").await.is_some());

    let widgets = h
        .registry
        .install(Arc::new(widget_info(&configmaps, "example.com")));
    // The same objects served under a second group are monitored once.
    h.registry
        .install(Arc::new(widget_info(&configmaps, "other.example.com")));
    until("widgets monitored", || async {
        monitors(&gc.gc, "example.com/v1/widgets") && gc.gc.is_synced()
    })
    .await;
    assert!(!monitors(&gc.gc, "other.example.com/v1/widgets"));
    gone(&configmaps, "waits-for-widgets").await;

    let widget = create(&widgets, configmap("w", &[])).await;
    create(
        &configmaps,
        configmap("of-widget", &[owner_ref(&widget, None)]),
    )
    .await;
    let cm = create(&configmaps, configmap("cm-owner", &[])).await;
    create(&widgets, configmap("w-dependent", &[owner_ref(&cm, None)])).await;

    delete(&widgets, "w", "Background").await;
    gone(&configmaps, "of-widget").await;
    delete(&configmaps, "cm-owner", "Background").await;
    gone(&widgets, "w-dependent").await;

    // Removed resources lose their monitor; the path stays watched while one serves it.
    h.registry.uninstall("example.com", "v1", "widgets");
    until("the other group's widgets monitored", || async {
        monitors(&gc.gc, "other.example.com/v1/widgets")
    })
    .await;
    h.registry.uninstall("other.example.com", "v1", "widgets");
    until("widgets no longer monitored", || async {
        !gc.gc
            .monitored_resources()
            .iter()
            .any(|r| r.ends_with("/widgets"))
    })
    .await;
    gc.stop().await;
}

async fn scope_rules_for_owner_references(h: &Harness) {
    let gc = start(h).await;
    let configmaps = h.store("", "configmaps");
    let roles = h.store("rbac.authorization.k8s.io", "clusterroles");
    // A namespaced dependent of a cluster-scoped owner: collected when the owner goes.
    let role = create(
        &roles,
        json!({"metadata": {"name": "gc-owner"}, "rules": []}),
    )
    .await;
    create(&configmaps, configmap("of-role", &[owner_ref(&role, None)])).await;
    // A cluster-scoped dependent of a namespaced owner: an invalid reference, never acted on.
    let cm = create(&configmaps, configmap("ns-owner", &[])).await;
    create(
        &roles,
        json!({"metadata": {"name": "gc-invalid", "ownerReferences": [owner_ref(&cm, None)]},
               "rules": []}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(get(&configmaps, "of-role").await.is_some());
    delete(&roles, "gc-owner", "Background").await;
    gone(&configmaps, "of-role").await;
    delete(&configmaps, "ns-owner", "Background").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        get(&roles, "gc-invalid").await.is_some(),
        "a cluster-scoped object is not collected through a namespaced owner"
    );
    gc.stop().await;
}

async fn the_graph_dumps_as_dot(h: &Harness) {
    let gc = start(h).await;
    let configmaps = h.store("", "configmaps");
    let owner = create(&configmaps, configmap("owner", &[])).await;
    let dep = create(
        &configmaps,
        configmap("dep", &[owner_ref(&owner, Some(true))]),
    )
    .await;
    let other = create(&configmaps, configmap("other-owner", &[])).await;
    create(
        &configmaps,
        configmap("other-dep", &[owner_ref(&other, None)]),
    )
    .await;
    let uid = |o: &Value| {
        o["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let (owner_uid, dep_uid, other_uid) = (uid(&owner), uid(&dep), uid(&other));
    let edge = format!("  \"{dep_uid}\" -> \"{owner_uid}\";\n");
    until("both edges in the graph", || async {
        let dot = gc.gc.dot(None);
        dot.contains(&edge) && dot.contains(&format!("\" -> \"{other_uid}\""))
    })
    .await;
    let dot = gc.gc.dot(None);
    assert!(dot.starts_with("strict digraph full {\n"), "{dot}");
    assert!(dot.contains(&format!("  \"{owner_uid}\" [\n")), "{dot}");
    assert!(
        dot.contains(&format!(
            "uid={dep_uid}\\nnamespace={NS}\\nConfigMap.v1/dep\\n"
        )),
        "{dot}"
    );
    assert!(dot.contains(&other_uid));
    let part = gc.gc.dot(Some(&dep_uid));
    assert!(part.contains(&edge), "{part}");
    assert!(!part.contains(&other_uid), "{part}");
    gc.stop().await;
}

test_support::both_backends!(
    crate::support::Harness, worker_threads = 2;
    background_deletion_collects_all_dependents,
    orphan_deletion_keeps_dependents_without_the_reference,
    foreground_chain_is_deleted_leaves_first,
    foreground_unblocked_when_the_dependent_goes,
    foreground_unblocked_when_the_reference_is_removed,
    foreground_unblocked_when_the_reference_stops_blocking,
    a_dependent_losing_one_of_two_owners_lives_on,
    owners_that_never_existed_leave_nothing_behind,
    a_dependent_created_after_its_owner_is_collected,
    resources_installed_later_are_monitored_and_collected,
    scope_rules_for_owner_references,
    the_graph_dumps_as_dot,
);

/// Names the stored dependents of `owner_uid` the graph never heard of (an informer that
/// missed their creation).
async fn report_missing(gc: &GarbageCollector, store: &Store, owner_uid: &str) {
    let dot = gc.dot(Some(owner_uid));
    let list = store
        .list(Some(NS), &ListOptions::default())
        .await
        .expect("list");
    for item in list["items"].as_array().into_iter().flatten() {
        let meta = &item["metadata"];
        let uid = meta["uid"].as_str().unwrap_or_default();
        if owner_uids(item).iter().any(|o| o == owner_uid) && !dot.contains(uid) {
            println!(
                "not in the graph: {} (resourceVersion {})",
                meta["name"], meta["resourceVersion"]
            );
        }
    }
}

/// How fast cascades of many dependents go: `GC_BENCH_DEPENDENTS` (default 10,000) configmaps
/// owned by one configmap, deleted in the background, in the foreground, and orphaned.
async fn bulk_speed(registry: &Arc<Registry>) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let n: usize = std::env::var("GC_BENCH_DEPENDENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let gc = start_on(registry).await;
    let configmaps = registry.store("", "v1", "configmaps").expect("configmaps");
    for (policy, block) in [
        ("Background", None),
        ("Foreground", Some(true)),
        ("Orphan", None),
    ] {
        let owner_name = format!("owner-{}", policy.to_lowercase());
        let owner = create(&configmaps, configmap(&owner_name, &[])).await;
        let reference = [owner_ref(&owner, block)];
        let started = Instant::now();
        futures::stream::iter(0..n)
            .map(|i| {
                let obj = configmap(&format!("{owner_name}-{i}"), &reference);
                let configmaps = configmaps.clone();
                async move { create(&configmaps, obj).await }
            })
            .buffer_unordered(64)
            .collect::<Vec<_>>()
            .await;
        let created = started.elapsed();
        let owner_uid = owner["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        // Wait until the graph holds every edge, so the cascade alone is timed.
        let graph_deadline = Instant::now() + Duration::from_secs(60);
        while gc.gc.dot(Some(&owner_uid)).matches(" -> ").count() < n {
            if Instant::now() > graph_deadline {
                report_missing(&gc.gc, &configmaps, &owner_uid).await;
                panic!("{policy}: the graph never caught up with the dependents");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let deadline = Instant::now() + Duration::from_secs(600);
        let started = Instant::now();
        delete(&configmaps, &owner_name, policy).await;
        while get(&configmaps, &owner_name).await.is_some() {
            assert!(Instant::now() < deadline, "{policy} cascade never finished");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let owner_gone = started.elapsed();
        let referring = |list: &Value| {
            list["items"]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter(|o| owner_uids(o).contains(&owner_uid))
                        .count()
                })
                .unwrap_or_default()
        };
        let kept = loop {
            let list = configmaps
                .list(Some(NS), &ListOptions::default())
                .await
                .expect("list");
            // Orphans stay, without the reference; other dependents go.
            if referring(&list) == 0 {
                break list["items"].as_array().map(Vec::len).unwrap_or_default();
            }
            assert!(Instant::now() < deadline, "{policy} cascade never finished");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let expect_kept = if policy == "Orphan" { n } else { 0 };
        assert_eq!(kept, expect_kept, "{policy}");
        println!(
            "{policy}: {n} dependents created in {created:?}; owner gone after {owner_gone:?}, \
             cascade done after {:?} ({kept} kept)",
            started.elapsed()
        );
        if policy == "Orphan" {
            // Not part of the measurement: clear them for the next round's listing.
            futures::stream::iter(0..n)
                .map(|i| {
                    let configmaps = configmaps.clone();
                    let name = format!("{owner_name}-{i}");
                    async move { delete(&configmaps, &name, "Background").await }
                })
                .buffer_unordered(64)
                .collect::<Vec<_>>()
                .await;
        }
    }
    println!("{:?}", gc.gc.stats());
    gc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: cargo test --release -p controllers --test garbage_collector bulk -- --ignored --nocapture"]
async fn bulk_speed_embedded() {
    let backend = TestBackend::embedded().await;
    bulk_speed(
        &bulk_registry(
            storage::backend::open(&backend.etcd_servers(), backend.data_dir())
                .await
                .expect("open the test backend"),
        )
        .await,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: cargo test --release -p controllers --test garbage_collector bulk -- --ignored --nocapture"]
async fn bulk_speed_etcd() {
    let backend = TestBackend::etcd().await;
    bulk_speed(
        &bulk_registry(
            storage::backend::open(&backend.etcd_servers(), backend.data_dir())
                .await
                .expect("open the test backend"),
        )
        .await,
    )
    .await;
}

/// A registry with the server's default watch cache settings. The test harness asks etcd for
/// progress every 100ms, which on etcd before 3.4.26 lets the watch cache skip events under
/// this much write load (a storage issue, not the collector's).
async fn bulk_registry(backend: storage::backend::DynBackend) -> Arc<Registry> {
    let root = storage::KvStore::new(backend, "/registry");
    let registry = Registry::new(
        root,
        Arc::new(Catalogue::builtin()),
        storage::CacherConfig::default(),
    );
    registry.bootstrap().await.expect("bootstrap");
    registry
}
