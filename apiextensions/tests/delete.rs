//! Deleting a CustomResourceDefinition through the generic Store, with the definitions'
//! strategy installed as the server installs it.

mod support;

use registry::Subresource;
use serde_json::json;
use support::{delete, list, write, Harness};

test_support::embedded_only!(
    crate::support::Harness;
    definitions_take_their_cleanup_finalizer_when_deleted,
);

/// As upstream's CRD storage: no finalizer while the definition lives; the first delete adds
/// `customresourcecleanup.apiextensions.k8s.io` with a Terminating condition, and the
/// definition stays until that finalizer is taken off.
async fn definitions_take_their_cleanup_finalizer_when_deleted(h: &Harness) {
    let crds = h.store("apiextensions.k8s.io", "customresourcedefinitions");
    let schema = json!({"openAPIV3Schema": {"type": "object"}});
    let crd = json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "schema": schema}]},
    });
    let created = crds.create(None, crd, &write()).await.expect("create");
    assert!(created["metadata"].get("finalizers").is_none(), "{created}");
    let outcome = crds
        .delete(None, "widgets.example.com", delete())
        .await
        .expect("delete");
    assert!(!outcome.deleted);
    let held = outcome.object;
    assert_eq!(
        held["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"])
    );
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    let terminating = held["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Terminating"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(terminating["status"], "True", "{held}");
    assert_eq!(terminating["reason"], "InstanceDeletionPending", "{held}");
    // A second delete changes nothing; emptying the finalizers removes it.
    let again = crds
        .delete(None, "widgets.example.com", delete())
        .await
        .expect("delete again");
    assert!(!again.deleted);
    let mut released = again.object;
    released["metadata"]["finalizers"] = json!([]);
    crds.update(
        None,
        "widgets.example.com",
        released,
        Subresource::Main,
        &write(),
    )
    .await
    .expect("release");
    let gone = crds.get(None, "widgets.example.com", &list()).await;
    assert!(gone.is_err(), "{gone:?}");
}
