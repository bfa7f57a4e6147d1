//! The embedded store on a disk that fills up: a small tmpfs, filled by a ballast file and then
//! by the store's own writes. Writes fail with etcd's "database space exceeded" wording, reads
//! and watches carry on, writes resume by themselves once space returns, and a restart finds
//! every acknowledged write and none of the refused ones. Needs root (for the mount): skipped
//! with a message otherwise.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use storage::backend::DynBackend;
use storage::embedded::EmbeddedBackend;
use storage::{Interface, KvStore, ReadRevision, StorageError, WatchOptions};
use support::take_changes;
use test_support::tmpfs::{fill, Tmpfs};

/// Opens the store again once the dropped one's writer thread has let go of the file.
fn reopen(data: &Path) -> EmbeddedBackend {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match EmbeddedBackend::open(data) {
            Ok(backend) => return backend,
            Err(e) if Instant::now() < deadline => {
                eprintln!("reopen: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("reopening the store: {e}"),
        }
    }
}

fn value(i: usize) -> Bytes {
    Bytes::from(format!("{i:08}-").repeat(2048))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn embedded_store_survives_a_full_disk() {
    let Some(fs) = Tmpfs::mount("16m") else {
        return;
    };
    let data = fs.path().join("data");
    let ballast = fs.path().join("ballast");
    let backend: DynBackend = Arc::new(EmbeddedBackend::open(&data).expect("open"));
    let store = KvStore::new(backend.clone(), "/registry");
    let first = store
        .create("/full/0", value(0))
        .await
        .expect("first write");
    let mut watch = store
        .watch(
            "/full/",
            WatchOptions {
                revision: first.mod_revision,
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .expect("watch");

    fill(&ballast, 1 << 20);
    // The store's own writes take the last megabyte.
    let mut acked = vec![("/full/0".to_string(), first.mod_revision, 0)];
    let mut refused = Vec::new();
    let started = Instant::now();
    for i in 1..2000 {
        let key = format!("/full/{i}");
        match store.create(&key, value(i)).await {
            Ok(kv) => acked.push((key, kv.mod_revision, i)),
            Err(StorageError::Internal(message)) => {
                assert!(
                    message.contains("mvcc: database space exceeded"),
                    "unexpected message: {message}"
                );
                refused.push(key);
                if refused.len() >= 5 {
                    break;
                }
            }
            Err(other) => panic!("write {i}: not the no-space error: {other:?}"),
        }
    }
    assert!(!refused.is_empty(), "the disk never filled");
    assert!(acked.len() > 1, "no write fitted beside the ballast");
    eprintln!(
        "{} writes acknowledged, then refused; {:?}",
        acked.len(),
        started.elapsed()
    );

    // Still full after the writer's pause between tries: refused again, and no panic.
    tokio::time::sleep(Duration::from_millis(700)).await;
    match store.create("/full/again", value(1)).await {
        Err(StorageError::Internal(message)) if message.contains("database space exceeded") => {
            refused.push("/full/again".into())
        }
        other => panic!("a write on a still-full disk: {other:?}"),
    }

    // Reads and the watch still work while the disk is full.
    for (key, revision, i) in &acked {
        let kv = store
            .get(key, ReadRevision::Latest)
            .await
            .unwrap_or_else(|e| panic!("reading {key} on a full disk: {e}"));
        assert_eq!((kv.mod_revision, &kv.value), (*revision, &value(*i)));
    }
    assert_eq!(
        store.count("/full/").await.expect("count"),
        acked.len() as i64
    );
    let events = take_changes(&mut watch, acked.len() - 1).await;
    let seen: Vec<i64> = events.iter().map(|e| e.revision).collect();
    let expected: Vec<i64> = acked[1..].iter().map(|(_, r, _)| *r).collect();
    assert_eq!(
        seen, expected,
        "the watch saw exactly the acknowledged writes"
    );

    // Space returns: writes resume by themselves.
    std::fs::remove_file(&ballast).expect("remove the ballast");
    let last_acked = acked.iter().map(|(_, r, _)| *r).max().unwrap_or(0);
    let deadline = Instant::now() + Duration::from_secs(10);
    let resumed = loop {
        match store.create("/full/after", value(9999)).await {
            Ok(kv) => break kv,
            Err(e) if Instant::now() < deadline => {
                eprintln!("not yet: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("writes did not resume after space returned: {e}"),
        }
    };
    assert!(
        resumed.mod_revision > last_acked,
        "revisions stay monotonic"
    );
    let event = take_changes(&mut watch, 1).await.remove(0);
    assert_eq!(
        (event.key.as_str(), event.revision),
        ("/full/after", resumed.mod_revision)
    );
    acked.push(("/full/after".into(), resumed.mod_revision, 9999));

    // A restart on the same files finds every acknowledged write and no refused one.
    drop(watch);
    drop(store);
    drop(backend);
    let backend: DynBackend = Arc::new(reopen(&data));
    let store = KvStore::new(backend.clone(), "/registry");
    for (key, revision, i) in &acked {
        let kv = store
            .get(key, ReadRevision::Latest)
            .await
            .unwrap_or_else(|e| panic!("acknowledged {key} lost: {e}"));
        assert_eq!((kv.mod_revision, &kv.value), (*revision, &value(*i)));
    }
    for key in &refused {
        assert!(
            matches!(
                store.get(key, ReadRevision::Latest).await,
                Err(StorageError::NotFound { .. })
            ),
            "refused {key} appeared"
        );
    }
    assert_eq!(
        backend.current_revision().await.expect("revision"),
        resumed.mod_revision
    );
    drop(store);
    drop(backend);
}
