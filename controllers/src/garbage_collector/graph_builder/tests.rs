//! Graph mutations: what each change does to the graph and to the work queues.

use std::time::Duration;

use serde_json::json;

use super::*;
use client::workqueue::ItemExponentialFailureRateLimiter;

fn builder() -> GraphBuilder {
    let queue = || {
        RateLimitingQueue::new(
            "",
            ItemExponentialFailureRateLimiter::new(
                Duration::from_millis(1),
                Duration::from_millis(10),
            ),
        )
    };
    // The receiver is not needed: tests apply events directly.
    let (builder, _rx) = GraphBuilder::new(
        queue(),
        queue(),
        AbsentOwnerCache::new(10),
        EventRecorder::log_only("garbage-collector-controller"),
    );
    builder
}

/// Everything queued right now, in order (and marked done).
async fn drain(queue: &RateLimitingQueue<Uid>) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(Some(uid)) = tokio::time::timeout(Duration::ZERO, queue.get()).await {
        queue.done(&uid);
        out.push(uid.to_string());
    }
    out
}

fn reference(uid: &str, kind: &str, block: Option<bool>) -> Value {
    let mut r = json!({"apiVersion": "v1", "kind": kind, "name": format!("n-{uid}"), "uid": uid});
    if let Some(block) = block {
        r["blockOwnerDeletion"] = json!(block);
    }
    r
}

fn object(uid: &str, namespace: &str, owners: Vec<Value>) -> Value {
    json!({"metadata": {
        "name": format!("n-{uid}"),
        "namespace": namespace,
        "uid": uid,
        "ownerReferences": owners,
    }})
}

fn event(kind: EventType, obj: Value) -> GraphEvent {
    GraphEvent {
        kind,
        obj: Arc::new(obj),
        old: None,
        api_version: "v1".into(),
        object_kind: "ConfigMap".into(),
        is_virtual: false,
    }
}

fn update(old: Value, new: Value) -> GraphEvent {
    GraphEvent {
        old: Some(Arc::new(old)),
        ..event(EventType::Update, new)
    }
}

fn dependents(b: &GraphBuilder, uid: &str) -> Vec<String> {
    let mut out: Vec<String> = b
        .read()
        .get(uid)
        .map(|n| n.dependents.iter().map(|d| d.to_string()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

fn is_virtual(b: &GraphBuilder, uid: &str) -> bool {
    b.read().get(uid).is_some_and(|n| n.is_virtual)
}

#[tokio::test]
async fn an_unseen_owner_becomes_a_virtual_node_to_verify() {
    let b = builder();
    b.process(event(
        EventType::Add,
        object("dep", "ns", vec![reference("owner", "ConfigMap", None)]),
    ));
    assert!(is_virtual(&b, "owner"));
    assert_eq!(dependents(&b, "owner"), ["dep"]);
    // The virtual owner is queued so a worker checks whether it exists.
    assert_eq!(drain(&b.attempt_to_delete).await, ["owner"]);
    let identity = b.snapshot("owner").map(|s| s.identity);
    assert_eq!(
        identity.map(|i| i.namespace.to_string()),
        Some("ns".to_string())
    );

    // Observing it makes it real; its dependents stay.
    b.process(event(EventType::Add, object("owner", "ns", vec![])));
    assert!(!is_virtual(&b, "owner"));
    assert_eq!(dependents(&b, "owner"), ["dep"]);
    assert!(drain(&b.attempt_to_delete).await.is_empty());
}

#[tokio::test]
async fn reference_changes_move_edges_and_unblock_owners() {
    let b = builder();
    for owner in ["a", "b", "c"] {
        b.process(event(EventType::Add, object(owner, "ns", vec![])));
    }
    let before = object(
        "dep",
        "ns",
        vec![
            reference("a", "ConfigMap", Some(true)),
            reference("b", "ConfigMap", Some(true)),
        ],
    );
    b.process(event(EventType::Add, before.clone()));
    assert_eq!(dependents(&b, "a"), ["dep"]);
    assert_eq!(dependents(&b, "b"), ["dep"]);
    drain(&b.attempt_to_delete).await;

    // a: reference removed; b: stops blocking; c: added.
    let after = object(
        "dep",
        "ns",
        vec![
            reference("b", "ConfigMap", Some(false)),
            reference("c", "ConfigMap", None),
        ],
    );
    b.process(update(before, after));
    assert!(dependents(&b, "a").is_empty());
    assert_eq!(dependents(&b, "b"), ["dep"]);
    assert_eq!(dependents(&b, "c"), ["dep"]);
    let mut queued = drain(&b.attempt_to_delete).await;
    queued.sort();
    assert_eq!(queued, ["a", "b"], "owners a blocking reference let go of");
}

#[tokio::test]
async fn a_deleted_owner_queues_its_dependents_and_waiting_owners() {
    let b = builder();
    b.process(event(EventType::Add, object("top", "ns", vec![])));
    b.process(event(
        EventType::Add,
        object("mid", "ns", vec![reference("top", "ConfigMap", Some(true))]),
    ));
    b.process(event(
        EventType::Add,
        object(
            "leaf",
            "ns",
            vec![reference("mid", "ConfigMap", Some(true))],
        ),
    ));
    if let Some(top) = b.write().get_mut("top") {
        top.deleting_dependents = true;
    }
    drain(&b.attempt_to_delete).await;

    b.process(event(
        EventType::Delete,
        object("mid", "ns", vec![reference("top", "ConfigMap", Some(true))]),
    ));
    assert!(!b.read().contains("mid"));
    assert!(dependents(&b, "top").is_empty());
    let mut queued = drain(&b.attempt_to_delete).await;
    queued.sort();
    assert_eq!(queued, ["leaf", "top"]);
    // Its dependents will find it absent without a lookup.
    let mid = ObjectReference {
        kind: "ConfigMap".into(),
        api_version: "v1".into(),
        namespace: "ns".into(),
        name: "n-mid".into(),
        uid: "mid".into(),
    };
    assert!(b.absent_owners.has(&mid));
}

#[tokio::test]
async fn deletion_with_finalizers_starts_orphaning_or_foreground() {
    let b = builder();
    b.process(event(EventType::Add, object("orphaner", "ns", vec![])));
    b.process(event(EventType::Add, object("fg", "ns", vec![])));
    b.process(event(
        EventType::Add,
        object("dep", "ns", vec![reference("fg", "ConfigMap", Some(true))]),
    ));
    drain(&b.attempt_to_delete).await;

    let deleting = |uid: &str, finalizer: &str| {
        let mut obj = object(uid, "ns", vec![]);
        obj["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        obj["metadata"]["finalizers"] = json!([finalizer]);
        obj
    };
    b.process(update(
        object("orphaner", "ns", vec![]),
        deleting("orphaner", "orphan"),
    ));
    assert_eq!(drain(&b.attempt_to_orphan).await, ["orphaner"]);
    assert!(drain(&b.attempt_to_delete).await.is_empty());

    b.process(update(
        object("fg", "ns", vec![]),
        deleting("fg", "foregroundDeletion"),
    ));
    let fg = b.snapshot("fg");
    assert!(fg
        .as_ref()
        .is_some_and(|s| s.deleting_dependents && s.being_deleted));
    assert_eq!(drain(&b.attempt_to_delete).await, ["dep", "fg"]);
    // Seeing the same state again is no new transition.
    b.process(update(
        deleting("fg", "foregroundDeletion"),
        deleting("fg", "foregroundDeletion"),
    ));
    assert!(drain(&b.attempt_to_delete).await.is_empty());
}

#[tokio::test]
async fn owners_in_another_namespace_are_suspect() {
    let b = builder();
    b.process(event(EventType::Add, object("owner", "a", vec![])));
    b.process(event(
        EventType::Add,
        object("dep", "b", vec![reference("owner", "ConfigMap", None)]),
    ));
    // Queued so a worker checks the reference in the dependent's own namespace.
    assert_eq!(drain(&b.attempt_to_delete).await, ["dep"]);
    // A cluster-scoped owner may own objects in any namespace.
    b.process(event(EventType::Add, object("node", "", vec![])));
    b.process(event(
        EventType::Add,
        object("pod", "b", vec![reference("node", "ConfigMap", None)]),
    ));
    assert!(drain(&b.attempt_to_delete).await.is_empty());
}

#[tokio::test]
async fn a_virtual_delete_keeps_identities_other_dependents_use() {
    let b = builder();
    // Two dependents name the same owner uid with different kinds.
    b.process(event(
        EventType::Add,
        object("d1", "ns", vec![reference("owner", "Widget", None)]),
    ));
    b.process(event(
        EventType::Add,
        object("d2", "ns", vec![reference("owner", "Gadget", None)]),
    ));
    drain(&b.attempt_to_delete).await;
    let first = b.snapshot("owner").map(|s| s.identity);
    assert_eq!(first.as_ref().map(|i| i.kind.as_str()), Some("Widget"));

    // A worker found the Widget absent: d1 is queued, the node now stands for the Gadget.
    let absent = first.unwrap_or_default();
    b.process(GraphEvent {
        api_version: absent.api_version.clone(),
        object_kind: absent.kind.clone(),
        is_virtual: true,
        ..event(EventType::Delete, absent.to_stub())
    });
    assert!(b.read().contains("owner"));
    let next = b.snapshot("owner").map(|s| s.identity.kind);
    assert_eq!(next.as_deref(), Some("Gadget"));
    assert!(b.absent_owners.has(&absent));
    assert_eq!(drain(&b.attempt_to_delete).await, ["d1"]);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        drain(&b.attempt_to_delete).await,
        ["owner"],
        "rechecked later"
    );

    // d1 is collected (its owner is absent); then the Gadget is found absent too: nobody
    // disagrees any more, and the node goes.
    b.process(event(
        EventType::Delete,
        object("d1", "ns", vec![reference("owner", "Widget", None)]),
    ));
    let gadget = b.snapshot("owner").map(|s| s.identity).unwrap_or_default();
    b.process(GraphEvent {
        api_version: gadget.api_version.clone(),
        object_kind: gadget.kind.clone(),
        is_virtual: true,
        ..event(EventType::Delete, gadget.to_stub())
    });
    assert!(!b.read().contains("owner"));
    assert_eq!(drain(&b.attempt_to_delete).await, ["d2"]);
}

#[tokio::test]
async fn a_virtual_delete_never_removes_an_observed_object_seen_differently() {
    let b = builder();
    b.process(event(EventType::Add, object("owner", "ns", vec![])));
    b.process(event(
        EventType::Add,
        object("dep", "ns", vec![reference("owner", "Widget", None)]),
    ));
    drain(&b.attempt_to_delete).await;
    let wrong = ObjectReference {
        kind: "Widget".into(),
        api_version: "v1".into(),
        namespace: "ns".into(),
        name: "n-owner".into(),
        uid: "owner".into(),
    };
    b.process(GraphEvent {
        object_kind: "Widget".into(),
        is_virtual: true,
        ..event(EventType::Delete, wrong.to_stub())
    });
    assert!(b.read().contains("owner"));
    assert!(!is_virtual(&b, "owner"));
    assert_eq!(drain(&b.attempt_to_delete).await, ["dep"]);
}

#[tokio::test]
async fn blocking_dependents_follow_block_owner_deletion() {
    let b = builder();
    b.process(event(EventType::Add, object("owner", "ns", vec![])));
    b.process(event(
        EventType::Add,
        object("x", "ns", vec![reference("owner", "ConfigMap", Some(true))]),
    ));
    b.process(event(
        EventType::Add,
        object(
            "y",
            "ns",
            vec![reference("owner", "ConfigMap", Some(false))],
        ),
    ));
    b.process(event(
        EventType::Add,
        object("z", "ns", vec![reference("owner", "ConfigMap", None)]),
    ));
    let blocking: Vec<String> = b
        .blocking_dependents("owner")
        .into_iter()
        .map(|(u, _)| u.to_string())
        .collect();
    assert_eq!(blocking, ["x"]);
    assert_eq!(b.dependents_state("owner"), (true, false));
    assert!(b.caught_up());
}
