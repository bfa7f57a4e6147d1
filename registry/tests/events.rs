//! Events: core/v1 and events.k8s.io/v1 are one storage in two shapes; field selectors of
//! either API work on it; each API validates as upstream; events expire after the event ttl.

mod support;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use registry::options::ListOptions;
use registry::strategy::StrategyConfig;
use registry::{Catalogue, Registry, RegistryError, Subresource, WatchEventType};
use serde_json::{json, Value};
use storage::CacherConfig;
use support::{list, write, Harness};
use test_support::{names, TestBackend};

test_support::both_backends!(
    crate::support::Harness;
    one_storage_two_shapes,
    field_selectors_of_both_apis,
    each_api_validates_as_upstream,
);

fn core_event(name: &str, pod: &str, uid: &str, reason: &str, kind: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": pod, "namespace": "default", "uid": uid,
                           "apiVersion": "v1"},
        "reason": reason, "message": format!("{reason} {pod}"), "type": kind,
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:01:00Z",
        "count": 2,
    })
}

fn events_v1_event(name: &str, pod: &str) -> Value {
    json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "regarding": {"kind": "Pod", "name": pod, "namespace": "default"},
        "reason": "Scheduled", "note": format!("assigned {pod}"), "type": "Normal",
        "eventTime": "2024-01-01T00:00:00.000000Z", "action": "Binding",
        "reportingController": "default-scheduler", "reportingInstance": "scheduler-1",
    })
}

fn selecting(fields: &str) -> ListOptions {
    ListOptions {
        field_selector: Some(fields.into()),
        ..Default::default()
    }
}

async fn one_storage_two_shapes(h: &Harness) {
    let (core, v1) = (h.store("", "events"), h.store("events.k8s.io", "events"));
    core.create(
        Some("default"),
        core_event("started", "web", "u1", "Started", "Normal"),
        &write(),
    )
    .await
    .expect("create through core/v1");
    let seen = v1
        .get(Some("default"), "started", &list())
        .await
        .expect("get");
    assert_eq!(seen["apiVersion"], "events.k8s.io/v1");
    assert_eq!(seen["regarding"]["name"], "web");
    assert_eq!(seen["note"], "Started web");
    assert_eq!(seen["deprecatedSource"]["component"], "kubelet");
    assert_eq!(seen["deprecatedCount"], 2);
    assert_eq!(seen["deprecatedLastTimestamp"], "2024-01-01T00:01:00Z");
    assert!(seen.get("involvedObject").is_none() && seen.get("message").is_none());
    let json: Value = serde_json::from_slice(
        &v1.get_json(Some("default"), "started", &list())
            .await
            .expect("get json")
            .to_vec(),
    )
    .expect("json");
    assert_eq!(
        json["regarding"]["name"], "web",
        "the raw path converts too"
    );

    // Written back through events.k8s.io/v1: stored in the core shape, answered in its own.
    let mut labelled = seen.clone();
    labelled["metadata"]["labels"] = json!({"seen": "yes"});
    let (updated, _) = v1
        .update(
            Some("default"),
            "started",
            labelled,
            Subresource::Main,
            &write(),
        )
        .await
        .expect("update through events.k8s.io/v1");
    assert_eq!(updated["note"], "Started web");
    let back = core
        .get(Some("default"), "started", &list())
        .await
        .expect("get");
    assert_eq!(back["apiVersion"], "v1");
    assert_eq!(back["involvedObject"]["uid"], "u1");
    assert_eq!(back["message"], "Started web");
    assert_eq!(back["source"]["host"], "node-1");
    assert_eq!(back["metadata"]["labels"]["seen"], "yes");

    // Created through events.k8s.io/v1, read through core/v1.
    let created = v1
        .create(Some("default"), events_v1_event("bound", "web"), &write())
        .await
        .expect("create through events.k8s.io/v1");
    assert_eq!(created["apiVersion"], "events.k8s.io/v1");
    assert_eq!(created["regarding"]["name"], "web");
    let bound = core
        .get(Some("default"), "bound", &list())
        .await
        .expect("get");
    assert_eq!(bound["involvedObject"]["name"], "web");
    assert_eq!(bound["reportingComponent"], "default-scheduler");
    assert_eq!(bound["message"], "assigned web");
    assert_eq!(
        names(&v1.list(Some("default"), &list()).await.expect("list")),
        ["bound", "started"]
    );

    // A watch through either API shows every event in its own shape.
    let mut watch = v1
        .watch(Some("default"), None, &list())
        .await
        .expect("watch");
    let mut added = 0;
    while added < 2 {
        let event = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("in time")
            .expect("event");
        if event.kind == WatchEventType::Bookmark {
            continue;
        }
        added += 1;
        assert_eq!(event.kind, WatchEventType::Added);
        assert_eq!(event.object["apiVersion"], "events.k8s.io/v1");
        assert_eq!(event.object["regarding"]["name"], "web");
    }
}

async fn field_selectors_of_both_apis(h: &Harness) {
    let (core, v1) = (h.store("", "events"), h.store("events.k8s.io", "events"));
    for (name, pod, uid, reason, kind) in [
        ("a", "web", "u1", "Started", "Normal"),
        ("b", "web", "u1", "BackOff", "Warning"),
        ("c", "db", "u2", "Started", "Normal"),
    ] {
        core.create(
            Some("default"),
            core_event(name, pod, uid, reason, kind),
            &write(),
        )
        .await
        .expect("create");
    }
    v1.create(Some("default"), events_v1_event("d", "web"), &write())
        .await
        .expect("create");
    // What `kubectl describe pod web` asks.
    let describe = "involvedObject.name=web,involvedObject.namespace=default,involvedObject.uid=u1";
    let cases = [
        (&core, describe, vec!["a", "b"]),
        (&core, "involvedObject.name=web", vec!["a", "b", "d"]),
        (
            &core,
            "involvedObject.kind=Pod,reason=Started",
            vec!["a", "c"],
        ),
        (&core, "type=Warning", vec!["b"]),
        (&core, "source=kubelet", vec!["a", "b", "c"]),
        (&core, "reportingComponent=default-scheduler", vec!["d"]),
        (&v1, "regarding.name=web", vec!["a", "b", "d"]),
        (&v1, "regarding.uid=u2", vec!["c"]),
        (&v1, "reportingController=default-scheduler", vec!["d"]),
        (&v1, "reason=Started,type=Normal", vec!["a", "c"]),
        (&v1, "regarding.name!=web", vec!["c"]),
    ];
    for (store, selector, expected) in cases {
        let listed = store
            .list(Some("default"), &selecting(selector))
            .await
            .unwrap_or_else(|e| panic!("{selector}: {e}"));
        assert_eq!(names(&listed), expected, "{selector}");
    }
    // Each API knows only its own field names.
    for (store, selector) in [
        (&v1, "involvedObject.name=web"),
        (&core, "regarding.name=web"),
    ] {
        let refused = store.list(Some("default"), &selecting(selector)).await;
        assert!(
            matches!(refused, Err(RegistryError::BadRequest(_))),
            "{selector}: {refused:?}"
        );
    }
    // Watches select on the served shape too.
    let mut watch = v1
        .watch(Some("default"), None, &selecting("regarding.name=db"))
        .await
        .expect("watch");
    let first = loop {
        let event = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("in time")
            .expect("event");
        if event.kind != WatchEventType::Bookmark {
            break event;
        }
    };
    assert_eq!(first.object["metadata"]["name"], "c");
}

fn invalid_fields(result: registry::Result<Value>) -> Vec<String> {
    match result {
        Err(RegistryError::Invalid { causes, .. }) => {
            let mut fields: Vec<String> = causes.into_iter().map(|c| c.field).collect();
            // One field may fail several ways (required, and not a qualified name).
            fields.dedup();
            fields
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

async fn each_api_validates_as_upstream(h: &Harness) {
    let (core, v1) = (h.store("", "events"), h.store("events.k8s.io", "events"));
    // core/v1 keeps the legacy rules: an old-style event's object is in its namespace.
    let mut elsewhere = core_event("x", "web", "u1", "Started", "Normal");
    elsewhere["involvedObject"]["namespace"] = json!("other");
    assert_eq!(
        invalid_fields(core.create(Some("default"), elsewhere, &write()).await),
        ["involvedObject.namespace"]
    );
    // events.k8s.io/v1 is strict: a new-style event, none of the deprecated fields.
    let mut old_style = events_v1_event("y", "web");
    old_style.as_object_mut().map(|m| m.remove("eventTime"));
    old_style["deprecatedCount"] = json!(3);
    old_style["type"] = json!("Odd");
    assert_eq!(
        invalid_fields(v1.create(Some("default"), old_style, &write()).await),
        ["eventTime", "type", "count"]
    );
    let mut unreported = events_v1_event("z", "web");
    unreported["reportingController"] = json!("");
    assert_eq!(
        invalid_fields(v1.create(Some("default"), unreported, &write()).await),
        ["reportingController"]
    );
    // A core event a legacy client wrote is still readable and labellable through the new API,
    // but its note is fixed.
    core.create(
        Some("default"),
        core_event("w", "web", "u1", "Started", "Normal"),
        &write(),
    )
    .await
    .expect("create");
    let mut changed = v1.get(Some("default"), "w", &list()).await.expect("get");
    changed["note"] = json!("rewritten");
    let refused = v1
        .update(Some("default"), "w", changed, Subresource::Main, &write())
        .await
        .map(|(obj, _)| obj);
    assert_eq!(invalid_fields(refused), ["message"]);
}

/// The event ttl comes from the server's configuration; an expired event leaves both APIs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_expire_after_the_event_ttl() {
    let test_backend = TestBackend::embedded().await;
    let backend = storage::backend::open(&test_backend.etcd_servers(), test_backend.data_dir())
        .await
        .expect("open");
    let registry = Registry::with_config(
        storage::KvStore::new(backend, "/registry"),
        Arc::new(Catalogue::builtin()),
        CacherConfig::default(),
        StrategyConfig {
            event_ttl: Duration::from_secs(1),
            ..Default::default()
        },
    );
    registry.bootstrap().await.expect("bootstrap");
    let core = registry.store("", "v1", "events").expect("core events");
    let v1 = registry
        .store("events.k8s.io", "v1", "events")
        .expect("events.k8s.io events");
    let mut watch = v1
        .watch(Some("default"), None, &list())
        .await
        .expect("watch");
    core.create(
        Some("default"),
        core_event("brief", "web", "u1", "Started", "Normal"),
        &write(),
    )
    .await
    .expect("create");
    let mut kinds = Vec::new();
    while kinds.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("expired in time")
            .expect("event");
        if event.kind == WatchEventType::Bookmark {
            continue;
        }
        kinds.push(event.kind);
        assert_eq!(event.object["regarding"]["name"], "web");
    }
    assert_eq!(kinds, [WatchEventType::Added, WatchEventType::Deleted]);
    assert!(matches!(
        core.get(Some("default"), "brief", &list()).await,
        Err(RegistryError::NotFound { .. })
    ));
}
