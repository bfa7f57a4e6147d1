use std::sync::Arc;
use std::time::Duration;

use registry::store::Decoder;
use serde_json::json;

use super::*;
use crate::informer::fake::encode;
use crate::informer::indexer::Indexer;

fn obj(name: &str, rv: &str) -> Encoded {
    encode(&json!({"metadata": {"namespace": "ns", "name": name, "resourceVersion": rv}}))
}

fn kinds(fifo: &DeltaFifo, key: &str) -> Vec<DeltaType> {
    fifo.get(key)
        .unwrap_or_default()
        .iter()
        .map(|d| d.kind)
        .collect()
}

fn rv_of(d: &Delta) -> Option<String> {
    d.object.object().map(|o| o.revision.to_string())
}

async fn pop_all(fifo: &DeltaFifo) -> Vec<(String, Vec<DeltaType>)> {
    let mut out = Vec::new();
    while !fifo.is_empty() {
        let deltas = fifo.pop(|_| Ok(())).await.expect("pop");
        let key = deltas
            .last()
            .and_then(|d| d.object.key().ok())
            .unwrap_or_default();
        out.push((key, deltas.iter().map(|d| d.kind).collect()));
    }
    out
}

#[tokio::test]
async fn deltas_accumulate_per_key_in_first_change_order() {
    let fifo = DeltaFifo::new(None);
    fifo.add(obj("a", "1")).expect("add");
    fifo.add(obj("b", "2")).expect("add");
    fifo.update(obj("a", "3")).expect("update");
    fifo.delete(obj("a", "3")).expect("delete");
    assert_eq!(fifo.queued_keys(), ["ns/a", "ns/b"]);
    let deltas = fifo.get("ns/a").expect("queued");
    assert_eq!(
        deltas.iter().map(|d| d.kind).collect::<Vec<_>>(),
        [DeltaType::Added, DeltaType::Updated, DeltaType::Deleted]
    );
    assert_eq!(
        deltas.iter().filter_map(rv_of).collect::<Vec<_>>(),
        ["1", "3", "3"]
    );
    assert_eq!(
        pop_all(&fifo).await,
        [
            (
                "ns/a".to_string(),
                vec![DeltaType::Added, DeltaType::Updated, DeltaType::Deleted]
            ),
            ("ns/b".to_string(), vec![DeltaType::Added]),
        ]
    );
}

#[tokio::test]
async fn consecutive_deletions_collapse_keeping_the_most_informative() {
    let fifo = DeltaFifo::new(None);
    fifo.add(obj("a", "1")).expect("add");
    fifo.delete(obj("a", "2")).expect("delete");
    fifo.delete(obj("a", "3")).expect("delete");
    // Two real deletions: the later one stays.
    let deltas = fifo.get("ns/a").expect("queued");
    assert_eq!(deltas.len(), 2);
    assert_eq!(rv_of(&deltas[1]).as_deref(), Some("3"));

    // A tombstone after a real deletion knows less: the real one stays.
    let tombstone = DeletedFinalStateUnknown {
        key: "ns/a".into(),
        obj: Some(obj("a", "1")),
    };
    fifo.delete(tombstone).expect("delete");
    let deltas = fifo.get("ns/a").expect("queued");
    assert_eq!(deltas.len(), 2);
    assert!(!deltas[1].object.is_tombstone());
    assert_eq!(rv_of(&deltas[1]).as_deref(), Some("3"));

    // A real deletion after a tombstone replaces it.
    let fifo = DeltaFifo::new(None);
    fifo.add(obj("b", "1")).expect("add");
    fifo.delete(DeletedFinalStateUnknown {
        key: "ns/b".into(),
        obj: None,
    })
    .expect("delete");
    fifo.delete(obj("b", "5")).expect("delete");
    let deltas = fifo.get("ns/b").expect("queued");
    assert_eq!(kinds(&fifo, "ns/b"), [DeltaType::Added, DeltaType::Deleted]);
    assert_eq!(rv_of(&deltas[1]).as_deref(), Some("5"));
}

#[tokio::test]
async fn deleting_an_unknown_unqueued_object_is_ignored() {
    let fifo = DeltaFifo::new(None);
    fifo.delete(obj("ghost", "1")).expect("delete");
    assert!(fifo.is_empty());

    let known = Arc::new(Indexer::new(Decoder::default()));
    known.add(obj("k", "1")).expect("decodes");
    let fifo = DeltaFifo::new(Some(known));
    fifo.delete(obj("ghost", "1")).expect("delete");
    assert!(fifo.is_empty());
    fifo.delete(obj("k", "2")).expect("delete");
    assert_eq!(kinds(&fifo, "ns/k"), [DeltaType::Deleted]);
}

#[tokio::test]
async fn replace_without_known_objects_detects_vanished_queued_items() {
    let fifo = DeltaFifo::new(None);
    fifo.add(obj("a", "1")).expect("add");
    fifo.add(obj("b", "2")).expect("add");
    fifo.replace(vec![obj("b", "3"), obj("c", "4")], "10")
        .expect("replace");
    assert_eq!(
        kinds(&fifo, "ns/b"),
        [DeltaType::Added, DeltaType::Replaced]
    );
    assert_eq!(kinds(&fifo, "ns/c"), [DeltaType::Replaced]);
    assert_eq!(kinds(&fifo, "ns/a"), [DeltaType::Added, DeltaType::Deleted]);
    let deltas = fifo.get("ns/a").expect("queued");
    let DeltaObject::DeletedFinalStateUnknown(t) = &deltas[1].object else {
        panic!("expected a tombstone, got {:?}", deltas[1].object);
    };
    assert_eq!(t.key, "ns/a");
    assert_eq!(t.obj, Some(obj("a", "1")));

    // Replacing again does not stack a second deletion on the first.
    fifo.replace(vec![obj("b", "3"), obj("c", "4")], "11")
        .expect("replace");
    assert_eq!(kinds(&fifo, "ns/a"), [DeltaType::Added, DeltaType::Deleted]);
}

#[tokio::test]
async fn replace_with_known_objects_tombstones_what_the_list_lacks() {
    let known = Arc::new(Indexer::new(Decoder::default()));
    known.add(obj("x", "1")).expect("decodes");
    known.add(obj("y", "2")).expect("decodes");
    let fifo = DeltaFifo::new(Some(known.clone()));
    // Queued but neither known nor listed: vanished too.
    fifo.add(obj("z", "3")).expect("add");
    fifo.replace(vec![obj("y", "2")], "9").expect("replace");

    assert_eq!(kinds(&fifo, "ns/y"), [DeltaType::Replaced]);
    assert_eq!(kinds(&fifo, "ns/x"), [DeltaType::Deleted]);
    assert_eq!(kinds(&fifo, "ns/z"), [DeltaType::Added, DeltaType::Deleted]);
    let x = fifo.get("ns/x").expect("queued");
    assert_eq!(
        x[0].object,
        DeltaObject::DeletedFinalStateUnknown(DeletedFinalStateUnknown {
            key: "ns/x".into(),
            obj: Some(obj("x", "1")),
        })
    );
    // The known object keeps its place: the consumer removes it when it pops the deletion.
    assert!(known.get("ns/x").is_some());
}

#[tokio::test]
async fn resync_syncs_only_known_objects_with_nothing_queued() {
    let known = Arc::new(Indexer::new(Decoder::default()));
    known.add(obj("x", "1")).expect("decodes");
    known.add(obj("y", "2")).expect("decodes");
    known.add(obj("z", "3")).expect("decodes");
    let fifo = DeltaFifo::new(Some(known));
    fifo.update(obj("y", "4")).expect("update");
    fifo.delete(obj("z", "3")).expect("delete");
    fifo.resync().expect("resync");
    assert_eq!(kinds(&fifo, "ns/x"), [DeltaType::Sync]);
    assert_eq!(
        rv_of(&fifo.get("ns/x").expect("queued")[0]).as_deref(),
        Some("1")
    );
    // The queued update is newer than the known state: no Sync after it.
    assert_eq!(kinds(&fifo, "ns/y"), [DeltaType::Updated]);
    assert_eq!(kinds(&fifo, "ns/z"), [DeltaType::Deleted]);

    // Without known objects there is nothing to resync.
    let fifo = DeltaFifo::new(None);
    fifo.add(obj("a", "1")).expect("add");
    fifo.resync().expect("resync");
    assert_eq!(kinds(&fifo, "ns/a"), [DeltaType::Added]);
}

#[tokio::test]
async fn pop_requeues_on_request_and_drops_on_failure() {
    let fifo = DeltaFifo::new(None);
    fifo.add(obj("a", "1")).expect("add");
    fifo.add(obj("b", "2")).expect("add");
    let err = fifo
        .pop(|_| Err(ProcessError::Requeue("busy".into())))
        .await
        .expect_err("requeue");
    assert!(matches!(err, PopError::Process { ref key, requeued: true, .. } if key == "ns/a"));
    // Back in the queue, behind b, with its deltas intact.
    assert_eq!(fifo.queued_keys(), ["ns/b", "ns/a"]);
    assert_eq!(kinds(&fifo, "ns/a"), [DeltaType::Added]);

    let err = fifo
        .pop(|_| Err(ProcessError::Failed("broken".into())))
        .await
        .expect_err("failure");
    assert!(matches!(err, PopError::Process { ref key, requeued: false, .. } if key == "ns/b"));
    assert_eq!(fifo.queued_keys(), ["ns/a"]);

    // Putting back is ignored once newer deltas are queued for the key.
    let popped = fifo.pop(|_| Ok(())).await.expect("pop");
    fifo.update(obj("a", "9")).expect("update");
    fifo.add_if_not_present(popped).expect("put back");
    assert_eq!(kinds(&fifo, "ns/a"), [DeltaType::Updated]);
}

#[tokio::test]
async fn has_synced_once_the_first_replace_is_popped() {
    let fifo = Arc::new(DeltaFifo::new(None));
    assert!(!fifo.has_synced());
    fifo.replace(vec![obj("a", "1"), obj("b", "2")], "5")
        .expect("replace");
    assert!(!fifo.has_synced());
    let waiter = tokio::spawn({
        let fifo = fifo.clone();
        async move { fifo.wait_synced().await }
    });
    fifo.pop(|_| Ok(())).await.expect("pop");
    assert!(!fifo.has_synced());
    // Later items do not hold the sync back.
    fifo.add(obj("c", "3")).expect("add");
    fifo.pop(|_| Ok(())).await.expect("pop");
    assert!(fifo.has_synced());
    assert!(waiter.await.expect("join"));

    let empty = DeltaFifo::new(None);
    empty.replace(Vec::new(), "1").expect("replace");
    assert!(empty.has_synced());
}

#[tokio::test]
async fn pop_waits_for_an_item_and_close_releases_it() {
    let fifo = Arc::new(DeltaFifo::new(None));
    let popper = tokio::spawn({
        let fifo = fifo.clone();
        async move { fifo.pop(|_| Ok(())).await.map(|d| d.len()) }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!popper.is_finished());
    fifo.add(obj("a", "1")).expect("add");
    assert_eq!(popper.await.expect("join").expect("pop"), 1);

    // A queue never filled closes without syncing.
    let fifo = Arc::new(DeltaFifo::new(None));
    let popper = tokio::spawn({
        let fifo = fifo.clone();
        async move { fifo.pop(|_| Ok(())).await.map(|d| d.len()) }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    fifo.close();
    assert!(matches!(popper.await.expect("join"), Err(PopError::Closed)));
    assert!(!fifo.wait_synced().await);
}

#[tokio::test]
async fn queued_objects_are_the_bytes_handed_in() {
    let known = Arc::new(Indexer::new(Decoder::default()));
    let held = obj("x", "1");
    known.add(held.clone()).expect("decodes");
    let fifo = DeltaFifo::new(Some(known));
    let added = obj("y", "2");
    fifo.add(added.clone()).expect("add");
    fifo.replace(vec![added.clone()], "3").expect("replace");
    let ptr = |d: &Delta| d.object.object().map(|o| o.value.as_ptr());
    let y = fifo.get("ns/y").expect("queued");
    assert!(y.iter().all(|d| ptr(d) == Some(added.value.as_ptr())));
    // The tombstone of a vanished object carries the indexer's bytes.
    let x = fifo.get("ns/x").expect("queued");
    assert_eq!(ptr(&x[0]), Some(held.value.as_ptr()));
}
