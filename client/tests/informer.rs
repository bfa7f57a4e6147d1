//! The shared informer over a real registry: the initial list, live changes, and recovery by
//! relist when the watch's history has been compacted away.

mod support;

use client::controller_utils::pod_candidates;
use client::informer::{
    orphan_index_key, wait_for_sync, DeltaObject, FactoryError, InformerConfig, InformerFactory,
    Notification, SharedInformer, CONTROLLER_UID_INDEX, NAMESPACE_INDEX,
};
use registry::options::WriteOptions;
use registry::selector::labels::LabelSelector;
use serde_json::json;
use support::*;
use test_support::{eventually, FromBackend};

fn cached_versions(informer: &SharedInformer) -> Vec<(String, String)> {
    let mut out: Vec<_> = informer
        .indexer()
        .list()
        .iter()
        .filter_map(|o| versioned(o))
        .collect();
    out.sort();
    out
}

async fn delivers_the_list_then_changes_in_order(h: &Harness) {
    h.namespace("app").await;
    let store = h.configmaps();
    create_configmap(&store, "app", "a", "1").await;
    create_configmap(&store, "app", "b", "1").await;

    let informer = SharedInformer::for_store(store.clone(), InformerConfig::default());
    let mut rx = informer.subscribe();
    informer.start();
    assert!(informer.wait_for_sync().await);
    let initial = next(&mut rx, 2).await;
    let mut seen = summary(&initial);
    seen.sort();
    assert_eq!(seen, ["add app/a", "add app/b"]);

    create_configmap(&store, "app", "c", "1").await;
    let updated = update_configmap(&store, "app", "a", "2").await;
    delete_configmap(&store, "app", "b").await;
    let changes = next(&mut rx, 3).await;
    assert_eq!(about(&changes, "app/c"), ["add app/c"]);
    assert_eq!(about(&changes, "app/a"), ["update app/a"]);
    assert_eq!(about(&changes, "app/b"), ["delete app/b"]);
    let update = changes
        .iter()
        .find_map(|n| match n {
            Notification::Update { old, new } => Some((old.clone(), new.clone())),
            _ => None,
        })
        .expect("an update");
    assert_eq!(update.0["data"]["value"], "1");
    assert_eq!(*update.1, updated);

    assert_eq!(cached_versions(&informer), store_versions(&store).await);
    let mut in_app = informer
        .indexer()
        .index_keys(NAMESPACE_INDEX, "app")
        .expect("namespace index");
    in_app.sort();
    assert_eq!(in_app, ["app/a", "app/c"]);
    // The reflector has advanced to at least the last change it delivered.
    let deleted_at = changes
        .iter()
        .find_map(|n| match n {
            Notification::Delete(DeltaObject::Object(o)) => o["metadata"]["resourceVersion"]
                .as_str()?
                .parse::<i64>()
                .ok(),
            _ => None,
        })
        .expect("a deletion with its resourceVersion");
    let last: i64 = informer
        .last_sync_resource_version()
        .parse()
        .expect("numeric resourceVersion");
    assert!(last >= deleted_at, "at {last}, deletion at {deleted_at}");

    informer.stop().await;
    assert!(rx.recv().await.is_none(), "stopping closes subscriptions");
    // Changes after the stop reach nobody and the cache keeps its last state.
    create_configmap(&store, "app", "d", "1").await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(informer.indexer().get("app/d").is_none());
}

async fn relists_after_compaction_and_reports_the_missed_deletion(h: &Harness) {
    h.namespace("app").await;
    let store = h.configmaps();
    create_configmap(&store, "app", "keep", "1").await;
    let doomed = create_configmap(&store, "app", "doomed", "1").await;
    create_configmap(&store, "app", "changed", "1").await;

    let informer = SharedInformer::for_store(store.clone(), InformerConfig::default());
    let mut rx = informer.subscribe();
    informer.start();
    assert!(informer.wait_for_sync().await);
    next(&mut rx, 3).await;

    // While the watch cannot see, the store moves on and forgets its history.
    h.cut_watches();
    delete_configmap(&store, "app", "doomed").await;
    update_configmap(&store, "app", "changed", "2").await;
    create_configmap(&store, "app", "fresh", "1").await;
    let compacted = h.compact_all().await;
    h.heal();

    let changes = next(&mut rx, 3).await;
    assert_eq!(about(&changes, "app/doomed"), ["tombstone app/doomed"]);
    assert_eq!(about(&changes, "app/changed"), ["update app/changed"]);
    assert_eq!(about(&changes, "app/fresh"), ["add app/fresh"]);
    assert!(
        about(&changes, "app/keep").is_empty(),
        "{:?}",
        summary(&changes)
    );
    let tombstone = changes
        .iter()
        .find_map(|n| match n {
            Notification::Delete(DeltaObject::DeletedFinalStateUnknown(t)) => Some(t.clone()),
            _ => None,
        })
        .expect("a tombstone");
    // The tombstone carries the last state the informer knew.
    assert_eq!(tombstone.obj.as_deref(), Some(&doomed));

    assert_eq!(cached_versions(&informer), store_versions(&store).await);
    let rv: i64 = informer
        .last_sync_resource_version()
        .parse()
        .expect("numeric resourceVersion");
    assert!(
        rv >= compacted,
        "relisted at {rv}, compacted at {compacted}"
    );

    // And it keeps watching from the relist.
    update_configmap(&store, "app", "keep", "2").await;
    let later = next(&mut rx, 1).await;
    assert_eq!(summary(&later), ["update app/keep"]);
    eventually(
        "the cache to match the store",
        std::time::Duration::from_secs(10),
        || {
            informer
                .indexer()
                .get("app/keep")
                .is_some_and(|o| o["data"]["value"] == "2")
        },
    )
    .await;
    informer.stop().await;
}

/// Every ask for a resource gets the one informer, indexed by controller uid.
async fn the_factory_shares_one_informer_per_resource(h: &Harness) {
    h.namespace("app").await;
    let store = h.configmaps();
    let owned = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "owned", "namespace": "app", "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "boss", "uid": "u-1", "controller": true},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "u-2"},
        ]},
    });
    store
        .create(Some("app"), owned, &WriteOptions::default())
        .await
        .expect("create");
    create_configmap(&store, "app", "free", "1").await;
    let factory = InformerFactory::new(h.registry.clone(), InformerConfig::default());
    let a = factory.informer("", "v1", "configmaps").expect("served");
    let b = factory.informer_for(&store);
    assert!(std::sync::Arc::ptr_eq(a.indexer(), b.indexer()));
    assert!(wait_for_sync(&[&a, &b]).await);
    let owned = a
        .indexer()
        .index_keys(CONTROLLER_UID_INDEX, "u-1")
        .expect("controller index");
    assert_eq!(owned, ["app/owned"]);
    assert!(a
        .indexer()
        .index_keys(CONTROLLER_UID_INDEX, "u-2")
        .expect("controller index")
        .is_empty());
    assert!(matches!(
        factory.informer("", "v1", "nothings"),
        Err(FactoryError::NotServed(_))
    ));
    factory.stop().await;
    assert!(a.is_stopped());
}

/// The pods' controller index also holds each namespace's orphans, under one key, so a
/// controller finds what it may claim without walking the namespace (upstream's
/// FilterPodsByOwner); other kinds' orphans are left out of it.
async fn orphaned_pods_are_indexed_for_adoption(h: &Harness) {
    h.namespace("app").await;
    h.namespace("elsewhere").await;
    let pods = h.registry.store("", "v1", "pods").expect("pods");
    let pod = |ns: &str, name: &str, app: &str, controller: Option<&str>| {
        let refs: Vec<_> = controller
            .map(|uid| {
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                              "uid": uid, "controller": true})
            })
            .into_iter()
            .collect();
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": ns, "labels": {"app": app},
                            "ownerReferences": refs},
               "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    };
    for (ns, name, app, controller) in [
        ("app", "mine", "web", Some("u-1")),
        ("app", "mine-relabelled", "db", Some("u-1")),
        ("app", "theirs", "web", Some("u-2")),
        ("app", "orphan", "web", None),
        ("app", "orphan-unmatched", "db", None),
        ("elsewhere", "orphan", "web", None),
    ] {
        pods.create(
            Some(ns),
            pod(ns, name, app, controller),
            &WriteOptions::default(),
        )
        .await
        .expect("create pod");
    }
    create_configmap(&h.configmaps(), "app", "free", "1").await;
    let factory = InformerFactory::new(h.registry.clone(), InformerConfig::default());
    let informer = factory.informer_for(&pods);
    let configmaps = factory.informer("", "v1", "configmaps").expect("served");
    assert!(wait_for_sync(&[&informer, &configmaps]).await);
    let mut orphans = informer
        .indexer()
        .index_keys(CONTROLLER_UID_INDEX, &orphan_index_key("app"))
        .expect("controller index");
    orphans.sort();
    assert_eq!(orphans, ["app/orphan", "app/orphan-unmatched"]);
    assert!(configmaps
        .indexer()
        .index_keys(CONTROLLER_UID_INDEX, &orphan_index_key("app"))
        .expect("controller index")
        .is_empty());

    let owner = json!({"metadata": {"name": "rs", "namespace": "app", "uid": "u-1"}});
    let selector = LabelSelector::parse("app=web").expect("selector");
    let mut names: Vec<String> = pod_candidates(informer.indexer(), &owner, &selector)
        .expect("candidates")
        .iter()
        .map(|p| registry::object::name(p).to_string())
        .collect();
    names.sort();
    // What it controls (kept or released), and the orphans it may adopt; not another
    // owner's pod, nor an orphan of another namespace or another selector.
    assert_eq!(names, ["mine", "mine-relabelled", "orphan"]);
    factory.stop().await;
}

/// The stored bytes of `ns/name` in the watch cache (a read any state serves comes from it).
async fn cached_bytes(store: &registry::Store, ns: &str, name: &str) -> storage::KeyValue {
    store
        .storage()
        .get(&store.key(Some(ns), name), storage::ReadRevision::Any)
        .await
        .expect("in the watch cache")
}

fn revision_of(obj: &serde_json::Value) -> i64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .expect("numeric resourceVersion")
}

/// Each object is held once: the informer's indexer keeps the watch cache's own allocation,
/// whether the object came by the list or by the watch.
async fn holds_the_watch_caches_bytes_not_a_copy(h: &Harness) {
    h.namespace("app").await;
    let store = h.configmaps();
    let listed = create_configmap(&store, "app", "listed", "1").await;
    // Once the watch cache has it, the informer's first list (served by the cache) does too.
    store
        .storage()
        .get(
            &store.key(Some("app"), "listed"),
            storage::ReadRevision::NotOlderThan(revision_of(&listed)),
        )
        .await
        .expect("cached");
    let informer = SharedInformer::for_store(store.clone(), InformerConfig::default());
    informer.start();
    assert!(informer.wait_for_sync().await);
    let held = informer.indexer().get_encoded("app/listed").expect("held");
    let cached = cached_bytes(&store, "app", "listed").await;
    assert_eq!(held.value.as_ptr(), cached.value.as_ptr());
    assert_eq!(held.revision, cached.mod_revision);

    let updated = update_configmap(&store, "app", "listed", "2").await;
    let created = create_configmap(&store, "app", "watched", "1").await;
    for (key, obj) in [("app/listed", &updated), ("app/watched", &created)] {
        let rv = revision_of(obj);
        eventually(
            &format!("the informer to see {key} at {rv}"),
            std::time::Duration::from_secs(10),
            || {
                informer
                    .indexer()
                    .get_encoded(key)
                    .is_some_and(|e| e.revision == rv)
            },
        )
        .await;
        let held = informer.indexer().get_encoded(key).expect("held");
        let (ns, name) = key.split_once('/').expect("namespaced key");
        let cached = cached_bytes(&store, ns, name).await;
        assert_eq!(held.value.as_ptr(), cached.value.as_ptr(), "{key}");
        // Decoded on demand, it is what the store serves.
        assert_eq!(*informer.indexer().get(key).expect("held"), *obj);
    }
    informer.stop().await;
}

test_support::both_backends!(
    crate::support::Harness, worker_threads = 2;
    the_factory_shares_one_informer_per_resource,
    orphaned_pods_are_indexed_for_adoption,
    delivers_the_list_then_changes_in_order,
    relists_after_compaction_and_reports_the_missed_deletion,
    holds_the_watch_caches_bytes_not_a_copy,
);

/// etcd going away and coming back (with its data) costs the informer nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survives_an_etcd_restart() {
    let mut h = Harness::etcd().await;
    h.namespace("app").await;
    let store = h.configmaps();
    create_configmap(&store, "app", "before", "1").await;
    let informer = SharedInformer::for_store(store.clone(), InformerConfig::default());
    let mut rx = informer.subscribe();
    informer.start();
    assert!(informer.wait_for_sync().await);
    assert_eq!(summary(&next(&mut rx, 1).await), ["add app/before"]);

    let etcd = h.test_backend.etcd_server_mut().expect("etcd");
    etcd.restart().await;
    // Writes may fail until the client reconnects.
    let mut created = false;
    for _ in 0..100 {
        let obj = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "after", "namespace": "app"},
        });
        if store
            .create(
                Some("app"),
                obj,
                &registry::options::WriteOptions::default(),
            )
            .await
            .is_ok()
        {
            created = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(created, "etcd did not come back");
    assert_eq!(summary(&next(&mut rx, 1).await), ["add app/after"]);
    assert_eq!(cached_versions(&informer), store_versions(&store).await);
    informer.stop().await;
}
