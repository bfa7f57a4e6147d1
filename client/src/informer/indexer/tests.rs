use std::sync::atomic::{AtomicUsize, Ordering};

use registry::selector::labels::LabelSelector;
use serde_json::json;

use super::*;
use crate::informer::fake::encode;

fn obj(ns: &str, name: &str, rv: u32, owner: Option<&str>) -> Encoded {
    let mut o =
        json!({"metadata": {"namespace": ns, "name": name, "resourceVersion": rv.to_string()}});
    if let Some(uid) = owner {
        o["metadata"]["ownerReferences"] = json!([{"uid": uid}]);
    }
    encode(&o)
}

fn owner_index(obj: &Value) -> Vec<String> {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r["uid"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The owner index, counting how often it reads an object: it reads one only when the
/// indexer decodes one to index it.
fn counted_owner_index(reads: Arc<AtomicUsize>) -> IndexFunc {
    Arc::new(move |obj: &Value| {
        reads.fetch_add(1, Ordering::SeqCst);
        owner_index(obj)
    })
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn names(objs: Vec<Arc<Value>>) -> Vec<String> {
    sorted(
        objs.iter()
            .map(|o| {
                o["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect(),
    )
}

#[test]
fn indices_follow_adds_updates_and_deletes_reading_each_object_once() {
    let reads = Arc::new(AtomicUsize::new(0));
    let idx = Indexer::with_namespace_index(Decoder::default());
    idx.add_index("owner", counted_owner_index(reads.clone()))
        .expect("new index");
    idx.add(obj("a", "x", 1, Some("u1"))).expect("decodes");
    idx.add(obj("a", "y", 2, Some("u1"))).expect("decodes");
    idx.add(obj("b", "z", 3, None)).expect("decodes");
    assert_eq!(reads.load(Ordering::SeqCst), 3);
    assert_eq!(
        names(idx.by_index(NAMESPACE_INDEX, "a").expect("index")),
        ["x", "y"]
    );
    assert_eq!(
        names(idx.by_index("owner", "u1").expect("index")),
        ["x", "y"]
    );

    // An update moves the object from one index value to another; the old state is not
    // read again to find where it was.
    idx.update(obj("a", "y", 4, Some("u2"))).expect("decodes");
    assert_eq!(reads.load(Ordering::SeqCst), 4);
    assert_eq!(names(idx.by_index("owner", "u1").expect("index")), ["x"]);
    assert_eq!(idx.index_keys("owner", "u2").expect("index"), ["a/y"]);

    // Nor on a deletion.
    let gone = idx.delete("a/x").expect("held");
    assert_eq!(reads.load(Ordering::SeqCst), 4);
    assert_eq!((gone.key.as_str(), gone.revision), ("a/x", 1));
    assert!(idx.by_index("owner", "u1").expect("index").is_empty());
    // Values with no objects left disappear.
    assert_eq!(sorted(idx.index_values("owner").expect("index")), ["u2"]);
    assert_eq!(sorted(idx.list_keys()), ["a/y", "b/z"]);
    assert!(matches!(
        idx.by_index("nope", "a"),
        Err(IndexerError::NoSuchIndex(_))
    ));
}

#[test]
fn objects_are_held_as_stored_and_decoded_on_demand() {
    let idx = Indexer::with_namespace_index(Decoder::default());
    let stored = obj("a", "x", 7, None);
    assert!(!stored.value.windows(15).any(|w| w == b"resourceVersion"));
    let handed = idx.add(stored.clone()).expect("decodes");
    assert_eq!(handed["metadata"]["resourceVersion"], "7");

    // The very bytes handed in, not a copy.
    let held = idx.get_encoded("a/x").expect("held");
    assert_eq!(held.value.as_ptr(), stored.value.as_ptr());
    assert_eq!(held, stored);

    // Each read decodes afresh, stamping the revision as the registry does.
    let first = idx.get("a/x").expect("held");
    let again = idx.get("a/x").expect("held");
    assert!(!Arc::ptr_eq(&first, &again));
    assert_eq!(first, again);
    assert_eq!(*first, *handed);
    assert_eq!(idx.list(), vec![first]);
    assert!(idx.get("a/nope").is_none());
}

#[test]
fn undecodable_objects_are_refused_and_leave_the_indices_alone() {
    let idx = Indexer::with_namespace_index(Decoder::default());
    let broken = Encoded {
        key: "a/x".into(),
        value: bytes::Bytes::from_static(b"{not json"),
        revision: 1,
    };
    assert!(matches!(
        idx.add(broken.clone()),
        Err(IndexerError::Decode { ref key, .. }) if key == "a/x"
    ));
    idx.replace(vec![broken, obj("a", "y", 2, None)]);
    assert_eq!(idx.list_keys(), ["a/y"]);
    assert_eq!(
        idx.index_keys(NAMESPACE_INDEX, "a").expect("index"),
        ["a/y"]
    );
}

#[test]
fn replace_rebuilds_indices_and_late_indices_see_existing_objects() {
    let idx = Indexer::with_namespace_index(Decoder::default());
    idx.add(obj("a", "x", 1, Some("u1"))).expect("decodes");
    idx.replace(vec![obj("b", "y", 2, Some("u1")), obj("b", "z", 3, None)]);
    assert!(idx.get("a/x").is_none());
    assert!(idx
        .by_index(NAMESPACE_INDEX, "a")
        .expect("index")
        .is_empty());
    assert_eq!(
        names(idx.by_index(NAMESPACE_INDEX, "b").expect("index")),
        ["y", "z"]
    );

    idx.add_index("owner", Arc::new(owner_index))
        .expect("new index");
    assert_eq!(idx.index_keys("owner", "u1").expect("index"), ["b/y"]);
    // The late index is kept up as the first one is.
    idx.delete("b/y");
    assert!(idx.index_values("owner").expect("index").is_empty());
    assert_eq!(
        idx.index_keys(NAMESPACE_INDEX, "b").expect("index"),
        ["b/z"]
    );
    assert!(matches!(
        idx.add_index("owner", Arc::new(owner_index)),
        Err(IndexerError::IndexExists(_))
    ));
    assert_eq!(idx.len(), 1);
}

fn pod(ns: &str, name: &str, rv: u32, labels: Value, controller: Option<&str>) -> Encoded {
    let mut o = json!({"metadata": {"namespace": ns, "name": name,
        "resourceVersion": rv.to_string(), "labels": labels}});
    if let Some(uid) = controller {
        o["metadata"]["ownerReferences"] =
            json!([{"uid": "someone", "controller": false}, {"uid": uid, "controller": true}]);
    }
    encode(&o)
}

fn selector(text: &str) -> LabelSelector {
    LabelSelector::parse(text).expect("selector")
}

#[test]
fn selections_decode_only_what_the_labels_and_controller_pick() {
    let idx = Indexer::with_namespace_index(Decoder::default());
    for i in 0..10 {
        let app = if i % 2 == 0 { "web" } else { "db" };
        let controller = (i < 3).then_some("rs-1");
        idx.add(pod(
            "a",
            &format!("p{i}"),
            i + 1,
            json!({"app": app, "tier": "front"}),
            controller,
        ))
        .expect("decodes");
    }
    idx.add(pod("b", "other", 20, json!({"app": "web"}), None))
        .expect("decodes");
    let web = selector("app=web,tier in (front,back)");
    let before = idx.decodes();

    let picked = idx
        .by_index_selected(NAMESPACE_INDEX, "a", |s| s.labels().matches(&web))
        .expect("index");
    assert_eq!(names(picked), ["p0", "p2", "p4", "p6", "p8"]);
    assert_eq!(idx.decodes() - before, 5);

    // What claiming looks at: matching orphans and whatever the owner controls.
    let before = idx.decodes();
    let claimable = idx
        .by_index_selected(NAMESPACE_INDEX, "a", |s| match s.controller_uid() {
            Some(uid) => uid == "rs-1",
            None => s.labels().matches(&web),
        })
        .expect("index");
    assert_eq!(names(claimable), ["p0", "p1", "p2", "p4", "p6", "p8"]);
    assert_eq!(idx.decodes() - before, 6);

    let before = idx.decodes();
    let app_web = selector("app=web");
    let everywhere = idx.list_selected(|s| s.labels().matches(&app_web) && s.name() != "p0");
    assert_eq!(names(everywhere), ["other", "p2", "p4", "p6", "p8"]);
    assert_eq!(idx.decodes() - before, 5);

    // The summary says what the decoded object says.
    let before = idx.decodes();
    let none = idx
        .by_index_selected(NAMESPACE_INDEX, "a", |s| {
            assert_eq!(s.key(), format!("a/{}", s.name()));
            assert_eq!(s.labels().len(), 2);
            assert_eq!(s.labels().get("tier"), Some("front"));
            assert_eq!(s.labels().get("nope"), None);
            false
        })
        .expect("index");
    assert!(none.is_empty());
    assert_eq!(idx.decodes(), before);
    assert!(matches!(
        idx.by_index_selected("nope", "a", |_| true),
        Err(IndexerError::NoSuchIndex(_))
    ));
}

#[test]
fn labels_are_held_once_follow_updates_and_go_with_the_objects() {
    let idx = Indexer::with_namespace_index(Decoder::default());
    for i in 0..100 {
        idx.add(pod(
            "a",
            &format!("p{i}"),
            i + 1,
            json!({"app": "web", "hash": "h1"}),
            Some("rs-1"),
        ))
        .expect("decodes");
    }
    // app, web, hash, h1, rs-1; one record for all hundred.
    assert_eq!(idx.interned_sizes(), (5, 1));

    // A non-string value is no label a selector can match; a value equal to a key and the
    // controller's uid are each held once.
    idx.update(pod(
        "a",
        "p0",
        200,
        json!({"app": "app", "uid": "rs-1", "n": 5}),
        Some("rs-1"),
    ))
    .expect("decodes");
    assert_eq!(idx.interned_sizes(), (6, 2));
    let app_app = selector("app=app");
    let both = |s: &Summary<'_>| s.labels().matches(&app_app) && s.labels().get("n").is_none();
    assert_eq!(names(idx.list_selected(both)), ["p0"]);
    let web = selector("app=web");
    let webs = idx.list_selected(|s| s.labels().matches(&web));
    assert_eq!(webs.len(), 99);

    // Its old labels back, as an orphan: the strings are shared again, "uid" goes.
    idx.update(pod(
        "a",
        "p0",
        201,
        json!({"hash": "h1", "app": "web"}),
        None,
    ))
    .expect("decodes");
    assert_eq!(idx.interned_sizes(), (5, 2));
    assert_eq!(idx.list_selected(|s| s.labels().matches(&web)).len(), 100);
    assert_eq!(
        names(idx.list_selected(|s| s.controller_uid().is_none())),
        ["p0"]
    );
    // Adopted again: the record it had is the shared one once more.
    idx.update(pod(
        "a",
        "p0",
        202,
        json!({"app": "web", "hash": "h1"}),
        Some("rs-1"),
    ))
    .expect("decodes");
    assert_eq!(idx.interned_sizes(), (5, 1));
    assert!(idx
        .list_selected(|s| s.controller_uid().is_none())
        .is_empty());

    for i in 0..100 {
        idx.delete(&format!("a/p{i}")).expect("held");
    }
    assert_eq!(idx.interned_sizes(), (0, 0));

    idx.add(pod("a", "x", 1, json!({"app": "web"}), Some("rs-1")))
        .expect("decodes");
    idx.replace(vec![pod("b", "y", 2, json!({"k": "v"}), None)]);
    assert_eq!(idx.interned_sizes(), (2, 1));
    let k = selector("k");
    assert_eq!(names(idx.list_selected(|s| s.labels().matches(&k))), ["y"]);
}
