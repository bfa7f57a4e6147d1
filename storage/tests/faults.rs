//! Faults: etcd going away and coming back, the embedded store killed mid-write, scheduled
//! compaction.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use storage::backend::DynBackend;
use storage::embedded::EmbeddedBackend;
use storage::{
    spawn_compactor, Cacher, CacherConfig, Interface, KvStore, ReadRevision, StorageError,
    WatchOptions,
};
use support::{take, Harness};
use test_support::FromBackend;

/// etcd stopped: a read ends Unavailable within the client's wait for a member (15 s, as
/// clientv3's waitForReady waits for its deadline; a refused connection ends it at once, but a
/// dying process's socket may first look silent), health fails, and everything recovers.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn etcd_outage_ends_requests_and_recovers() {
    let mut h = Harness::etcd().await;
    let cache = Cacher::new(h.store.clone(), "/things/", CacherConfig::default());
    let before = h
        .store
        .create("/things/a/before", Bytes::from_static(b"1"))
        .await
        .expect("create");
    let mut w = cache
        .watch(
            "/things/",
            WatchOptions {
                revision: before.mod_revision,
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .expect("watch");

    h.test_backend.etcd_server_mut().expect("etcd").stop();
    let started = Instant::now();
    let r = h.store.get("/things/a/before", ReadRevision::Latest).await;
    assert!(matches!(r, Err(StorageError::Unavailable(_))), "{r:?}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}: {r:?}",
        started.elapsed()
    );
    assert!(h.backend.check_health().await.is_err());

    h.test_backend
        .etcd_server_mut()
        .expect("etcd")
        .restart()
        .await;
    // The client reconnects by itself.
    let deadline = Instant::now() + Duration::from_secs(20);
    let after = loop {
        match h
            .store
            .create("/things/a/after", Bytes::from_static(b"2"))
            .await
        {
            Ok(kv) => break kv,
            Err(e) if Instant::now() < deadline => {
                assert!(e.is_unavailable(), "{e:?}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("etcd did not come back: {e}"),
        }
    };
    h.backend.check_health().await.expect("healthy again");
    // The cache resumed its watch: the watcher sees the write made after the restart.
    let events = take(&mut w, 1).await;
    assert_eq!(events[0].key, "/things/a/after");
    assert_eq!(events[0].revision, after.mod_revision);
}

/// The child half of `embedded_survives_kill_9`: writes until killed, printing each
/// acknowledged write. Ignored in normal runs; that test starts it with `--ignored`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the child process of embedded_survives_kill_9"]
async fn crash_child() {
    let Some(dir) = std::env::var_os("STORAGE_CRASH_CHILD_DIR") else {
        return;
    };
    let backend: DynBackend =
        Arc::new(EmbeddedBackend::open(std::path::Path::new(&dir)).expect("open"));
    let store = KvStore::new(backend, "/registry");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for task in 0..16 {
        let store = store.clone();
        let tx = tx.clone();
        tokio::spawn(async move {
            for i in 0.. {
                let key = format!("/crash/{task}/{i}");
                let kv = store
                    .create(&key, Bytes::from(format!("value-{task}-{i}")))
                    .await
                    .expect("write");
                let _ = tx.send(format!("{key} {}", kv.mod_revision));
            }
        });
    }
    while let Some(line) = rx.recv().await {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ACK {line}");
        let _ = out.flush();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_survives_kill_9() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "crash_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("STORAGE_CRASH_CHILD_DIR", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start child");
    let stdout = child.stdout.take().expect("child stdout");
    let mut acked = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read child");
        if let Some(rest) = line.strip_prefix("ACK ") {
            let (key, rev) = rest.split_once(' ').expect("ack line");
            acked.push((key.to_string(), rev.parse::<i64>().expect("revision")));
            if acked.len() >= 2000 {
                break;
            }
        }
    }
    child.kill().expect("SIGKILL the writer");
    let _ = child.wait();
    assert!(
        acked.len() >= 2000,
        "child acknowledged only {}",
        acked.len()
    );

    let backend: DynBackend = Arc::new(EmbeddedBackend::open(dir.path()).expect("reopen"));
    let store = KvStore::new(backend.clone(), "/registry");
    for (key, rev) in &acked {
        let kv = store
            .get(key, ReadRevision::Latest)
            .await
            .unwrap_or_else(|e| panic!("acknowledged {key} lost: {e}"));
        assert_eq!(kv.mod_revision, *rev, "{key}");
        let (task, i) = key
            .trim_start_matches("/crash/")
            .split_once('/')
            .expect("key");
        assert_eq!(&kv.value[..], format!("value-{task}-{i}").as_bytes());
    }
    let max = acked.iter().map(|(_, r)| *r).max().unwrap_or(0);
    assert!(backend.current_revision().await.expect("revision") >= max);
    // And it takes writes again, at later revisions.
    let next = store
        .create("/crash/after", Bytes::from_static(b"x"))
        .await
        .expect("write");
    assert!(next.mod_revision > max);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_compaction_trims_history() {
    for h in [Harness::embedded().await, Harness::etcd().await] {
        let first = h
            .store
            .create("/k/a", Bytes::from_static(b"1"))
            .await
            .expect("create");
        let compactor = spawn_compactor(h.backend.clone(), Duration::from_millis(200));
        let deadline = Instant::now() + Duration::from_secs(10);
        for n in 0.. {
            // Keep writing so each interval has a newer revision to compact to.
            h.store
                .create(&format!("/k/{n}"), Bytes::new())
                .await
                .expect("write");
            let r = h
                .store
                .get("/k/a", ReadRevision::Exact(first.mod_revision))
                .await;
            if matches!(r, Err(StorageError::TooOld { .. })) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{}: history never compacted",
                h.backend.name()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // The latest state survives compaction.
        assert_eq!(
            &h.store
                .get("/k/a", ReadRevision::Latest)
                .await
                .expect("get")
                .value[..],
            b"1"
        );
        compactor.abort();
    }
}

/// A member that accepts connections and never answers (a stalled process, or a partition
/// where the kernel still completes the handshake): reads move to the live member as soon as
/// the status probe finds it dead, not at the client's 15 s request timeout; writes then go to
/// the live member first; the cluster check passes with one member answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn etcd_reads_leave_a_member_that_stopped_answering() {
    use storage::backend::etcd::{EtcdBackend, EtcdConfig};
    use storage::backend::{Backend, KeyRange, RangeRequest};

    let etcd = test_support::EtcdServer::start().await;
    // Accepts and holds every connection, reading nothing and answering nothing.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let silent_endpoint = format!("http://{}", silent.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in silent.incoming() {
            held.push(conn);
        }
    });
    let config = EtcdConfig::new(vec![silent_endpoint.clone(), etcd.endpoint()]);
    let backend = EtcdBackend::connect(config).await.expect("connect");

    // The first request tries the silent member first (round-robin starts at the first).
    let started = Instant::now();
    let read = backend
        .range(RangeRequest {
            range: Some(KeyRange::prefix("/")),
            count_only: true,
            ..Default::default()
        })
        .await;
    let took = started.elapsed();
    assert!(read.is_ok(), "{read:?}");
    assert!(took < Duration::from_secs(4), "read took {took:?}");
    eprintln!("read abandoned the silent member after {took:?}");

    let health = backend.endpoint_health();
    assert_eq!(
        health,
        vec![(silent_endpoint, false), (etcd.endpoint(), true)],
        "{health:?}"
    );
    let started = Instant::now();
    let written = backend
        .put_if("/probe", Bytes::from_static(b"1"), 0, None)
        .await;
    assert!(written.is_ok(), "{written:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    // A key with a ttl first takes an etcd lease (LeaseGrant): that path too goes to the
    // member that answers. (Leader election writes coordination Leases, plain keys.)
    let started = Instant::now();
    let leased = backend
        .put_if(
            "/leased",
            Bytes::from_static(b"1"),
            0,
            Some(Duration::from_secs(60)),
        )
        .await;
    assert!(leased.is_ok(), "{leased:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    backend.check_health().await.expect("one member answers");
}

/// Creates `key`, retrying while the cluster elects a leader; a retry that finds the key
/// means an earlier attempt was applied though its answer was lost.
async fn create_retrying(store: &KvStore, key: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match store.create(key, Bytes::from_static(b"v")).await {
            Ok(_) | Err(StorageError::AlreadyExists { .. }) => return,
            Err(e) if e.is_unavailable() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            Err(e) => panic!("create {key}: {e}"),
        }
    }
}

/// Three members, each in turn stopped (SIGSTOP: connections stay open and nothing answers,
/// as a partition looks to a client) while a key is written: the watch cache's stream, on
/// whichever member it is, moves to a live one and resumes from its revision, so the watcher
/// sees every write once and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn etcd_watch_cache_moves_off_a_member_that_stops_answering() {
    let cluster = tokio::task::spawn_blocking(test_support::EtcdCluster::start);
    let mut cluster = cluster.await.expect("cluster");
    let endpoints: Vec<String> = (0..3).map(|i| cluster.endpoint(i)).collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = storage::backend::open(&endpoints, dir.path())
        .await
        .expect("open");
    let store = KvStore::new(backend, "/registry");
    let cache = Cacher::new(store.clone(), "/things/", CacherConfig::default());
    let start = store.current_revision().await.expect("revision");
    let mut w = cache
        .watch(
            "/things/",
            WatchOptions {
                revision: start,
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .expect("watch");
    let mut last = start;
    for i in 0..3 {
        cluster.pause(i);
        // The status probe finds it dead within ~1.5 s; writes then go elsewhere.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let key = format!("/things/k/{i}");
        let started = Instant::now();
        create_retrying(&store, &key).await;
        let event = support::take_changes(&mut w, 1).await.remove(0);
        eprintln!(
            "member {i} stopped: {key} written and watched in {:?}",
            started.elapsed()
        );
        assert_eq!(event.key, key, "a write missed or delivered twice");
        assert!(event.revision > last);
        last = event.revision;
        cluster.resume(i);
        let healthy = tokio::task::spawn_blocking(move || {
            let ok = cluster.wait_all_healthy(Duration::from_secs(30));
            (cluster, ok)
        });
        let (back, ok) = healthy.await.expect("wait");
        assert!(ok, "member {i} did not come back");
        cluster = back;
    }
    let more = tokio::time::timeout(Duration::from_secs(2), support::take_changes(&mut w, 1));
    assert!(more.await.is_err(), "an event after the last write");
}

/// The embedded store compacts a long history a chunk at a time with writes let through in
/// between: a write made while a compaction of 30,000 revisions runs is answered long before
/// the compaction ends (a lease renewal waiting behind a whole compaction missed its deadline).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_go_on_while_a_long_history_is_compacted() {
    let h = Harness::embedded().await;
    let backend = h.backend.clone();
    // 300 keys written 100 times each, in concurrent rounds so group commit keeps it quick.
    for round in 0..100 {
        let writes = (0..300).map(|k| {
            let backend = backend.clone();
            async move {
                let key = format!("/registry/history/{k:03}");
                let current = backend
                    .range(storage::backend::RangeRequest {
                        range: Some(storage::backend::KeyRange::key(&key)),
                        ..Default::default()
                    })
                    .await
                    .expect("read")
                    .kvs
                    .first()
                    .map_or(0, |kv| kv.mod_revision);
                backend
                    .put_if(&key, Bytes::from(format!("{round}")), current, None)
                    .await
                    .expect("write")
            }
        });
        futures::future::join_all(writes).await;
    }
    let target = h
        .store
        .create("/history-end", Bytes::from_static(b"x"))
        .await
        .expect("write")
        .mod_revision;
    assert!(target > 30_000, "history of {target} revisions");

    let started = Instant::now();
    let compaction = tokio::spawn({
        let backend = backend.clone();
        async move {
            backend.compact(target).await.expect("compact");
            started.elapsed()
        }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut latencies = Vec::new();
    while !compaction.is_finished() {
        let at = Instant::now();
        h.store
            .create(&format!("/during/{}", latencies.len()), Bytes::new())
            .await
            .expect("write during the compaction");
        latencies.push(at.elapsed());
    }
    let took = compaction.await.expect("compaction task");
    let worst = latencies.iter().max().copied().unwrap_or_default();
    assert!(
        latencies.len() >= 3,
        "{} writes landed during a compaction of {took:?}",
        latencies.len()
    );
    assert!(
        worst * 3 < took,
        "a write waited {worst:?} during a compaction of {took:?}"
    );
    // The history is gone and the latest state kept.
    let old = h
        .store
        .get("/history/000", ReadRevision::Exact(target - 1))
        .await;
    assert!(matches!(old, Err(StorageError::TooOld { .. })), "{old:?}");
    let kept = h
        .store
        .get("/history/000", ReadRevision::Latest)
        .await
        .expect("latest state");
    assert_eq!(&kept.value[..], b"99");
}
