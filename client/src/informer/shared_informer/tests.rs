use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc::error::TryRecvError;

use super::*;
use crate::informer::fake::{encode, event, expired_event, gone, list_of, obj, Fake, Script};
use crate::informer::NAMESPACE_INDEX;
use crate::informer::{Delta, Subscription};
use registry::WatchEventType;

fn config() -> InformerConfig {
    InformerConfig {
        reflector: ReflectorConfig {
            initial_backoff: Duration::from_millis(10),
            ..Default::default()
        },
    }
}

/// A notification in short: kind, name and resourceVersion(s).
fn describe(n: &Notification) -> String {
    let id = |o: &Value| {
        format!(
            "{}@{}",
            o["metadata"]["name"].as_str().unwrap_or_default(),
            o["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
        )
    };
    match n {
        Notification::Add(o) => format!("add {}", id(o)),
        Notification::Update { old, new } => format!("update {}->{}", id(old), id(new)),
        Notification::Delete(DeltaObject::Object(o)) => format!("delete {}", id(o)),
        Notification::Delete(DeltaObject::DeletedFinalStateUnknown(t)) => format!(
            "tombstone {} ({})",
            t.key,
            t.obj.as_deref().map(id).unwrap_or_default()
        ),
    }
}

async fn next(rx: &mut Subscription, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    while out.len() < n {
        match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
            Ok(Some(notification)) => out.push(describe(&notification)),
            Ok(None) => panic!("channel closed after {out:?}"),
            Err(_) => panic!("timed out after {out:?}"),
        }
    }
    out
}

/// The notifications about object `name` (in namespace "ns").
fn of<'a>(seen: &'a [String], name: &str) -> Vec<&'a str> {
    let (id, key) = (format!("{name}@"), format!("ns/{name}"));
    seen.iter()
        .map(String::as_str)
        .filter(|n| {
            n.split(' ')
                .nth(1)
                .is_some_and(|o| o.starts_with(&id) || o == key)
        })
        .collect()
}

fn names(informer: &SharedInformer) -> Vec<String> {
    let mut keys = informer.indexer().list_keys();
    keys.sort();
    keys
}

#[tokio::test(start_paused = true)]
async fn handlers_see_the_list_as_adds_then_every_change_in_order() {
    let fake = Fake::default();
    fake.script_list(Ok(list_of(10, vec![obj("a", 1), obj("b", 2)])));
    fake.script_watch(Ok(Script {
        events: vec![
            event(WatchEventType::Modified, obj("a", 11)),
            event(WatchEventType::Added, obj("c", 12)),
            event(WatchEventType::Deleted, obj("b", 13)),
        ],
        then_close: false,
    }));
    let informer = SharedInformer::new(Arc::new(fake), config());
    let mut rx = informer.subscribe();
    informer.start();
    assert!(informer.wait_for_sync().await);
    // Order holds per object; the FIFO may batch an object's changes ahead of another's.
    let seen = next(&mut rx, 5).await;
    assert_eq!(of(&seen, "a"), ["add a@1", "update a@1->a@11"], "{seen:?}");
    assert_eq!(of(&seen, "b"), ["add b@2", "delete b@13"], "{seen:?}");
    assert_eq!(of(&seen, "c"), ["add c@12"], "{seen:?}");
    assert_eq!(names(&informer), ["ns/a", "ns/c"]);
    assert_eq!(
        informer.indexer().get("ns/a").expect("cached")["metadata"]["resourceVersion"],
        "11"
    );
    assert_eq!(
        informer
            .indexer()
            .index_keys(NAMESPACE_INDEX, "ns")
            .expect("index")
            .len(),
        2
    );
    informer.stop().await;
    assert!(rx.recv().await.is_none(), "the channel closes on stop");
}

#[tokio::test(start_paused = true)]
async fn a_relist_reports_missed_deletions_and_only_real_changes() {
    let fake = Fake::default();
    fake.script_list(Ok(list_of(10, vec![obj("a", 1), obj("b", 2)])));
    fake.script_watch(Ok(Script {
        events: vec![expired_event()],
        then_close: false,
    }));
    fake.script_watch(Err(gone()));
    fake.script_list(Ok(list_of(20, vec![obj("a", 1), obj("c", 15)])));
    let informer = SharedInformer::new(Arc::new(fake), config());
    let mut plain = informer.subscribe();
    let mut resyncing = informer.subscribe_with_resync();
    informer.start();
    // "a" did not change: only the subscriber that asked for resyncs hears of it again.
    let seen = next(&mut plain, 4).await;
    assert_eq!(of(&seen, "a"), ["add a@1"], "{seen:?}");
    assert_eq!(
        of(&seen, "b"),
        ["add b@2", "tombstone ns/b (b@2)"],
        "{seen:?}"
    );
    assert_eq!(of(&seen, "c"), ["add c@15"], "{seen:?}");
    let seen = next(&mut resyncing, 5).await;
    assert_eq!(of(&seen, "a"), ["add a@1", "update a@1->a@1"], "{seen:?}");
    assert_eq!(
        of(&seen, "b"),
        ["add b@2", "tombstone ns/b (b@2)"],
        "{seen:?}"
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        plain.try_recv().is_err(),
        "nothing more for the plain subscriber"
    );
    assert_eq!(names(&informer), ["ns/a", "ns/c"]);
    assert_eq!(informer.last_sync_resource_version(), "20");
    informer.stop().await;
}

#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl EventHandler for Recorder {
    fn on_add(&self, obj: &Arc<Value>) {
        self.0
            .lock()
            .expect("lock")
            .push(describe(&Notification::Add(obj.clone())));
    }

    fn on_delete(&self, obj: &DeltaObject) {
        self.0
            .lock()
            .expect("lock")
            .push(describe(&Notification::Delete(obj.clone())));
    }
}

#[tokio::test(start_paused = true)]
async fn late_handlers_get_the_cache_replayed_and_can_be_removed() {
    let fake = Fake::default();
    fake.script_list(Ok(list_of(10, vec![obj("a", 1)])));
    let informer = SharedInformer::new(Arc::new(fake), config());
    informer.start();
    assert!(informer.wait_for_sync().await);
    assert!(informer.has_synced());

    let recorder = Arc::new(Recorder::default());
    let id = informer.add_event_handler(recorder.clone());
    let mut late = informer.subscribe();
    assert_eq!(next(&mut late, 1).await, ["add a@1"]);
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(*recorder.0.lock().expect("lock"), ["add a@1"]);
    assert!(informer.remove_event_handler(id));
    assert!(!informer.remove_event_handler(id));

    informer.stop().await;
    assert!(informer.is_stopped());
    assert!(late.recv().await.is_none());
    // A stopped informer stays stopped and never reports a sync it has not had.
    informer.start();
    let fresh = SharedInformer::new(Arc::new(Fake::default()), config());
    fresh.stop().await;
    assert!(!fresh.wait_for_sync().await);
}

/// Feeds the processing loop one object's change directly, as a popped FIFO item would.
fn apply(informer: &SharedInformer, kind: DeltaType, object: Value) {
    let delta = Delta {
        kind,
        object: DeltaObject::Object(encode(&object)),
    };
    informer.inner.core.handle(&vec![delta]).expect("applies");
}

fn with_objects(objects: &[(&str, u32)]) -> SharedInformer {
    let informer = SharedInformer::new(Arc::new(Fake::default()), config());
    for (name, rv) in objects {
        apply(&informer, DeltaType::Added, obj(name, *rv));
    }
    informer
}

fn sorted(mut seen: Vec<String>) -> Vec<String> {
    seen.sort();
    seen
}

fn nothing_more(rx: &mut Subscription) {
    assert!(
        matches!(rx.try_recv(), Err(TryRecvError::Empty)),
        "nothing more"
    );
}

#[tokio::test]
async fn a_late_subscriber_replays_the_snapshot_before_changes_made_while_it_had_not_read() {
    let informer = with_objects(&[("a", 1), ("b", 2), ("c", 3)]);
    let mut rx = informer.subscribe();
    assert_eq!(rx.replay_remaining(), 3);
    apply(&informer, DeltaType::Updated, obj("a", 4));
    apply(&informer, DeltaType::Deleted, obj("b", 5));
    apply(&informer, DeltaType::Added, obj("d", 6));

    // The replay is the state at subscription (a@1, not a@4; b though deleted since), each
    // object once, and the changes follow it in order.
    let seen = next(&mut rx, 6).await;
    assert_eq!(
        sorted(seen[..3].to_vec()),
        ["add a@1", "add b@2", "add c@3"]
    );
    assert_eq!(seen[3..], ["update a@1->a@4", "delete b@5", "add d@6"]);
    nothing_more(&mut rx);

    let mut later = informer.subscribe();
    let seen = next(&mut later, 3).await;
    assert_eq!(sorted(seen), ["add a@4", "add c@3", "add d@6"]);
    nothing_more(&mut later);
}

#[tokio::test]
async fn an_object_deleted_while_the_replay_is_read_is_replayed_then_deleted() {
    let informer = with_objects(&[("a", 1), ("b", 1), ("c", 1)]);
    let mut rx = informer.subscribe();
    let first = next(&mut rx, 1).await.remove(0);
    let read = ["a", "b", "c"]
        .into_iter()
        .find(|n| first == format!("add {n}@1"))
        .expect("one of the three");
    let unread: Vec<&str> = ["a", "b", "c"].into_iter().filter(|n| *n != read).collect();
    // Half-way through the replay: an object not yet replayed goes, one already read
    // changes.
    apply(&informer, DeltaType::Deleted, obj(unread[0], 7));
    apply(&informer, DeltaType::Updated, obj(read, 8));
    assert_eq!(rx.replay_remaining(), 2);

    let seen = next(&mut rx, 4).await;
    let replayed: Vec<String> = unread.iter().map(|n| format!("add {n}@1")).collect();
    assert_eq!(sorted(seen[..2].to_vec()), replayed);
    assert_eq!(
        seen[2..],
        [
            format!("delete {}@7", unread[0]),
            format!("update {read}@1->{read}@8")
        ]
    );
    nothing_more(&mut rx);
    assert_eq!(names(&informer).len(), 2);
}

#[tokio::test]
async fn subscribing_decodes_nothing_the_subscriber_decodes_as_it_reads() {
    const OBJECTS: u32 = 2_000;
    let informer = SharedInformer::new(Arc::new(Fake::default()), config());
    for i in 0..OBJECTS {
        apply(&informer, DeltaType::Added, obj(&format!("p{i}"), i + 1));
    }
    let indexer = informer.indexer().clone();
    let before = indexer.decodes();
    let mut subscribers: Vec<Subscription> = (0..12).map(|_| informer.subscribe()).collect();
    assert_eq!(indexer.decodes(), before, "subscribing decoded objects");

    let rx = &mut subscribers[0];
    let mut seen = HashSet::new();
    for read in 1..=OBJECTS {
        let Some(Notification::Add(obj)) = rx.recv().await else {
            panic!("a replayed Add");
        };
        assert!(
            seen.insert(obj["metadata"]["name"].to_string()),
            "replayed twice"
        );
        assert_eq!(
            indexer.decodes() - before,
            read as usize,
            "one decode per read"
        );
    }
    assert_eq!(rx.replay_remaining(), 0);
    nothing_more(rx);
    // Dropped subscribers are forgotten at the next change; the rest hear of it.
    subscribers.truncate(2);
    apply(&informer, DeltaType::Added, obj("new", OBJECTS + 1));
    assert_eq!(informer.inner.core.listeners().len(), 2);
    assert_eq!(
        next(&mut subscribers[0], 1).await,
        [format!("add new@{}", OBJECTS + 1)]
    );
    assert_eq!(subscribers[1].replay_remaining(), OBJECTS as usize);
}

#[tokio::test]
async fn with_no_one_listening_changes_decode_no_old_or_deleted_state() {
    let informer = with_objects(&[("a", 1), ("b", 2)]);
    let indexer = informer.indexer().clone();
    let before = indexer.decodes();
    apply(&informer, DeltaType::Updated, obj("a", 3));
    apply(&informer, DeltaType::Deleted, obj("b", 4));
    assert_eq!(indexer.decodes(), before);
    assert_eq!(names(&informer), ["ns/a"]);
    assert_eq!(
        indexer.get("ns/a").expect("cached")["metadata"]["resourceVersion"],
        "3"
    );
}

#[tokio::test]
async fn an_unchanged_object_is_decoded_once_for_the_resync_listeners_only() {
    let informer = with_objects(&[("a", 1)]);
    let mut plain = informer.subscribe();
    let mut resyncing = informer.subscribe_with_resync();
    assert_eq!(next(&mut plain, 1).await, ["add a@1"]);
    assert_eq!(next(&mut resyncing, 1).await, ["add a@1"]);
    apply(&informer, DeltaType::Sync, obj("a", 1));
    apply(&informer, DeltaType::Replaced, obj("a", 1));
    for _ in 0..2 {
        let Ok(Notification::Update { old, new }) = resyncing.try_recv() else {
            panic!("an update for the resync listener");
        };
        assert!(Arc::ptr_eq(&old, &new), "one decode serves old and new");
        assert_eq!(new["metadata"]["resourceVersion"], "1");
    }
    nothing_more(&mut resyncing);
    nothing_more(&mut plain);
}
