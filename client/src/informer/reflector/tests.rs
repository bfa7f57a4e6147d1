use std::sync::Arc;
use std::time::Duration;

use registry::store::Decoder;
use registry::{RegistryError, WatchEventType};
use tokio_util::sync::CancellationToken;

use super::{Reflector, ReflectorConfig};
use crate::informer::fake::{
    bookmark, encode, event, expired_event, gone, list_of, obj, Fake, Script,
};
use crate::informer::{DeltaFifo, DeltaObject, DeltaType, Indexer};

fn config() -> ReflectorConfig {
    ReflectorConfig {
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(100),
        ..Default::default()
    }
}

struct Running {
    fake: Arc<Fake>,
    fifo: Arc<DeltaFifo>,
    reflector: Arc<Reflector>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

fn start(fake: Fake, known: Option<Arc<Indexer>>, config: ReflectorConfig) -> Running {
    let fake = Arc::new(fake);
    let known = known.map(|k| k as Arc<dyn crate::informer::KnownObjects>);
    let fifo = Arc::new(DeltaFifo::new(known));
    let reflector = Arc::new(Reflector::new(fake.clone(), fifo.clone(), config));
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (reflector, stop) = (reflector.clone(), stop.clone());
        async move { reflector.run(stop).await }
    });
    Running {
        fake,
        fifo,
        reflector,
        stop,
        task,
    }
}

impl Running {
    /// Waits (in paused time) until the fake has seen `n` calls.
    async fn until_calls(&self, n: usize) -> Vec<String> {
        for _ in 0..1000 {
            if self.fake.calls().len() >= n {
                return self.fake.calls();
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("only saw calls {:?}", self.fake.calls());
    }

    async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .expect("reflector stops")
            .expect("reflector task");
    }
}

fn kinds(fifo: &DeltaFifo, key: &str) -> Vec<DeltaType> {
    fifo.get(key)
        .unwrap_or_default()
        .iter()
        .map(|d| d.kind)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn lists_then_watches_from_the_list_version_and_follows_bookmarks() {
    let fake = Fake::default();
    fake.script_list(Ok(list_of(10, vec![obj("a", 5)])));
    fake.script_watch(Ok(Script {
        events: vec![
            event(WatchEventType::Added, obj("b", 11)),
            event(WatchEventType::Modified, obj("a", 12)),
            event(WatchEventType::Deleted, obj("b", 13)),
            bookmark(20),
        ],
        then_close: true,
    }));
    let r = start(fake, None, config());
    // The stream ended: the next watch resumes from the bookmark, with no relist.
    assert_eq!(r.until_calls(3).await, ["list 0", "watch 10", "watch 20"]);
    assert_eq!(r.reflector.last_sync_resource_version(), "20");
    assert_eq!(
        kinds(&r.fifo, "ns/a"),
        [DeltaType::Replaced, DeltaType::Updated]
    );
    assert_eq!(
        kinds(&r.fifo, "ns/b"),
        [DeltaType::Added, DeltaType::Deleted]
    );
    assert_eq!(r.fifo.queued_keys(), ["ns/a", "ns/b"]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_expired_watch_resumes_then_relists_and_reports_missed_deletions() {
    let known = Arc::new(Indexer::new(Decoder::default()));
    known.add(encode(&obj("gone", 3))).expect("decodes");
    known.add(encode(&obj("kept", 4))).expect("decodes");
    let fake = Fake::default();
    fake.script_list(Ok(list_of(10, vec![obj("gone", 3), obj("kept", 4)])));
    fake.script_watch(Ok(Script {
        events: vec![
            event(WatchEventType::Modified, obj("kept", 11)),
            expired_event(),
        ],
        then_close: false,
    }));
    // Resuming from 11 is too old as well: the history is gone.
    fake.script_watch(Err(gone()));
    fake.script_list(Ok(list_of(30, vec![obj("kept", 25)])));
    let r = start(fake, Some(known.clone()), config());
    assert_eq!(
        r.until_calls(5).await,
        ["list 0", "watch 10", "watch 11", "list 11", "watch 30"]
    );
    // The first list's deltas were never popped, so the consumer still knows "gone" and the
    // relist queued its deletion as a tombstone.
    let gone = r.fifo.get("ns/gone").expect("queued");
    let last = gone.last().expect("deltas");
    assert_eq!(last.kind, DeltaType::Deleted);
    assert!(matches!(&last.object, DeltaObject::DeletedFinalStateUnknown(t) if t.key == "ns/gone"));
    assert_eq!(
        kinds(&r.fifo, "ns/kept"),
        [DeltaType::Replaced, DeltaType::Updated, DeltaType::Replaced]
    );
    assert_eq!(r.reflector.last_sync_resource_version(), "30");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_list_too_old_to_serve_falls_back_to_the_latest_state() {
    let fake = Fake::default();
    fake.script_list(Ok(list_of(10, Vec::new())));
    fake.script_watch(Err(gone()));
    fake.script_list(Err(gone()));
    fake.script_list(Ok(list_of(50, vec![obj("a", 45)])));
    let r = start(fake, None, config());
    assert_eq!(
        r.until_calls(5).await,
        ["list 0", "watch 10", "list 10", "list latest", "watch 50"]
    );
    assert_eq!(kinds(&r.fifo, "ns/a"), [DeltaType::Replaced]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn failures_back_off_and_unavailable_watches_are_retried_in_place() {
    let fake = Fake::default();
    fake.script_list(Err(RegistryError::ServiceUnavailable("down".into())));
    fake.script_list(Ok(list_of(10, Vec::new())));
    fake.script_watch(Err(RegistryError::ServiceUnavailable("down".into())));
    fake.script_watch(Err(RegistryError::Internal("broken".into())));
    fake.script_list(Ok(list_of(12, Vec::new())));
    let started = tokio::time::Instant::now();
    let r = start(fake, None, config());
    assert_eq!(
        r.until_calls(6).await,
        ["list 0", "list 0", "watch 10", "watch 10", "list 10", "watch 12"]
    );
    // Three failures, each waited for: at least 10 + 20 + 40 ms.
    assert!(started.elapsed() >= Duration::from_millis(70));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn resync_requeues_known_objects_periodically() {
    let known = Arc::new(Indexer::new(Decoder::default()));
    known.add(encode(&obj("a", 1))).expect("decodes");
    let fake = Fake::default();
    fake.script_list(Ok(list_of(10, vec![obj("a", 1)])));
    let r = start(
        fake,
        Some(known),
        ReflectorConfig {
            resync_period: Some(Duration::from_secs(1)),
            ..config()
        },
    );
    r.until_calls(2).await;
    r.fifo.pop(|_| Ok(())).await.expect("pop the list");
    assert!(r.fifo.is_empty());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(kinds(&r.fifo, "ns/a"), [DeltaType::Sync]);
    r.stop().await;
}
