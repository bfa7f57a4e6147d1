//! The kubelet's periodic writes start from the watch cache's copy: a lease renewal and a
//! pod status write read nothing from the store while the cache holds the object (on etcd
//! each such read was a range: 500 a second for 5,000 nodes' leases alone).

#[path = "../../registry/tests/support/counting.rs"]
mod counting;
mod support;

use counting::Counted;
use kubelet::node::lease;
use kubelet::status::manager::Written;
use kubelet::status::StatusManager;
use registry::object;
use registry::options::ListOptions;
use registry::Store;
use serde_json::{json, Value};

test_support::both_backends!(
    crate::counting::Counted;
    lease_renewals_read_no_stored_copy,
    status_writes_read_no_stored_copy,
);

/// Waits until the watch cache holds `obj`'s revision.
async fn cached(store: &Store, namespace: &str, obj: &Value) {
    let at = ListOptions {
        resource_version: Some(object::resource_version(obj).to_string()),
        ..Default::default()
    };
    store
        .get(Some(namespace), object::name(obj), &at)
        .await
        .expect("cached get");
}

async fn lease_renewals_read_no_stored_copy(c: &Counted) {
    let leases = c.h.store("coordination.k8s.io", "leases");
    let mut last = lease::renew(&leases, "node-a", "uid-a", 40)
        .await
        .expect("create the lease");
    let key = format!("/registry{}", leases.key(Some(lease::NAMESPACE), "node-a"));
    for _ in 0..3 {
        cached(&leases, lease::NAMESPACE, &last).await;
        let before = c.backend.reads_of(&key);
        let renewed = lease::renew(&leases, "node-a", "uid-a", 40)
            .await
            .expect("renew");
        assert_eq!(
            c.backend.reads_of(&key) - before,
            0,
            "renewed from the cache"
        );
        assert_ne!(
            object::resource_version(&renewed),
            object::resource_version(&last),
            "each renewal is a write"
        );
        assert!(renewed["spec"]["renewTime"].as_str() >= last["spec"]["renewTime"].as_str());
        last = renewed;
    }
}

async fn status_writes_read_no_stored_copy(c: &Counted) {
    let pods = c.h.store("", "pods");
    let pod = json!({"metadata": {"name": "p"},
        "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "nginx"}]}});
    let created = pods
        .create(Some("default"), pod, &Default::default())
        .await
        .expect("create");
    cached(&pods, "default", &created).await;
    let key = format!("/registry{}", pods.key(Some("default"), "p"));
    let before = c.backend.reads_of(&key);
    let status = json!({"phase": "Running", "conditions": [], "hostIP": "10.0.0.1"});
    let written = StatusManager::new(pods.clone())
        .set_status("default", "p", object::uid(&created), &status)
        .await
        .expect("status write");
    assert_eq!(written, Written::Done);
    assert_eq!(
        c.backend.reads_of(&key) - before,
        0,
        "written from the cache's copy"
    );
    let stored = pods
        .get(Some("default"), "p", &ListOptions::default())
        .await
        .expect("get");
    assert_eq!(stored["status"]["phase"], "Running");
}
