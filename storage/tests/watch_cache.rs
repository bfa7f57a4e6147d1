//! The watch cache on both backends: fan-out to many watchers, cached reads, window limits,
//! bookmarks, slow watchers.

#[path = "support/recording.rs"]
mod recording;
mod support;

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use recording::RecordingBackend;
use storage::backend::etcd::{EtcdBackend, EtcdConfig};
use storage::{
    Cacher, CacherConfig, EventKind, Interface, ListOptions, Preconditions, ReadRevision,
    StorageError, UpdateOptions, WatchOptions,
};
use support::{data_of, object, take, take_changes, Harness};
use test_support::FromBackend;

test_support::both_backends!(
    crate::support::Harness;
    thousand_watchers_see_the_same_sequence,
    cached_reads,
    window_too_old,
    bookmarks_follow_progress,
    slow_watcher_catches_up_from_window,
    fresh_read_after_a_write_elsewhere,
    watch_from_now_skips_history,
    cached_lists_in_pages_share_the_cache_bytes,
    latest_reads_are_the_caches_where_the_revision_is_local,
    updates_start_from_the_cached_copy,
    the_cache_asks_no_previous_values_and_still_gives_them,
    a_big_cache_checks_progress_reports_nobody_waits_for_less_often,
);

fn cacher(h: &Harness, config: CacherConfig) -> Cacher {
    Cacher::new(h.store.clone(), "/things/", config)
}

fn from(revision: i64) -> WatchOptions {
    WatchOptions {
        revision,
        recursive: true,
        ..Default::default()
    }
}

async fn thousand_watchers_see_the_same_sequence(h: &Harness) {
    const WATCHERS: usize = 1000;
    const WRITES: usize = 100;
    let c = cacher(h, CacherConfig::default());
    let start = h.store.current_revision().await.expect("revision");
    let mut streams = Vec::with_capacity(WATCHERS);
    for i in 0..WATCHERS {
        // Half watch the whole resource, half one namespace.
        let key = if i % 2 == 0 { "/things/" } else { "/things/a/" };
        streams.push(c.watch(key, from(start)).await.expect("watch"));
    }
    let mut expected_all = Vec::new();
    for i in 0..WRITES {
        let ns = if i % 3 == 0 { "a" } else { "b" };
        let key = format!("/things/{ns}/o{}", i % 10);
        let v = object("o", "u", &format!("w{i}"));
        h.store
            .guaranteed_update(
                &key,
                UpdateOptions {
                    ignore_not_found: true,
                    ..Default::default()
                },
                &mut |_| Ok(v.clone().into()),
            )
            .await
            .expect("write");
        expected_all.push((key, format!("w{i}")));
    }
    let expected_a: Vec<_> = expected_all
        .iter()
        .filter(|(k, _)| k.starts_with("/things/a/"))
        .cloned()
        .collect();
    let mut tasks = Vec::new();
    for (i, mut stream) in streams.into_iter().enumerate() {
        let expected = if i % 2 == 0 {
            expected_all.clone()
        } else {
            expected_a.clone()
        };
        tasks.push(tokio::spawn(async move {
            let events = take(&mut stream, expected.len()).await;
            let got: Vec<_> = events
                .iter()
                .map(|e| (e.key.clone(), data_of(&e.value)))
                .collect();
            assert_eq!(got, expected, "watcher {i}");
            assert!(events.windows(2).all(|p| p[0].revision < p[1].revision));
        }));
    }
    for t in tasks {
        t.await.expect("watcher saw the sequence");
    }
}

async fn cached_reads(h: &Harness) {
    let c = cacher(h, CacherConfig::default());
    let kv = c
        .create("/things/a/x", object("x", "u", "1"))
        .await
        .expect("create");
    // Reads that accept any recent state come from the cache once it has caught up.
    let got = c
        .get("/things/a/x", ReadRevision::NotOlderThan(kv.mod_revision))
        .await
        .expect("get");
    assert_eq!(data_of(&got.value), "1");
    for i in 0..5 {
        c.create(&format!("/things/b/{i}"), object("y", "u", "2"))
            .await
            .expect("create");
    }
    let rev = h.store.current_revision().await.expect("revision");
    let listed = c
        .get_list(
            "/things/",
            ListOptions {
                revision: ReadRevision::NotOlderThan(rev),
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .expect("cached list");
    assert_eq!(listed.items.len(), 6);
    assert!(listed.revision >= rev);
    let any = c
        .get_list(
            "/things/b",
            ListOptions {
                revision: ReadRevision::Any,
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .expect("rv=0 list");
    assert_eq!(any.items.len(), 5);
    // A paged latest read goes to the store and pages.
    let paged = c
        .get_list(
            "/things/",
            ListOptions {
                limit: 4,
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .expect("paged list");
    assert_eq!(paged.items.len(), 4);
    assert!(paged.continue_token.is_some());
    let r = c.get("/things/a/none", ReadRevision::Any).await;
    assert!(matches!(r, Err(StorageError::NotFound { .. })));
    let r = c.get("/elsewhere/x", ReadRevision::Any).await;
    assert!(matches!(r, Err(StorageError::Invalid(_))));
    // A revision the cache never reaches times out as too large.
    let r = c
        .get("/things/a/x", ReadRevision::NotOlderThan(rev + 1_000_000))
        .await;
    assert!(
        matches!(r, Err(StorageError::TooLargeResourceVersion { .. })),
        "{r:?}"
    );
}

async fn window_too_old(h: &Harness) {
    let c = cacher(
        h,
        CacherConfig {
            window: 5,
            ..Default::default()
        },
    );
    c.get_list(
        "/things/",
        ListOptions {
            revision: ReadRevision::Any,
            recursive: true,
            ..Default::default()
        },
    )
    .await
    .expect("cache ready");
    let start = h.store.current_revision().await.expect("revision");
    for i in 0..20 {
        c.create(&format!("/things/a/{i}"), Bytes::from_static(b"{}"))
            .await
            .expect("create");
    }
    let now = h.store.current_revision().await.expect("revision");
    c.get("/things/a/19", ReadRevision::NotOlderThan(now))
        .await
        .expect("caught up");
    let r = c.watch("/things/", from(start)).await;
    assert!(
        matches!(r, Err(StorageError::TooOld { .. })),
        "start below the window"
    );
    // Inside the window works.
    let mut w = c
        .watch("/things/", from(now - 3))
        .await
        .expect("inside window");
    let events = take(&mut w, 3).await;
    assert_eq!(events.last().map(|e| e.revision), Some(now));
}

async fn bookmarks_follow_progress(h: &Harness) {
    let c = cacher(
        h,
        CacherConfig {
            progress_interval: Duration::from_millis(100),
            ..Default::default()
        },
    );
    let start = h.store.current_revision().await.expect("revision");
    let mut w = c
        .watch(
            "/things/",
            WatchOptions {
                bookmarks: true,
                ..from(start)
            },
        )
        .await
        .expect("watch");
    // A write elsewhere moves the store's revision; the bookmark carries it to this watcher.
    let other = h
        .store
        .create("/other/x", Bytes::from_static(b"{}"))
        .await
        .expect("create");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let e = take(&mut w, 1).await.remove(0);
        assert_eq!(e.kind, EventKind::Bookmark);
        if e.revision >= other.mod_revision {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no bookmark reached {}",
            other.mod_revision
        );
    }
    // Without bookmarks asked for, none arrive.
    let mut quiet = c.watch("/things/", from(start)).await.expect("watch");
    let r = tokio::time::timeout(Duration::from_millis(500), quiet.next()).await;
    assert!(r.is_err(), "unexpected event {r:?}");
}

async fn slow_watcher_catches_up_from_window(h: &Harness) {
    let c = cacher(
        h,
        CacherConfig {
            fanout_buffer: 16,
            ..Default::default()
        },
    );
    let start = h.store.current_revision().await.expect("revision");
    let mut w = c.watch("/things/", from(start)).await.expect("watch");
    for i in 0..200 {
        c.create(
            &format!("/things/s/{i:03}"),
            object("s", "u", &i.to_string()),
        )
        .await
        .expect("create");
    }
    c.delete("/things/s/000", &Preconditions::none(), None)
        .await
        .expect("delete");
    let events = take_changes(&mut w, 201).await;
    let names: Vec<String> = events[..200].iter().map(|e| data_of(&e.value)).collect();
    let expected: Vec<String> = (0..200).map(|i| i.to_string()).collect();
    assert_eq!(names, expected);
    assert_eq!(events[200].kind, EventKind::Deleted);
}

async fn fresh_read_after_a_write_elsewhere(h: &Harness) {
    // Ticks far apart: only a progress request made on demand can let the cache prove it is
    // fresh for a revision that changed nothing under its prefix.
    let c = cacher(
        h,
        CacherConfig {
            progress_interval: Duration::from_secs(3600),
            ..Default::default()
        },
    );
    c.create("/things/a/x", object("x", "u", "1"))
        .await
        .expect("create");
    let elsewhere = h
        .store
        .create("/other/y", Bytes::from_static(b"{}"))
        .await
        .expect("create");
    let got = c
        .get(
            "/things/a/x",
            ReadRevision::NotOlderThan(elsewhere.mod_revision),
        )
        .await
        .expect("fresh enough without waiting for a tick");
    assert_eq!(data_of(&got.value), "1");
}

async fn watch_from_now_skips_history(h: &Harness) {
    let c = cacher(h, CacherConfig::default());
    c.create("/things/a/old", object("o", "u", "old"))
        .await
        .expect("create");
    let now = WatchOptions {
        revision: 0,
        recursive: true,
        send_initial_events: Some(false),
        ..Default::default()
    };
    c.get(
        "/things/a/old",
        ReadRevision::NotOlderThan(h.store.current_revision().await.expect("rev")),
    )
    .await
    .expect("cache caught up");
    let mut cached = c.watch("/things/", now.clone()).await.expect("cache watch");
    let mut direct = h.store.watch("/things/", now).await.expect("store watch");
    c.create("/things/a/new", object("n", "u", "new"))
        .await
        .expect("create");
    for w in [&mut cached, &mut direct] {
        let e = take_changes(w, 1).await;
        assert_eq!(
            (e[0].kind, e[0].key.as_str()),
            (EventKind::Added, "/things/a/new")
        );
    }
}

/// Another etcd client may change several keys in one transaction: one revision, several
/// events. The cache must keep them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn multi_key_transactions_reach_every_watcher() {
    use etcd_client::{Txn, TxnOp};
    let h = Harness::etcd().await;
    let c = cacher(&h, CacherConfig::default());
    let start = h.store.current_revision().await.expect("revision");
    let mut w = c.watch("/things/", from(start)).await.expect("watch");
    let config = EtcdConfig::new(h.test_backend.etcd_servers());
    let mut client = EtcdBackend::connect(config)
        .await
        .expect("a second etcd client")
        .client();
    let txn = Txn::new().and_then([
        TxnOp::put("/registry/things/t/a", "1", None),
        TxnOp::put("/registry/things/t/b", "2", None),
    ]);
    client.txn(txn).await.expect("txn");
    h.store
        .create("/things/t/c", Bytes::from_static(b"3"))
        .await
        .expect("create");
    let events = take(&mut w, 3).await;
    let keys: Vec<&str> = events.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, ["/things/t/a", "/things/t/b", "/things/t/c"]);
    assert_eq!(events[0].revision, events[1].revision);
    let now = h.store.current_revision().await.expect("revision");
    let listed = c
        .get_list(
            "/things/",
            ListOptions {
                revision: ReadRevision::NotOlderThan(now),
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(listed.items.len(), 3);
    // A watcher starting between the two changes of that revision is not possible; one
    // starting at it sees only what followed.
    let mut after = c
        .watch("/things/", from(events[0].revision))
        .await
        .expect("watch");
    assert_eq!(take(&mut after, 1).await[0].key, "/things/t/c");
}

/// etcd 3.4.23 can report progress while changes are still queued for the watcher. A cache
/// that believed it would step past those changes and drop them: under concurrent writes and
/// frequent progress requests, every change must still reach the cache and its watchers.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_change_lost_to_early_progress_reports() {
    const WRITES: usize = 3000;
    let h = Harness::etcd().await;
    let c = std::sync::Arc::new(cacher(
        &h,
        CacherConfig {
            progress_interval: Duration::from_millis(5),
            ..Default::default()
        },
    ));
    let start = h.store.current_revision().await.expect("revision");
    let mut w = c.watch("/things/", from(start)).await.expect("watch");
    // Fresh reads during the writes ask for progress too.
    let reader = {
        let c = c.clone();
        tokio::spawn(async move {
            for _ in 0..200 {
                let now = c.current_revision().await.unwrap_or(0);
                let _ = c
                    .get_list(
                        "/things/",
                        ListOptions {
                            revision: ReadRevision::NotOlderThan(now),
                            recursive: true,
                            ..Default::default()
                        },
                    )
                    .await;
            }
        })
    };
    futures::stream::iter(0..WRITES)
        .for_each_concurrent(64, |i| {
            let store = h.store.clone();
            async move {
                store
                    .create(&format!("/things/n/{i}"), Bytes::from_static(b"{}"))
                    .await
                    .expect("create");
            }
        })
        .await;
    let _ = reader.await;
    let seen = take(&mut w, WRITES).await;
    let mut keys: Vec<&str> = seen.iter().map(|e| e.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), WRITES);
    let now = h.store.current_revision().await.expect("revision");
    let listed = c
        .get_list(
            "/things/",
            ListOptions {
                revision: ReadRevision::NotOlderThan(now),
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(listed.items.len(), WRITES);
}

/// A whole list from the cache is a snapshot of the cache's own values: the same bytes (one
/// allocation, not a copy) as the cached objects, and unmoved by writes after it was taken.
async fn cached_lists_in_pages_share_the_cache_bytes(h: &Harness) {
    let c = cacher(h, CacherConfig::default());
    let mut last = 0;
    for i in 0..600 {
        last = c
            .create(
                &format!("/things/a/{i:04}"),
                object("x", "u", &i.to_string()),
            )
            .await
            .expect("create")
            .mod_revision;
    }
    let opts = ListOptions {
        revision: ReadRevision::NotOlderThan(last),
        recursive: true,
        ..Default::default()
    };
    // rv=0 with a limit is still answered whole by the cache (as upstream); an exact-enough
    // page is not.
    assert!(c.lists_whole(&ListOptions {
        limit: 5,
        revision: ReadRevision::Any,
        ..opts.clone()
    }));
    assert!(!c.lists_whole(&ListOptions {
        limit: 5,
        ..opts.clone()
    }));
    let mut paged = c
        .get_list_pages("/things/a", opts.clone())
        .await
        .expect("pages");
    assert_eq!(paged.revision, last);
    let first = paged.pages.next().await.expect("page").expect("first page");
    c.delete("/things/a/0599", &Preconditions::none(), None)
        .await
        .expect("delete");
    let mut items = first;
    while let Some(page) = paged.pages.next().await {
        items.extend(page.expect("page"));
    }
    assert_eq!(
        items.len(),
        600,
        "the snapshot keeps what was deleted after it"
    );
    let cached = c
        .get("/things/a/0001", ReadRevision::Any)
        .await
        .expect("cached get");
    assert_eq!(items[1].value.as_ptr(), cached.value.as_ptr());
    assert_eq!(items[1], cached);
    // A latest read is the store's, in pages too.
    let latest = c
        .get_list_pages(
            "/things/a",
            ListOptions {
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .expect("latest pages");
    let n: usize = latest
        .pages
        .map(|p| p.expect("page").len())
        .collect::<Vec<_>>()
        .await
        .iter()
        .sum();
    assert_eq!(n, 599);
}

/// A whole list at the latest revision is served by the cache, once it has caught up with the
/// store's current revision, where that revision is known in-process (the embedded store), and
/// is a quorum read of etcd otherwise; a get at the latest revision is always the store's, as
/// upstream's. Either way a read sees every write made before it, here or under another prefix.
async fn latest_reads_are_the_caches_where_the_revision_is_local(h: &Harness) {
    let c = cacher(h, CacherConfig::default());
    let local = h.backend.current_revision_is_local();
    for i in 0..50 {
        let key = format!("/things/a/{i:02}");
        c.create(&key, object("x", "u", &i.to_string()))
            .await
            .expect("create");
        let got = c.get(&key, ReadRevision::Latest).await.expect("latest get");
        assert_eq!(data_of(&got.value), i.to_string());
    }
    // A write under another prefix moves the store's revision past the cache's last change.
    let elsewhere = h
        .store
        .create("/other/x", object("y", "u", "y"))
        .await
        .expect("create elsewhere")
        .mod_revision;
    let latest = c
        .get("/things/a/07", ReadRevision::Latest)
        .await
        .expect("latest get");
    let cached = c
        .get("/things/a/07", ReadRevision::Any)
        .await
        .expect("cached get");
    assert_eq!(latest, cached);
    assert_ne!(
        latest.value.as_ptr(),
        cached.value.as_ptr(),
        "a get at the latest revision reads the store, not the cache"
    );
    let whole = ListOptions {
        recursive: true,
        ..Default::default()
    };
    let list = c.get_list("/things/a", whole.clone()).await.expect("list");
    assert_eq!(list.items.len(), 50);
    assert!(
        list.revision >= elsewhere,
        "{} < {elsewhere}",
        list.revision
    );
    assert_eq!(list.items[7].value.as_ptr() == cached.value.as_ptr(), local);
    // A list asking for pages is the store's, with a continue token.
    let page = c
        .get_list(
            "/things/a",
            ListOptions {
                limit: 10,
                ..whole.clone()
            },
        )
        .await
        .expect("page");
    assert_eq!(page.items.len(), 10);
    assert!(page.continue_token.is_some());
    // A deletion is seen by the next read.
    c.delete("/things/a/00", &Preconditions::none(), None)
        .await
        .expect("delete");
    assert!(matches!(
        c.get("/things/a/00", ReadRevision::Latest).await,
        Err(StorageError::NotFound { .. })
    ));
    let list = c.get_list("/things/a", whole).await.expect("list");
    assert_eq!(list.items.len(), 49);
}

async fn updates_start_from_the_cached_copy(h: &Harness) {
    let c = cacher(h, CacherConfig::default());
    let created = c
        .create("/things/u", object("x", "u", "1"))
        .await
        .expect("create");
    // The cache's copy, once it has seen the create.
    let cached = c
        .get(
            "/things/u",
            ReadRevision::NotOlderThan(created.mod_revision),
        )
        .await
        .expect("cached get");
    let mut first = None;
    let updated = c
        .guaranteed_update("/things/u", UpdateOptions::default(), &mut |current| {
            let current = current.expect("exists");
            first.get_or_insert(current.value.as_ptr() == cached.value.as_ptr());
            Ok(storage::Update::Write(object("x", "u", "2")))
        })
        .await
        .expect("update");
    assert_eq!(data_of(&updated.value), "2");
    assert_eq!(
        first,
        Some(true),
        "the update decided first on the cache's copy, not on a read of the store"
    );
    // A copy the store has moved past is decided on again from the store.
    let behind = c.get("/things/u", ReadRevision::Any).await.expect("cached");
    h.store
        .guaranteed_update("/things/u", UpdateOptions::default(), &mut |_| {
            Ok(storage::Update::Write(object("x", "u", "3")))
        })
        .await
        .expect("update beside the cache");
    let mut seen = Vec::new();
    let out = c
        .guaranteed_update(
            "/things/u",
            UpdateOptions {
                cached: Some(behind),
                ..Default::default()
            },
            &mut |current| {
                let value = data_of(&current.expect("exists").value);
                seen.push(value.clone());
                Ok(storage::Update::Write(object(
                    "x",
                    "u",
                    &format!("{value}+"),
                )))
            },
        )
        .await
        .expect("update from a stale copy");
    assert_eq!(data_of(&out.value), "3+");
    assert_eq!(seen.last().map(String::as_str), Some("3"));
}

/// The cache's watch of the store asks for no previous values (on etcd each costs a range
/// per event), yet its watchers get them: a deletion carries the deleted object, an update
/// the object it replaced, a selector the move out of its selection.
async fn the_cache_asks_no_previous_values_and_still_gives_them(h: &Harness) {
    let recorder = RecordingBackend::new(h.backend.clone());
    let store = storage::KvStore::new(recorder.clone(), "/registry");
    let c = Cacher::new(store, "/things/", CacherConfig::default());
    let created = c
        .create("/things/p", object("p", "u", "one"))
        .await
        .expect("create");
    let predicate: storage::Predicate =
        std::sync::Arc::new(|kv: &storage::KeyValue| data_of(&kv.value) != "gone");
    let mut all = c
        .watch("/things/", from(created.mod_revision))
        .await
        .expect("watch");
    let mut selected = c
        .watch(
            "/things/",
            WatchOptions {
                predicate: Some(predicate),
                ..from(created.mod_revision)
            },
        )
        .await
        .expect("watch");
    for data in ["two", "gone"] {
        c.guaranteed_update("/things/p", UpdateOptions::default(), &mut |_| {
            Ok(storage::Update::Write(object("p", "u", data)))
        })
        .await
        .expect("update");
    }
    c.delete("/things/p", &Preconditions::default(), None)
        .await
        .expect("delete");
    let events = take(&mut all, 3).await;
    let seen: Vec<_> = events[..2]
        .iter()
        .map(|e| {
            (
                e.kind,
                data_of(&e.value),
                e.prev_value.as_deref().map(data_of),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (EventKind::Modified, "two".into(), Some("one".into())),
            (EventKind::Modified, "gone".into(), Some("two".into())),
        ]
    );
    assert_eq!(events[2].kind, EventKind::Deleted);
    assert_eq!(
        data_of(&events[2].value),
        "gone",
        "the deleted object as it was"
    );
    // "gone" left the selection: the selected watch sees it deleted, as it last matched.
    let moved = take(&mut selected, 2).await;
    assert_eq!(moved[1].kind, EventKind::Deleted);
    assert_eq!(data_of(&moved[1].value), "two");
    assert_eq!(recorder.watches_with_prev(), [false]);
}

/// Where progress reports may run ahead of the changes (etcd 3.4.23 here), each is checked
/// with a read of the whole prefix before it is believed. A cache of many objects checks the
/// reports nobody waits for at most once per its size's worth of seconds; a reader waiting
/// for a revision still has the next report checked at once.
async fn a_big_cache_checks_progress_reports_nobody_waits_for_less_often(h: &Harness) {
    let recorder = RecordingBackend::new(h.backend.clone());
    let store = storage::KvStore::new(recorder.clone(), "/registry");
    let c = Cacher::new(
        store,
        "/things/",
        CacherConfig {
            progress_interval: Duration::from_millis(100),
            // 40 objects: a report nobody waits for is checked once per 4 s at most.
            checked_objects_per_second: 10,
            ..CacherConfig::default()
        },
    );
    let mut last = 0;
    for i in 0..40 {
        last = c
            .create(&format!("/things/o{i}"), object("o", "u", "x"))
            .await
            .expect("create")
            .mod_revision;
    }
    c.get("/things/o0", ReadRevision::NotOlderThan(last))
        .await
        .expect("cached");
    // Writes elsewhere move the revision on: every report is then ahead of the cache.
    let before = recorder.checks();
    let mut elsewhere = 0;
    for i in 0..20 {
        elsewhere = h
            .store
            .create(&format!("/elsewhere/e{i}"), object("e", "u", "x"))
            .await
            .expect("create elsewhere")
            .mod_revision;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let idle_checks = recorder.checks() - before;
    assert!(
        idle_checks <= 1,
        "{idle_checks} checks in 2 s of reports nobody waited for"
    );
    // A reader waiting for the latest revision has the next report checked.
    let started = std::time::Instant::now();
    c.get("/things/o0", ReadRevision::NotOlderThan(elsewhere))
        .await
        .expect("the cache reaches a revision written elsewhere");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}
