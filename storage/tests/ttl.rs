//! Keys written with a ttl (upstream's Create / GuaranteedUpdate ttl): gone after it, as an
//! ordinary delete watchers see; a later write restarts the clock; a write without a ttl
//! clears it. On the embedded store the schedule survives a restart.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use storage::backend::DynBackend;
use storage::embedded::EmbeddedBackend;
use storage::{
    EventKind, Interface, KvStore, ReadRevision, StorageError, Update, UpdateOptions, WatchOptions,
};
use support::{object, take_changes, Harness};

test_support::both_backends!(
    crate::support::Harness;
    expires_with_a_deleted_event,
    writes_extend_or_clear_the_ttl,
);

const TTL: Duration = Duration::from_secs(2);

async fn exists(store: &KvStore, key: &str) -> bool {
    match store.get(key, ReadRevision::Latest).await {
        Ok(_) => true,
        Err(StorageError::NotFound { .. }) => false,
        Err(e) => panic!("get {key}: {e}"),
    }
}

/// Polls until the key is gone; panics after `limit`.
async fn gone_within(store: &KvStore, key: &str, limit: Duration) -> Duration {
    let start = Instant::now();
    while exists(store, key).await {
        assert!(start.elapsed() < limit, "{key} still there after {limit:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    start.elapsed()
}

async fn update(store: &KvStore, key: &str, data: &str, ttl: Option<Duration>) {
    let value = object("x", "u", data);
    store
        .guaranteed_update(
            key,
            UpdateOptions {
                ttl,
                ..Default::default()
            },
            &mut |_| Ok(Update::Write(value.clone())),
        )
        .await
        .expect("update");
}

async fn expires_with_a_deleted_event(h: &Harness) {
    let s = &h.store;
    let kv = s
        .create_with_ttl("/events/ns/e", object("e", "u", "1"), Some(TTL))
        .await
        .expect("create");
    s.create("/events/ns/kept", Bytes::from_static(b"{}"))
        .await
        .expect("create");
    let mut watch = s
        .watch(
            "/events/ns",
            WatchOptions {
                revision: kv.mod_revision,
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .expect("watch");
    let took = gone_within(s, "/events/ns/e", Duration::from_secs(10)).await;
    assert!(
        exists(s, "/events/ns/kept").await,
        "a key without ttl stays"
    );
    let events = take_changes(&mut watch, 2).await;
    assert_eq!(events[0].key, "/events/ns/kept");
    assert_eq!(events[1].kind, EventKind::Deleted);
    assert_eq!(events[1].key, "/events/ns/e");
    assert_eq!(events[1].value, object("e", "u", "1"), "the last state");
    assert!(took > Duration::from_millis(500), "not before its ttl");
}

async fn writes_extend_or_clear_the_ttl(h: &Harness) {
    let s = &h.store;
    let start = Instant::now();
    s.create_with_ttl("/events/ns/extended", object("x", "u", "1"), Some(TTL))
        .await
        .expect("create");
    s.create_with_ttl("/events/ns/cleared", object("x", "u", "1"), Some(TTL))
        .await
        .expect("create");
    update(s, "/events/ns/cleared", "2", None).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    update(s, "/events/ns/extended", "2", Some(TTL)).await;
    // Past the first ttl, within the second.
    tokio::time::sleep((TTL + Duration::from_millis(500)).saturating_sub(start.elapsed())).await;
    assert!(
        exists(s, "/events/ns/extended").await,
        "the update extended it"
    );
    gone_within(s, "/events/ns/extended", Duration::from_secs(10)).await;
    assert!(
        start.elapsed() > Duration::from_millis(3000),
        "lived its second ttl"
    );
    assert!(
        exists(s, "/events/ns/cleared").await,
        "a write without a ttl clears it"
    );
}

/// Opens the store in `dir`, waiting for a dropped predecessor's threads to let go of it.
async fn open(dir: &std::path::Path) -> DynBackend {
    let start = Instant::now();
    loop {
        match EmbeddedBackend::open(dir) {
            Ok(backend) => return Arc::new(backend),
            Err(e) if start.elapsed() < Duration::from_secs(5) => {
                tracing::debug!(error = %e, "store still open; retrying");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("reopen: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_expiry_survives_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = KvStore::new(open(dir.path()).await, "/registry");
    let short = store
        .create_with_ttl("/events/ns/short", Bytes::from_static(b"{}"), Some(TTL))
        .await
        .expect("create");
    store
        .create_with_ttl(
            "/events/ns/longer",
            Bytes::from_static(b"{}"),
            Some(Duration::from_secs(4)),
        )
        .await
        .expect("create");
    drop(store);
    // Closed past the first deadline: the key is gone the moment the store opens again.
    tokio::time::sleep(TTL + Duration::from_millis(300)).await;
    let backend = open(dir.path()).await;
    let store = KvStore::new(backend.clone(), "/registry");
    assert!(
        !exists(&store, "/events/ns/short").await,
        "expired while closed"
    );
    assert!(exists(&store, "/events/ns/longer").await, "not yet due");
    // Its deletion is an ordinary one, in the history a watcher replays.
    let mut watch = store
        .watch(
            "/events/ns/short",
            WatchOptions {
                revision: short.mod_revision,
                ..Default::default()
            },
        )
        .await
        .expect("watch");
    let deleted = take_changes(&mut watch, 1).await;
    assert_eq!(deleted[0].kind, EventKind::Deleted);
    // The reopened store keeps the rest of the schedule.
    gone_within(&store, "/events/ns/longer", Duration::from_secs(5)).await;
}
