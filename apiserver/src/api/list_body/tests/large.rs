//! A large collection in a real registry (the embedded store in a temp dir): the streamed JSON
//! and Table lists equal what the whole-list path answers for the same read, byte for byte,
//! from etcd-style quorum reads and from the watch cache.
//!
//! `LIST_BODY_OBJECTS=n` sizes the collection (100,000 by default). The timings printed are the
//! whole-list path's and the streamed one's, each collecting the body in memory.

use std::time::Instant;

use futures::{StreamExt, TryStreamExt};
use registry::options::ListOptions;
use registry::Store;
use test_support::TestBackend;

use super::*;

const DEFAULT_OBJECTS: usize = 100_000;

fn objects() -> usize {
    std::env::var("LIST_BODY_OBJECTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_OBJECTS)
}

/// Writes the objects straight to the Store's storage (what a create stores, less the
/// defaulting a list does not care about): creating 100,000 through the registry takes most of
/// a debug run.
async fn create(store: &Arc<Store>, count: usize) {
    futures::stream::iter(0..count)
        .map(|i| {
            let store = store.clone();
            async move {
                let name = format!("cm-{i:06}");
                let cm = json!({
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": name,
                        "namespace": "default",
                        "uid": format!("00000000-0000-0000-0000-{i:012}"),
                        "creationTimestamp": "2026-11-26T08:00:00Z",
                        "labels": {"n": (i % 7).to_string()},
                    },
                    "data": {"index": i.to_string(), "text": "line one\nline \"two\"\n"},
                });
                let bytes = serde_json::to_vec(&cm).map_err(|e| e.to_string())?;
                store
                    .storage()
                    .create(&store.key(Some("default"), &name), bytes.into())
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            }
        })
        .buffer_unordered(64)
        .try_collect::<()>()
        .await
        .expect("create the config maps");
}

/// The old path's bytes and the streamed ones for one read, with their timings.
async fn both(
    store: &Store,
    opts: &ListOptions,
    info: &ResourceInfo,
    encoding: Encoding,
) -> (Vec<u8>, Vec<u8>) {
    let now = Utc::now();
    let started = Instant::now();
    let list = store.list(Some("default"), opts).await.expect("list");
    let old = match encoding {
        Encoding::Table(include) | Encoding::PrettyTable(include) => {
            let items = list["items"].as_array().map_or(&[][..], Vec::as_slice);
            let metadata = table::list_table_metadata(list.get("metadata"));
            let table = table::table_at(info, items, metadata, include, now);
            let pretty = matches!(encoding, Encoding::PrettyTable(_));
            body_of(crate::api::response::json_in(
                StatusCode::OK,
                &table,
                pretty,
            ))
            .await
        }
        _ => old(list, info, encoding).await,
    };
    let old_time = started.elapsed();
    let started = Instant::now();
    let stream = store
        .list_stream(Some("default"), opts)
        .await
        .expect("list stream");
    let encoding_now = match list_encoding(info, encoding) {
        ListEncoding::Table {
            info,
            include,
            pretty,
            ..
        } => ListEncoding::Table {
            info,
            include,
            now,
            pretty,
            yaml: false,
        },
        other => other,
    };
    let response = response(stream, encoding_now)
        .await
        .expect("a list response");
    let new = body_of(response).await;
    println!(
        "{encoding:?} rv={:?}: {} bytes; whole list {:?}, streamed {:?}",
        opts.resource_version,
        new.len(),
        old_time,
        started.elapsed()
    );
    (old, new)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_of_a_large_collection_are_byte_identical() {
    let backend = TestBackend::embedded().await;
    let registry = crate::testing::registry(&backend).await;
    let store = registry.store("", "v1", "configmaps").expect("configmaps");
    let count = objects();
    let started = Instant::now();
    create(&store, count).await;
    println!("created {count} config maps in {:?}", started.elapsed());

    let info = store.info.clone();
    let quorum = ListOptions::default();
    let (old, new) = both(&store, &quorum, &info, Encoding::Json).await;
    assert!(old == new, "the streamed JSON list differs");
    let parsed: Value = serde_json::from_slice(&new).expect("the streamed list is JSON");
    assert_eq!(parsed["items"].as_array().map(Vec::len), Some(count));
    drop((old, new, parsed));
    let table = Encoding::Table(IncludeObject::Metadata);
    let (old, new) = both(&store, &quorum, &info, table).await;
    assert!(old == new, "the streamed Table differs");
    drop((old, new));

    // From the watch cache, once it holds every object.
    let cached = ListOptions {
        resource_version: Some("0".into()),
        ..Default::default()
    };
    let deadline = Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let list = store
            .list(Some("default"), &cached)
            .await
            .expect("cached list");
        if list["items"].as_array().map(Vec::len) == Some(count) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the watch cache never held every object"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (old, new) = both(&store, &cached, &info, Encoding::Json).await;
    assert!(old == new, "the streamed cached list differs");
}
