//! Writes that start from the watch cache's copy of the object: an update that admission
//! sees reads nothing from the store while the cache holds the current object, and one
//! racing a write the cache has not seen still lands on the stored object.

#[path = "support/counting.rs"]
mod counting;
mod support;

use counting::Counted;
use registry::options::ListOptions;
use registry::patch::PatchType;
use registry::{Store, Subresource};
use serde_json::{json, Value};
use storage::backend::{Backend, KeyRange, RangeRequest};
use support::write;

test_support::both_backends!(
    crate::counting::Counted;
    an_admitted_update_reads_no_stored_copy,
    an_update_racing_an_unseen_write_lands_on_the_stored_object,
);

fn pod(name: &str) -> Value {
    json!({"metadata": {"name": name, "labels": {"a": "1"}},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

/// Waits until the watch cache holds `obj`'s revision, so that a read of it is current.
async fn cached(store: &Store, obj: &Value) -> Value {
    let at = ListOptions {
        resource_version: Some(registry::object::resource_version(obj).to_string()),
        ..Default::default()
    };
    store
        .get(Some("default"), registry::object::name(obj), &at)
        .await
        .expect("cached get")
}

async fn an_admitted_update_reads_no_stored_copy(c: &Counted) {
    let pods = c.h.store("", "pods");
    let created = pods
        .create(Some("default"), pod("p"), &write())
        .await
        .expect("create");
    let mut current = cached(&pods, &created).await;
    let key = format!("/registry{}", pods.key(Some("default"), "p"));
    let before = c.backend.reads_of(&key);
    // Pod updates pass the admission chain (PodSecurity), which sees the object as it was.
    current["metadata"]["labels"]["a"] = json!("2");
    let (updated, _) = pods
        .update(Some("default"), "p", current, Subresource::Main, &write())
        .await
        .expect("update");
    assert_eq!(updated["metadata"]["labels"]["a"], "2");
    assert_eq!(
        c.backend.reads_of(&key) - before,
        0,
        "the admitted update started from the cache's copy, not a read of the store"
    );
}

async fn an_update_racing_an_unseen_write_lands_on_the_stored_object(c: &Counted) {
    let pods = c.h.store("", "pods");
    let created = pods
        .create(Some("default"), pod("q"), &write())
        .await
        .expect("create");
    let before = cached(&pods, &created).await;
    let key = format!("/registry{}", pods.key(Some("default"), "q"));
    // A write straight to the store, which the cache may or may not have seen when the
    // patch below reads it: either way the patch must land on top of it.
    let stored = c
        .backend
        .range(RangeRequest {
            range: Some(KeyRange::key(&key)),
            ..Default::default()
        })
        .await
        .expect("read")
        .kvs
        .remove(0);
    let mut raw: Value = serde_json::from_slice(&stored.value).expect("stored json");
    raw["metadata"]["labels"]["b"] = json!("behind-the-cache");
    c.backend
        .put_if(
            &key,
            serde_json::to_vec(&raw).expect("encode").into(),
            stored.mod_revision,
            None,
        )
        .await
        .expect("direct write");
    let patched = pods
        .patch(
            Some("default"),
            "q",
            PatchType::Merge,
            br#"{"metadata":{"labels":{"c":"patched"}}}"#,
            Subresource::Main,
            &write(),
        )
        .await
        .expect("patch");
    let labels = &patched["metadata"]["labels"];
    assert_eq!(labels["b"], "behind-the-cache", "{labels}");
    assert_eq!(labels["c"], "patched", "{labels}");
    assert_ne!(
        registry::object::resource_version(&patched),
        registry::object::resource_version(&before)
    );
}
