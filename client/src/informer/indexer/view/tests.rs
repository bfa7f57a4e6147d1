use serde_json::json;

use super::*;
use crate::informer::fake::encode;
use crate::informer::indexer::NAMESPACE_INDEX;
use registry::store::Decoder;

/// A view that reads one field, and says which revision it was built from.
#[derive(Debug)]
struct Phase {
    revision: i64,
    phase: String,
    _marks: Arc<Marks>,
}

impl View for Phase {
    const FIELDS: Projection =
        Projection::Only(&[("status", Projection::Only(&[("phase", Projection::All)]))]);

    fn build(_key: &Arc<str>, marks: &Arc<Marks>, revision: i64, obj: &Value) -> Self {
        Self {
            revision,
            phase: obj["status"]["phase"].as_str().unwrap_or_default().into(),
            _marks: marks.clone(),
        }
    }
}

/// Another view of the same objects.
struct Name(String);

impl View for Name {
    const FIELDS: Projection =
        Projection::Only(&[("metadata", Projection::Only(&[("name", Projection::All)]))]);

    fn build(_key: &Arc<str>, _marks: &Arc<Marks>, _revision: i64, obj: &Value) -> Self {
        Self(obj["metadata"]["name"].as_str().unwrap_or_default().into())
    }
}

fn pod(name: &str, rv: u32, phase: &str, labels: Value) -> registry::store::Encoded {
    encode(&json!({
        "metadata": {"namespace": "a", "name": name, "resourceVersion": rv.to_string(),
            "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
        "status": {"phase": phase},
    }))
}

fn phases(idx: &Indexer) -> Vec<(i64, String)> {
    let mut seen: Vec<(i64, String)> = idx
        .by_index_view::<Phase>(NAMESPACE_INDEX, "a", |_| true)
        .expect("index")
        .iter()
        .map(|v| (v.revision, v.phase.clone()))
        .collect();
    seen.sort();
    seen
}

fn p(revision: i64, phase: &str) -> (i64, String) {
    (revision, phase.to_string())
}

#[test]
fn a_view_is_built_once_per_revision_and_goes_with_it() {
    let idx = Indexer::with_namespace_index(Decoder::default());
    for (i, name) in ["x", "y", "z"].iter().enumerate() {
        idx.add(pod(name, i as u32 + 1, "Pending", json!({})))
            .expect("decodes");
    }
    let before = idx.decodes();
    let first = phases(&idx);
    assert_eq!(first, [p(1, "Pending"), p(2, "Pending"), p(3, "Pending")]);
    assert_eq!(idx.decodes() - before, 3);

    // Unchanged objects: the kept views, nothing decoded.
    let before = idx.decodes();
    let kept = idx
        .by_index_view::<Phase>(NAMESPACE_INDEX, "a", |s| s.name() == "x")
        .expect("index");
    let again = idx
        .by_index_view::<Phase>(NAMESPACE_INDEX, "a", |s| s.name() == "x")
        .expect("index");
    assert!(Arc::ptr_eq(&kept[0], &again[0]));
    assert_eq!(phases(&idx), first);
    assert_eq!(idx.decodes(), before);

    // A new revision is read afresh, the others are not.
    idx.update(pod("y", 7, "Running", json!({})))
        .expect("decodes");
    let before = idx.decodes();
    assert_eq!(
        phases(&idx),
        [p(1, "Pending"), p(3, "Pending"), p(7, "Running")]
    );
    assert_eq!(idx.decodes() - before, 1);

    // A deleted object's view goes with it, and one added under its key is read anew.
    idx.delete("a/x").expect("held");
    assert_eq!(phases(&idx), [p(3, "Pending"), p(7, "Running")]);
    idx.add(pod("x", 9, "Failed", json!({}))).expect("decodes");
    assert_eq!(
        phases(&idx),
        [p(3, "Pending"), p(7, "Running"), p(9, "Failed")]
    );

    // A relist replaces every object, views and all.
    idx.replace(vec![pod("z", 10, "Succeeded", json!({}))]);
    let before = idx.decodes();
    assert_eq!(phases(&idx), [p(10, "Succeeded")]);
    assert_eq!(idx.decodes() - before, 1);
}

#[test]
fn a_view_of_a_revision_since_replaced_is_not_kept() {
    let idx = Indexer::with_namespace_index(Decoder::default());
    idx.add(pod("x", 1, "Pending", json!({}))).expect("decodes");
    let marks = match &idx
        .by_index_walk(NAMESPACE_INDEX, "a", |_| true, look::<Phase>)
        .expect("index")[..]
    {
        [Looked::Missing { marks, .. }] => marks.clone(),
        _ => panic!("nothing kept yet"),
    };
    // The object changes while a reader builds its view from the bytes it took.
    idx.update(pod("x", 2, "Running", json!({})))
        .expect("decodes");
    let stale = Phase {
        revision: 1,
        phase: "Pending".into(),
        _marks: marks,
    };
    idx.keep_views(vec![(Arc::from("a/x"), 1, Arc::new(stale))]);
    assert_eq!(phases(&idx), [p(2, "Running")]);
}

#[test]
fn a_second_view_type_is_read_right_but_not_kept() {
    let idx = Indexer::with_namespace_index(Decoder::default());
    idx.add(pod("x", 1, "Pending", json!({}))).expect("decodes");
    assert_eq!(phases(&idx), [p(1, "Pending")]);
    for _ in 0..2 {
        let before = idx.decodes();
        let names = idx
            .by_index_view::<Name>(NAMESPACE_INDEX, "a", |_| true)
            .expect("index");
        assert_eq!(
            names.iter().map(|n| n.0.as_str()).collect::<Vec<_>>(),
            ["x"]
        );
        assert_eq!(idx.decodes() - before, 1);
    }
    let before = idx.decodes();
    assert_eq!(phases(&idx), [p(1, "Pending")]);
    assert_eq!(idx.decodes(), before);
}

#[test]
fn views_held_past_their_objects_leave_no_labels_interned() {
    let idx = Indexer::with_namespace_index(Decoder::default());
    idx.add(pod("gone", 1, "Running", json!({"app": "old"})))
        .expect("decodes");
    for (i, name) in ["q1", "q2"].iter().enumerate() {
        idx.add(pod(name, i as u32 + 2, "Running", json!({"app": "new"})))
            .expect("decodes");
    }
    let held = idx
        .by_index_view::<Phase>(NAMESPACE_INDEX, "a", |s| s.name() == "gone")
        .expect("index");
    idx.delete("a/gone").expect("held");
    // A reader still holds the record of "gone": it stays while held.
    assert_eq!(idx.interned_sizes(), (3, 2));
    drop(held);
    // Releases that pass over the shared record of q1 and q2 sweep the orphan out.
    idx.update(pod("q1", 4, "Running", json!({"app": "new"})))
        .expect("decodes");
    idx.update(pod("q2", 5, "Running", json!({"app": "new"})))
        .expect("decodes");
    assert_eq!(idx.interned_sizes(), (2, 1));
    // What the sweep leaves is still shared and released as ever.
    idx.delete("a/q1").expect("held");
    idx.delete("a/q2").expect("held");
    assert_eq!(idx.interned_sizes(), (0, 0));
}
