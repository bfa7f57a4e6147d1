//! What an informer's indexer costs per object beyond the watch cache's bytes it shares,
//! counted by the allocator, against what holding the decoded object (as the indexer once
//! did) costs. One test in this binary: the allocator's count is the process's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use client::informer::{controller_uid_index, Indexer, CONTROLLER_UID_INDEX};
use registry::store::{Decoder, Encoded};
use serde_json::{json, Value};

/// Counts the bytes allocated and not yet freed.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::SeqCst);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::SeqCst);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::SeqCst);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const OBJECTS: usize = 2000;

/// A ConfigMap of about 1 KiB as the registry stores it: server-set metadata, managed
/// fields, a controller reference and some data, without resourceVersion.
fn stored_configmap(i: usize) -> Encoded {
    let data: serde_json::Map<String, Value> = (0..8)
        .map(|k| {
            (
                format!("key-{k}"),
                json!(format!("{i:08}-{}", "v".repeat(70))),
            )
        })
        .collect();
    let obj = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": format!("config-{i}"),
            "namespace": format!("ns-{}", i % 10),
            "uid": format!("6c1f3c1e-0a43-4c1b-9d7e-{i:012}"),
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "labels": {"app": "web", "tier": "frontend"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                "uid": format!("owner-{}", i % 50), "controller": true}],
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {"f:key-0": {}, "f:key-1": {}}}}],
        },
        "data": data,
    });
    Encoded {
        key: format!("ns-{}/config-{i}", i % 10),
        value: serde_json::to_vec(&obj).expect("JSON").into(),
        revision: 1000 + i as i64,
    }
}

/// Bytes still allocated after `f`, per object.
fn retained_per_object<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::SeqCst);
    let kept = f();
    let after = LIVE.load(Ordering::SeqCst);
    (kept, (after - before).max(0) as usize / OBJECTS)
}

#[test]
fn the_indexer_adds_little_to_the_shared_bytes() {
    // The watch cache's copy, allocated before anything is counted.
    let cache: Vec<Encoded> = (0..OBJECTS).map(stored_configmap).collect();
    let encoded_size = cache.iter().map(|e| e.value.len()).sum::<usize>() / OBJECTS;
    let decoder = Decoder::default();

    // What the indexer held before: each object decoded.
    let (decoded, decoded_size) = retained_per_object(|| {
        cache
            .iter()
            .map(|e| Arc::new(decoder.decode(e).expect("decodes")))
            .collect::<Vec<_>>()
    });
    drop(decoded);

    let (indexer, indexer_size) = retained_per_object(|| {
        let indexer = Indexer::with_namespace_index(decoder.clone());
        indexer
            .add_index(CONTROLLER_UID_INDEX, Arc::new(controller_uid_index))
            .expect("new index");
        for e in &cache {
            indexer.add(e.clone()).expect("decodes");
        }
        indexer
    });
    println!(
        "per object: stored JSON {encoded_size} B, decoded Value {decoded_size} B, \
         indexer beyond the shared bytes {indexer_size} B (two indices, labels and \
         controller kept for selections)"
    );
    assert_eq!(indexer.len(), OBJECTS);
    // Shared, not copied: the indexer holds far less than one more copy of the bytes, let
    // alone a decoded object.
    assert!(
        indexer_size * 2 < encoded_size,
        "indexer {indexer_size} B per object, bytes {encoded_size} B"
    );
    assert!(decoded_size > encoded_size);
}
