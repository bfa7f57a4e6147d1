//! storage.Interface conformance: every test runs unchanged on the embedded store and on etcd.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use storage::{
    EventKind, Interface, ListOptions, Preconditions, Predicate, ReadRevision, StorageError,
    Update, UpdateOptions, WatchOptions,
};
use support::{data_of, object, take, take_changes, Harness};

test_support::both_backends!(
    crate::support::Harness;
    create_get_update_delete,
    preconditions_guard_update_and_delete,
    guaranteed_update_semantics,
    concurrent_writers_lose_no_update,
    stale_cached_value_is_retried,
    delete_from_a_stale_cache,
    update_may_keep_or_delete,
    list_pages_share_one_snapshot,
    paging_across_concurrent_writes,
    paging_with_predicate_fills_pages,
    continue_tokens_invalid_and_expired,
    reads_at_revisions,
    watch_order_prev_values_and_resume,
    watch_too_old_after_compaction,
    watch_predicate_transitions,
    watch_initial_events,
    count_and_revision,
    full_lists_beyond_four_mebibytes,
    whole_lists_in_pages_read_one_snapshot,
);

async fn create_get_update_delete(h: &Harness) {
    let s = &h.store;
    let created = s
        .create("/pods/ns/a", object("a", "u1", "v1"))
        .await
        .expect("create");
    assert_eq!(created.key, "/pods/ns/a");
    assert_eq!(created.create_revision, created.mod_revision);
    assert_eq!(created.version, 1);

    let again = s.create("/pods/ns/a", object("a", "u1", "v1")).await;
    assert!(
        matches!(again, Err(StorageError::AlreadyExists { .. })),
        "{again:?}"
    );

    let got = s
        .get("/pods/ns/a", ReadRevision::Latest)
        .await
        .expect("get");
    assert_eq!(got, created);
    let missing = s.get("/pods/ns/zz", ReadRevision::Latest).await;
    assert!(matches!(missing, Err(StorageError::NotFound { .. })));

    let updated = s
        .guaranteed_update("/pods/ns/a", UpdateOptions::default(), &mut |cur| {
            let cur = cur.expect("exists");
            assert_eq!(data_of(&cur.value), "v1");
            Ok(Update::Write(object("a", "u1", "v2")))
        })
        .await
        .expect("update");
    assert!(updated.mod_revision > created.mod_revision);
    assert_eq!(updated.create_revision, created.create_revision);
    assert_eq!(updated.version, 2);

    let deleted = s
        .delete("/pods/ns/a", &Preconditions::none(), None)
        .await
        .expect("delete");
    assert_eq!(data_of(&deleted.value), "v2");
    assert_eq!(deleted.mod_revision, updated.mod_revision);
    assert!(s.get("/pods/ns/a", ReadRevision::Latest).await.is_err());
    let twice = s.delete("/pods/ns/a", &Preconditions::none(), None).await;
    assert!(matches!(twice, Err(StorageError::NotFound { .. })));

    // A recreated key starts a new incarnation.
    let recreated = s
        .create("/pods/ns/a", object("a", "u2", "v3"))
        .await
        .expect("recreate");
    assert_eq!(recreated.version, 1);
    assert!(recreated.create_revision > created.create_revision);
}

async fn preconditions_guard_update_and_delete(h: &Harness) {
    let s = &h.store;
    let kv = s
        .create("/cm/ns/p", object("p", "uid-1", "x"))
        .await
        .expect("create");
    let wrong_uid = Preconditions {
        uid: Some("uid-2".into()),
        resource_version: None,
    };
    let r = s
        .guaranteed_update(
            "/cm/ns/p",
            UpdateOptions {
                preconditions: wrong_uid.clone(),
                ..Default::default()
            },
            &mut |_| Ok(Update::Write(object("p", "uid-1", "y"))),
        )
        .await;
    assert!(matches!(r, Err(StorageError::Conflict { .. })), "{r:?}");
    let r = s.delete("/cm/ns/p", &wrong_uid, None).await;
    assert!(matches!(r, Err(StorageError::Conflict { .. })), "{r:?}");

    let stale_rv = Preconditions {
        uid: None,
        resource_version: Some(kv.mod_revision - 1),
    };
    let r = s.delete("/cm/ns/p", &stale_rv, None).await;
    assert!(matches!(r, Err(StorageError::Conflict { .. })), "{r:?}");

    // A refused validation keeps the object.
    let r = s
        .delete(
            "/cm/ns/p",
            &Preconditions::none(),
            Some(&|_kv: &storage::KeyValue| Err(StorageError::Invalid("not yet".into()))),
        )
        .await;
    assert!(matches!(r, Err(StorageError::Invalid(_))));
    assert_eq!(
        data_of(
            &s.get("/cm/ns/p", ReadRevision::Latest)
                .await
                .expect("kept")
                .value
        ),
        "x"
    );

    let right = Preconditions {
        uid: Some("uid-1".into()),
        resource_version: Some(kv.mod_revision),
    };
    s.delete("/cm/ns/p", &right, None)
        .await
        .expect("delete with matching preconditions");
}

async fn guaranteed_update_semantics(h: &Harness) {
    let s = &h.store;
    // Create on update.
    let made = s
        .guaranteed_update(
            "/leases/ns/l",
            UpdateOptions {
                ignore_not_found: true,
                ..Default::default()
            },
            &mut |cur| {
                assert!(cur.is_none());
                Ok(Update::Write(object("l", "u", "first")))
            },
        )
        .await
        .expect("create on update");
    assert_eq!(made.version, 1);
    // Without ignore_not_found, a missing key is NotFound and the function never runs.
    let r = s
        .guaranteed_update("/leases/ns/none", UpdateOptions::default(), &mut |_| {
            panic!("must not be called")
        })
        .await;
    assert!(matches!(r, Err(StorageError::NotFound { .. })));
    // An update that changes nothing writes nothing.
    let before = s.current_revision().await.expect("revision");
    let same = s
        .guaranteed_update("/leases/ns/l", UpdateOptions::default(), &mut |cur| {
            Ok(Update::Write(cur.expect("exists").value.clone()))
        })
        .await
        .expect("no-op update");
    assert_eq!(same.mod_revision, made.mod_revision);
    assert_eq!(s.current_revision().await.expect("revision"), before);
    // The update function's own error comes back untouched.
    #[derive(Debug, thiserror::Error)]
    #[error("nope")]
    struct Nope;
    let r = s
        .guaranteed_update("/leases/ns/l", UpdateOptions::default(), &mut |_| {
            Err(StorageError::Aborted(Box::new(Nope)))
        })
        .await;
    match r {
        Err(StorageError::Aborted(e)) => assert!(e.downcast_ref::<Nope>().is_some()),
        other => panic!("expected the caller's error, got {other:?}"),
    }
}

async fn concurrent_writers_lose_no_update(h: &Harness) {
    const WRITERS: usize = 64;
    const EACH: usize = 10;
    let s = h.store.clone();
    s.create("/counters/c", Bytes::from_static(b"0"))
        .await
        .expect("create");
    let calls = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..WRITERS {
        let s = s.clone();
        let calls = calls.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..EACH {
                s.guaranteed_update("/counters/c", UpdateOptions::default(), &mut |cur| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    let n: u64 = std::str::from_utf8(&cur.expect("exists").value)
                        .expect("utf8")
                        .parse()
                        .expect("number");
                    Ok(Update::Write(Bytes::from((n + 1).to_string())))
                })
                .await
                .expect("update lands");
            }
        }));
    }
    for t in tasks {
        t.await.expect("writer task");
    }
    let kv = s
        .get("/counters/c", ReadRevision::Latest)
        .await
        .expect("get");
    assert_eq!(
        std::str::from_utf8(&kv.value).expect("utf8"),
        (WRITERS * EACH).to_string()
    );
    assert_eq!(kv.version as usize, WRITERS * EACH + 1);
    // Contention really happened and was retried, not serialized away.
    assert!(calls.load(Ordering::Relaxed) >= WRITERS * EACH);
}

async fn stale_cached_value_is_retried(h: &Harness) {
    let s = &h.store;
    let v1 = s
        .create("/cm/ns/s", Bytes::from_static(b"1"))
        .await
        .expect("create");
    s.guaranteed_update("/cm/ns/s", UpdateOptions::default(), &mut |_| {
        Ok(Update::Write(Bytes::from_static(b"2")))
    })
    .await
    .expect("update");
    let mut seen = Vec::new();
    let out = s
        .guaranteed_update(
            "/cm/ns/s",
            UpdateOptions {
                cached: Some(v1),
                ..Default::default()
            },
            &mut |cur| {
                let cur = cur.expect("exists").value.clone();
                seen.push(cur.clone());
                Ok(Update::Write(Bytes::from(format!(
                    "{}+",
                    String::from_utf8_lossy(&cur)
                ))))
            },
        )
        .await
        .expect("update from a stale cache");
    assert_eq!(
        &out.value[..],
        b"2+",
        "the update must apply to the stored value"
    );
    assert_eq!(
        seen,
        vec![Bytes::from_static(b"1"), Bytes::from_static(b"2")]
    );
}

async fn fill(h: &Harness, prefix: &str, n: usize) {
    for i in 0..n {
        h.store
            .create(
                &format!("{prefix}{i:04}"),
                object(&i.to_string(), "u", &format!("v{i}")),
            )
            .await
            .expect("create");
    }
}

fn list(limit: i64, token: Option<String>) -> ListOptions {
    ListOptions {
        limit,
        continue_token: token,
        recursive: true,
        ..Default::default()
    }
}

async fn list_pages_share_one_snapshot(h: &Harness) {
    fill(h, "/pods/a/p", 25).await;
    // A sibling prefix must not leak into the list.
    h.store
        .create("/pods/ab/x", Bytes::from_static(b"{}"))
        .await
        .expect("create");
    let first = h
        .store
        .get_list("/pods/a", list(10, None))
        .await
        .expect("page 1");
    assert_eq!(first.items.len(), 10);
    assert_eq!(first.remaining, Some(15));
    let token = first.continue_token.clone().expect("more pages");
    let second = h
        .store
        .get_list("/pods/a", list(10, Some(token)))
        .await
        .expect("page 2");
    assert_eq!(second.revision, first.revision);
    assert_eq!(second.remaining, Some(5));
    let third = h
        .store
        .get_list("/pods/a", list(10, second.continue_token.clone()))
        .await
        .expect("page 3");
    assert_eq!(third.items.len(), 5);
    assert!(third.continue_token.is_none());
    let keys: Vec<String> = [first, second, third]
        .into_iter()
        .flat_map(|p| p.items.into_iter().map(|kv| kv.key))
        .collect();
    let expected: Vec<String> = (0..25).map(|i| format!("/pods/a/p{i:04}")).collect();
    assert_eq!(keys, expected);
    // Unpaged, and a single key.
    let all = h
        .store
        .get_list("/pods/a/", list(0, None))
        .await
        .expect("list");
    assert_eq!(all.items.len(), 25);
    let one = h
        .store
        .get_list(
            "/pods/a/p0003",
            ListOptions {
                recursive: false,
                ..Default::default()
            },
        )
        .await
        .expect("list one");
    assert_eq!(one.items.len(), 1);
}

async fn paging_across_concurrent_writes(h: &Harness) {
    fill(h, "/cm/p/k", 100).await;
    let first = h
        .store
        .get_list("/cm/p", list(7, None))
        .await
        .expect("page 1");
    let snapshot = first.revision;
    let writer = {
        let s = h.store.clone();
        tokio::spawn(async move {
            for i in 0..50 {
                s.create(&format!("/cm/p/k{:04}", 100 + i), Bytes::from_static(b"{}"))
                    .await
                    .expect("create");
                s.delete(
                    &format!("/cm/p/k{:04}", 50 + i),
                    &Preconditions::none(),
                    None,
                )
                .await
                .expect("delete");
                s.guaranteed_update(
                    &format!("/cm/p/k{i:04}"),
                    UpdateOptions::default(),
                    &mut |_| Ok(Update::Write(Bytes::from_static(b"changed"))),
                )
                .await
                .expect("update");
                tokio::task::yield_now().await;
            }
        })
    };
    let mut items = first.items;
    let mut token = first.continue_token;
    while let Some(t) = token {
        let page = h
            .store
            .get_list("/cm/p", list(7, Some(t)))
            .await
            .expect("page");
        assert_eq!(page.revision, snapshot);
        items.extend(page.items);
        token = page.continue_token;
        tokio::task::yield_now().await;
    }
    writer.await.expect("writer");
    let keys: Vec<&str> = items.iter().map(|kv| kv.key.as_str()).collect();
    let unique: BTreeSet<&str> = keys.iter().copied().collect();
    assert_eq!(unique.len(), keys.len(), "an item appeared twice");
    let expected: BTreeSet<String> = (0..100).map(|i| format!("/cm/p/k{i:04}")).collect();
    let got: BTreeSet<String> = keys.iter().map(|k| k.to_string()).collect();
    assert_eq!(got, expected, "the pages must equal the snapshot");
    assert!(items
        .iter()
        .all(|kv| kv.mod_revision <= snapshot && &kv.value[..] != b"changed"));
}

async fn paging_with_predicate_fills_pages(h: &Harness) {
    fill(h, "/svc/f/s", 40).await;
    let even: Predicate = Arc::new(|kv: &storage::KeyValue| {
        kv.key
            .trim_start_matches("/registry")
            .ends_with(['0', '2', '4', '6', '8'])
    });
    let mut token = None;
    let mut pages = Vec::new();
    loop {
        let page = h
            .store
            .get_list(
                "/svc/f",
                ListOptions {
                    predicate: Some(even.clone()),
                    ..list(5, token)
                },
            )
            .await
            .expect("page");
        pages.push(page.items.len());
        token = page.continue_token;
        if token.is_none() {
            break;
        }
    }
    assert_eq!(pages.iter().sum::<usize>(), 20);
    assert!(
        pages[..3].iter().all(|n| *n == 5),
        "filtered pages are filled: {pages:?}"
    );
}

async fn continue_tokens_invalid_and_expired(h: &Harness) {
    let r = h
        .store
        .get_list("/pods/x", list(5, Some("not-a-token".into())))
        .await;
    assert!(matches!(r, Err(StorageError::Invalid(_))), "{r:?}");

    fill(h, "/pods/x/p", 10).await;
    let first = h
        .store
        .get_list("/pods/x", list(4, None))
        .await
        .expect("page 1");
    for i in 0..5 {
        h.store
            .guaranteed_update(
                &format!("/pods/x/p{i:04}"),
                UpdateOptions::default(),
                &mut |_| Ok(Update::Write(Bytes::from_static(b"new"))),
            )
            .await
            .expect("update");
    }
    let now = h.store.current_revision().await.expect("revision");
    h.store.compact(now).await.expect("compact");
    let r = h
        .store
        .get_list("/pods/x", list(4, first.continue_token.clone()))
        .await;
    let fresh = match r {
        Err(StorageError::Expired { fresh_continue }) => fresh_continue.expect("fresh token"),
        other => panic!("expected Expired, got {other:?}"),
    };
    // The fresh token continues at the latest revision from where the old one stopped.
    let rest = h
        .store
        .get_list("/pods/x", list(0, Some(fresh)))
        .await
        .expect("continue");
    assert_eq!(rest.items.len(), 6);
    assert_eq!(rest.items[0].key, "/pods/x/p0004");
    assert_eq!(&rest.items[0].value[..], b"new");
}

async fn reads_at_revisions(h: &Harness) {
    let a = h
        .store
        .create("/cm/r/a", Bytes::from_static(b"1"))
        .await
        .expect("create");
    h.store
        .guaranteed_update("/cm/r/a", UpdateOptions::default(), &mut |_| {
            Ok(Update::Write(Bytes::from_static(b"2")))
        })
        .await
        .expect("update");
    h.store
        .delete("/cm/r/a", &Preconditions::none(), None)
        .await
        .expect("delete");
    let old = h
        .store
        .get("/cm/r/a", ReadRevision::Exact(a.mod_revision))
        .await
        .expect("read the past");
    assert_eq!(&old.value[..], b"1");
    let listed = h
        .store
        .get_list(
            "/cm/r",
            ListOptions {
                revision: ReadRevision::Exact(a.mod_revision),
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .expect("list the past");
    assert_eq!(listed.revision, a.mod_revision);
    assert_eq!(listed.items.len(), 1);
    let future = h.store.current_revision().await.expect("rev") + 1000;
    let r = h
        .store
        .get_list(
            "/cm/r",
            ListOptions {
                revision: ReadRevision::NotOlderThan(future),
                recursive: true,
                ..Default::default()
            },
        )
        .await;
    assert!(
        matches!(r, Err(StorageError::TooLargeResourceVersion { .. })),
        "{r:?}"
    );
    let now = h.store.current_revision().await.expect("rev");
    h.store.compact(now).await.expect("compact");
    let r = h
        .store
        .get("/cm/r/a", ReadRevision::Exact(a.mod_revision))
        .await;
    assert!(matches!(r, Err(StorageError::TooOld { .. })), "{r:?}");
}

/// Applies a fixed sequence of writes and returns the expected (kind, key, data, prev data).
async fn script(h: &Harness) -> Vec<(EventKind, String, String, Option<String>)> {
    let mut expected = Vec::new();
    let mut values: BTreeMap<String, String> = BTreeMap::new();
    for step in 0..30 {
        let key = format!("/w/ns/k{}", step % 4);
        let data = format!("d{step}");
        let prev = values.get(&key).cloned();
        if step % 7 == 6 && prev.is_some() {
            h.store
                .delete(&key, &Preconditions::none(), None)
                .await
                .expect("delete");
            values.remove(&key);
            expected.push((
                EventKind::Deleted,
                key,
                prev.clone().unwrap_or_default(),
                prev,
            ));
        } else if prev.is_some() {
            let v = object("k", "u", &data);
            h.store
                .guaranteed_update(&key, UpdateOptions::default(), &mut |_| {
                    Ok(Update::Write(v.clone()))
                })
                .await
                .expect("update");
            values.insert(key.clone(), data.clone());
            expected.push((EventKind::Modified, key, data, prev));
        } else {
            h.store
                .create(&key, object("k", "u", &data))
                .await
                .expect("create");
            values.insert(key.clone(), data.clone());
            expected.push((EventKind::Added, key, data, None));
        }
    }
    expected
}

fn summarize(events: &[storage::WatchEvent]) -> Vec<(EventKind, String, String, Option<String>)> {
    events
        .iter()
        .map(|e| {
            (
                e.kind,
                e.key.clone(),
                data_of(&e.value),
                e.prev_value.as_ref().map(|p| data_of(p)),
            )
        })
        .collect()
}

async fn watch_order_prev_values_and_resume(h: &Harness) {
    let start = h.store.current_revision().await.expect("revision");
    let opts = |revision| WatchOptions {
        revision,
        recursive: true,
        ..Default::default()
    };
    let mut w = h.store.watch("/w", opts(start)).await.expect("watch");
    let expected = script(h).await;
    let events = take(&mut w, expected.len()).await;
    assert_eq!(summarize(&events), expected);
    assert!(events.windows(2).all(|p| p[0].revision < p[1].revision));
    // Resuming from any revision delivers exactly what followed it.
    for (i, e) in events.iter().enumerate().step_by(3) {
        let mut resumed = h.store.watch("/w", opts(e.revision)).await.expect("resume");
        let rest = take(&mut resumed, expected.len() - i - 1).await;
        assert_eq!(
            summarize(&rest),
            expected[i + 1..].to_vec(),
            "resume after event {i}"
        );
    }
    // A key watch sees only its key.
    let mut one = h
        .store
        .watch(
            "/w/ns/k1",
            WatchOptions {
                revision: start,
                ..Default::default()
            },
        )
        .await
        .expect("key watch");
    let k1: Vec<_> = expected
        .iter()
        .filter(|e| e.1 == "/w/ns/k1")
        .cloned()
        .collect();
    assert_eq!(summarize(&take(&mut one, k1.len()).await), k1);
}

async fn watch_too_old_after_compaction(h: &Harness) {
    let start = h.store.current_revision().await.expect("revision");
    for i in 0..5 {
        h.store
            .create(&format!("/c/ns/{i}"), Bytes::from_static(b"{}"))
            .await
            .expect("create");
    }
    let now = h.store.current_revision().await.expect("revision");
    h.store.compact(now).await.expect("compact");
    let watched = h
        .store
        .watch(
            "/c",
            WatchOptions {
                revision: start,
                recursive: true,
                ..Default::default()
            },
        )
        .await;
    let err = match watched {
        Err(e) => e,
        Ok(mut stream) => {
            match tokio::time::timeout(std::time::Duration::from_secs(10), stream.next()).await {
                Ok(Some(Err(e))) => e,
                other => panic!("expected a too-old error, got {other:?}"),
            }
        }
    };
    assert!(matches!(err, StorageError::TooOld { .. }), "{err:?}");
    // From the compaction point on, watching works.
    let mut w = h
        .store
        .watch(
            "/c",
            WatchOptions {
                revision: now,
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .expect("watch at compaction point");
    h.store
        .create("/c/ns/new", Bytes::from_static(b"{}"))
        .await
        .expect("create");
    assert_eq!(take(&mut w, 1).await[0].key, "/c/ns/new");
}

async fn watch_predicate_transitions(h: &Harness) {
    let start = h.store.current_revision().await.expect("revision");
    let hot: Predicate = Arc::new(|kv: &storage::KeyValue| data_of(&kv.value) == "hot");
    let mut w = h
        .store
        .watch(
            "/p",
            WatchOptions {
                revision: start,
                recursive: true,
                predicate: Some(hot),
                ..Default::default()
            },
        )
        .await
        .expect("watch");
    let set = |v: &'static str| {
        let s = h.store.clone();
        async move {
            s.guaranteed_update(
                "/p/ns/x",
                UpdateOptions {
                    ignore_not_found: true,
                    ..Default::default()
                },
                &mut |_| Ok(Update::Write(object("x", "u", v))),
            )
            .await
            .expect("write")
        }
    };
    set("cold").await;
    set("hot").await;
    set("hot2").await;
    set("hot").await;
    h.store
        .delete("/p/ns/x", &Preconditions::none(), None)
        .await
        .expect("delete");
    let events = take(&mut w, 3).await;
    let kinds: Vec<_> = events.iter().map(|e| (e.kind, data_of(&e.value))).collect();
    assert_eq!(
        kinds,
        vec![
            (EventKind::Added, "hot".to_string()),
            // Stopped matching: reported as deleted, with the last matching state.
            (EventKind::Deleted, "hot".to_string()),
            (EventKind::Added, "hot".to_string()),
        ]
    );
    let last = take(&mut w, 1).await;
    assert_eq!(
        (last[0].kind, data_of(&last[0].value)),
        (EventKind::Deleted, "hot".to_string())
    );
}

async fn watch_initial_events(h: &Harness) {
    fill(h, "/i/ns/o", 3).await;
    let mut w = h
        .store
        .watch(
            "/i",
            WatchOptions {
                revision: 0,
                recursive: true,
                send_initial_events: Some(true),
                bookmarks: true,
                ..Default::default()
            },
        )
        .await
        .expect("watch");
    let first = take(&mut w, 4).await;
    assert!(first[..3].iter().all(|e| e.kind == EventKind::Added));
    assert_eq!(first[3].kind, EventKind::Bookmark);
    assert!(first[3].initial_events_end);
    h.store
        .create("/i/ns/late", Bytes::from_static(b"{}"))
        .await
        .expect("create");
    let next = take_changes(&mut w, 1).await;
    assert_eq!(
        (next[0].kind, next[0].key.as_str()),
        (EventKind::Added, "/i/ns/late")
    );
}

async fn count_and_revision(h: &Harness) {
    let r0 = h.store.current_revision().await.expect("revision");
    fill(h, "/n/ns/o", 7).await;
    assert_eq!(h.store.count("/n").await.expect("count"), 7);
    assert_eq!(h.store.count("/n/ns").await.expect("count"), 7);
    assert_eq!(h.store.count("/none").await.expect("count"), 0);
    assert_eq!(h.store.current_revision().await.expect("revision"), r0 + 7);
}

/// A full list is one etcd range: its response must not be held to gRPC's default 4 MiB
/// message limit (a collection of a few thousand objects is larger).
async fn full_lists_beyond_four_mebibytes(h: &Harness) {
    let value = "x".repeat(512 * 1024);
    for i in 0..12 {
        h.store
            .create(
                &format!("/big/ns/o{i:02}"),
                Bytes::from(format!(r#"{{"data":"{value}"}}"#)),
            )
            .await
            .expect("create");
    }
    let all = h.store.get_list("/big", list(0, None)).await.expect("list");
    assert_eq!(all.items.len(), 12);
    let bytes: usize = all.items.iter().map(|item| item.value.len()).sum();
    assert!(bytes > 6 * 1024 * 1024, "{bytes} bytes listed");
}

async fn delete_from_a_stale_cache(h: &Harness) {
    let s = &h.store;
    let v1 = s
        .create("/cm/ns/d", object("d", "u1", "1"))
        .await
        .expect("create");
    s.guaranteed_update("/cm/ns/d", UpdateOptions::default(), &mut |_| {
        Ok(Update::Write(object("d", "u1", "2")))
    })
    .await
    .expect("update");
    // The cached read is stale: the delete still happens, on the stored value.
    let gone = s
        .delete_cached("/cm/ns/d", &Preconditions::none(), v1.clone())
        .await
        .expect("delete from a stale cache");
    assert_eq!(data_of(&gone.value), "2");
    assert!(s.get("/cm/ns/d", ReadRevision::Latest).await.is_err());
    // Preconditions are checked against the stored value, not the cached one.
    let v1 = s
        .create("/cm/ns/d", object("d", "u2", "1"))
        .await
        .expect("recreate");
    let pinned = Preconditions {
        uid: None,
        resource_version: Some(v1.mod_revision),
    };
    s.guaranteed_update("/cm/ns/d", UpdateOptions::default(), &mut |_| {
        Ok(Update::Write(object("d", "u2", "3")))
    })
    .await
    .expect("update");
    let r = s.delete_cached("/cm/ns/d", &pinned, v1).await;
    assert!(matches!(r, Err(StorageError::Conflict { .. })), "{r:?}");
}

/// An update function may decide to keep the key or remove it; a removal decided on a value
/// that changed meanwhile is decided again on the fresh one.
async fn update_may_keep_or_delete(h: &Harness) {
    let s = &h.store;
    let v1 = s
        .create("/cm/ns/k", object("k", "u1", "1"))
        .await
        .expect("create");
    let kept = s
        .guaranteed_update("/cm/ns/k", UpdateOptions::default(), &mut |_| {
            Ok(Update::Keep)
        })
        .await
        .expect("keep");
    assert_eq!(kept, v1);
    let missing = s
        .guaranteed_update(
            "/cm/ns/none",
            UpdateOptions {
                ignore_not_found: true,
                ..Default::default()
            },
            &mut |_| Ok(Update::Keep),
        )
        .await;
    assert!(
        matches!(missing, Err(StorageError::NotFound { .. })),
        "{missing:?}"
    );

    // Starting from a stale copy, the first decision's compare-and-swap loses; the function
    // sees the stored value next and its decision lands.
    let v2 = s
        .guaranteed_update("/cm/ns/k", UpdateOptions::default(), &mut |_| {
            Ok(Update::Write(object("k", "u1", "2")))
        })
        .await
        .expect("update");
    let mut seen = Vec::new();
    let removed = s
        .guaranteed_update(
            "/cm/ns/k",
            UpdateOptions {
                cached: Some(v1),
                ..Default::default()
            },
            &mut |cur| {
                let cur = cur.expect("present");
                seen.push(data_of(&cur.value));
                Ok(Update::Delete)
            },
        )
        .await
        .expect("delete");
    assert_eq!(seen.last().map(String::as_str), Some("2"));
    assert_eq!(removed.mod_revision, v2.mod_revision);
    assert_eq!(data_of(&removed.value), "2");
    let gone = s.get("/cm/ns/k", ReadRevision::Latest).await;
    assert!(
        matches!(gone, Err(StorageError::NotFound { .. })),
        "{gone:?}"
    );
}

/// All pages of a list read a page at a time: from the snapshot of the first range, whatever is
/// written meanwhile, the same items as one list at that revision, filtered by the predicate.
async fn whole_lists_in_pages_read_one_snapshot(h: &Harness) {
    fill(h, "/pg/ns/o", 700).await;
    let opts = |predicate: Option<Predicate>| ListOptions {
        recursive: true,
        predicate,
        ..Default::default()
    };
    let mut paged = h
        .store
        .get_list_pages("/pg", opts(None))
        .await
        .expect("pages");
    let first = paged
        .pages
        .next()
        .await
        .expect("a page")
        .expect("first page");
    assert!(first.len() < 700, "read in pages, got {}", first.len());
    // Writes after the snapshot: a new key, a deleted one, an updated one.
    fill(h, "/pg/ns/p", 3).await;
    h.store
        .delete("/pg/ns/o0600", &Preconditions::none(), None)
        .await
        .expect("delete");
    h.store
        .guaranteed_update("/pg/ns/o0650", UpdateOptions::default(), &mut |_| {
            Ok(Update::Write(object("650", "u", "changed")))
        })
        .await
        .expect("update");
    let mut items = first;
    while let Some(page) = paged.pages.next().await {
        let page = page.expect("page");
        assert!(!page.is_empty(), "pages are never empty");
        items.extend(page);
    }
    let at = h
        .store
        .get_list(
            "/pg",
            ListOptions {
                revision: ReadRevision::Exact(paged.revision),
                ..list(0, None)
            },
        )
        .await
        .expect("list at the snapshot");
    assert_eq!(items, at.items);
    assert_eq!(items.len(), 700);
    assert_eq!(data_of(&items[650].value), "v650");

    // Only what matches, in pages that skip what does not.
    let even: Predicate = Arc::new(|kv| {
        data_of(&kv.value)
            .trim_start_matches('v')
            .parse::<u32>()
            .is_ok_and(|n| n % 100 == 0)
    });
    let filtered = h
        .store
        .get_list_pages("/pg", opts(Some(even)))
        .await
        .expect("pages");
    let pages: Vec<_> = filtered.pages.collect().await;
    let keys: Vec<String> = pages
        .into_iter()
        .flat_map(|p| p.expect("page"))
        .map(|kv| kv.key)
        .collect();
    // The latest state: o0600 is gone, p0000 (value v0) is new.
    let want: Vec<String> = (0..6)
        .map(|i| format!("/pg/ns/o{:04}", i * 100))
        .chain(["/pg/ns/p0000".to_string()])
        .collect();
    assert_eq!(keys, want);

    // A revision not reached yet, and a continue token, are refused up front.
    let future = h
        .store
        .get_list_pages(
            "/pg",
            ListOptions {
                revision: ReadRevision::NotOlderThan(at.revision + 1000),
                ..opts(None)
            },
        )
        .await;
    assert!(
        matches!(future, Err(StorageError::TooLargeResourceVersion { .. })),
        "{future:?}"
    );
    let continued = h
        .store
        .get_list_pages(
            "/pg",
            ListOptions {
                continue_token: Some("abc".into()),
                ..opts(None)
            },
        )
        .await;
    assert!(
        matches!(continued, Err(StorageError::Invalid(_))),
        "{continued:?}"
    );
}
