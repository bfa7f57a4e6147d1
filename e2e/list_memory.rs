//! A full list's peak allocation does not grow with the collection: the list is streamed
//! item by item, so the memory it takes is about a page and a chunk, whatever the count.
//!
//! A counting global allocator tracks the bytes live in this process and their peak. The
//! server's router runs in-process over the embedded store in a temp dir, on a loopback port;
//! each list is read off the socket into a fixed buffer, so the figure is the server's. The
//! peak growth of full lists (a quorum read and one from the watch cache) of 2,000 and then
//! 20,000 ConfigMaps of about 1 KiB is measured; the whole-list path peaked at several times
//! the body (tens of MB at 20,000) and grew tenfold with the collection.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use apiserver::api::{router, Api};
use futures::{StreamExt, TryStreamExt};
use registry::options::{ListOptions, WriteOptions};
use registry::{Catalogue, Registry, Store};
use serde_json::json;
use storage::CacherConfig;
use test_support::TestBackend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn shrank(bytes: usize) {
    LIVE.fetch_sub(bytes, Ordering::Relaxed);
}

// SAFETY: every call is passed on to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if !moved.is_null() {
            match new_size.checked_sub(layout.size()) {
                Some(more) => grew(more),
                None => shrank(layout.size() - new_size),
            }
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const MIB: usize = 1 << 20;
/// What a streamed list may add to the peak: a page of decoded objects, a chunk or two and
/// the connection's buffers take well under this.
const STREAMED_PEAK: usize = 4 * MIB;

async fn registry(backend: &TestBackend) -> Arc<Registry> {
    let kv = storage::backend::open(&backend.etcd_servers(), backend.data_dir())
        .await
        .expect("open the embedded store");
    let root = storage::KvStore::new(kv, "/registry");
    let registry = Registry::new(
        root,
        Arc::new(Catalogue::builtin()),
        CacherConfig::default(),
    );
    registry.set_schemas(Arc::new(openapi::OpenApi::new(Vec::new())));
    registry.bootstrap().await.expect("bootstrap");
    registry
}

/// ConfigMaps `from..to` in namespace default, each with about 1 KiB of data.
async fn create(store: &Arc<Store>, from: usize, to: usize) {
    futures::stream::iter(from..to)
        .map(|i| {
            let store = store.clone();
            async move {
                let cm = json!({
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": format!("cm-{i:06}")},
                    "data": {"payload": format!("{i:08}").repeat(128)},
                });
                store
                    .create(Some("default"), cm, &WriteOptions::default())
                    .await
                    .map(drop)
            }
        })
        .buffer_unordered(64)
        .try_collect::<()>()
        .await
        .expect("create the config maps");
}

/// Until the watch cache holds `count` objects, so that it grows no more while lists run.
async fn cache_holds(store: &Store, count: usize) {
    let cached = ListOptions {
        resource_version: Some("0".into()),
        ..Default::default()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let list = store.list(Some("default"), &cached).await.expect("list");
        if list["items"].as_array().map(Vec::len) == Some(count) {
            return;
        }
        assert!(Instant::now() < deadline, "the watch cache never caught up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// GETs `path` and reads the whole answer into a fixed buffer; returns its size.
async fn get(port: u16, path: &str) -> usize {
    let mut tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nConnection: close\r\n\r\n");
    tcp.write_all(request.as_bytes()).await.expect("request");
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0;
    let mut head = Vec::new();
    let mut tail = Vec::new();
    loop {
        let n = tcp.read(&mut buf).await.expect("read the answer");
        if n == 0 {
            break;
        }
        if head.len() < 16 {
            head.extend_from_slice(&buf[..n.min(16)]);
        }
        tail.extend_from_slice(&buf[n.saturating_sub(16)..n]);
        tail.drain(..tail.len().saturating_sub(16));
        total += n;
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    // The end of a complete list: its last brace and json.Encoder's newline, then the
    // terminating chunk when chunked.
    assert!(
        tail.ends_with(b"}\n\r\n0\r\n\r\n") || tail.ends_with(b"}\n"),
        "{}",
        String::from_utf8_lossy(&tail)
    );
    total
}

/// The peak growth of allocated bytes while `path` is listed, and the answer's size.
async fn list_peak(port: u16, path: &str) -> (usize, usize) {
    // Let what the previous step started settle first.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let size = get(port, path).await;
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    (peak, size)
}

/// The larger peak of a quorum list and a cached one.
async fn lists_peak(port: u16, count: usize) -> usize {
    let mut peaks = Vec::new();
    for path in [
        "/api/v1/namespaces/default/configmaps",
        "/api/v1/namespaces/default/configmaps?resourceVersion=0",
    ] {
        let (peak, size) = list_peak(port, path).await;
        println!(
            "{count} objects, {path}: {size} bytes answered, peak allocation grew by {:.2} MiB",
            peak as f64 / MIB as f64
        );
        assert!(size > count * 1024, "{size} bytes for {count} objects");
        peaks.push(peak);
    }
    peaks.into_iter().max().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_lists_peak_allocation_does_not_grow_with_the_collection() {
    let backend = TestBackend::embedded().await;
    let registry = registry(&backend).await;
    let store = registry.store("", "v1", "configmaps").expect("configmaps");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    let app = router(Api {
        registry: registry.clone(),
        shutdown: Default::default(),
        creaters: Default::default(),
        components: Default::default(),
        aggregator: apiserver::aggregator::Aggregator::idle(registry.clone()),
    });
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    create(&store, 0, 2_000).await;
    cache_holds(&store, 2_000).await;
    let small = lists_peak(port, 2_000).await;

    create(&store, 2_000, 20_000).await;
    cache_holds(&store, 20_000).await;
    let large = lists_peak(port, 20_000).await;

    assert!(
        large < STREAMED_PEAK,
        "a list of 20,000 objects raised the peak allocation by {large} bytes"
    );
    assert!(
        large < 2 * small.max(MIB),
        "the peak allocation of a list grew with the collection: {small} bytes for 2,000 objects, {large} for 20,000"
    );
    server.abort();
}
