use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;

use super::*;
use crate::informer::fake::{event, expired_event, gone, list_of, obj, Fake, Script};
use crate::informer::NAMESPACE_INDEX;
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

async fn next(rx: &mut UnboundedReceiver<Notification>, n: usize) -> Vec<String> {
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
