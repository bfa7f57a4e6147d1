//! The pods `binding` subresource: spec.nodeName set once with PodScheduled=True, conflicts
//! for bound and deleting pods, validation of the Binding, preconditions and dry run.

mod support;

use registry::RegistryError;
use serde_json::{json, Value};
use support::{dry_run, write, Harness};

test_support::both_backends!(crate::support::Harness; binds_once_with_condition_and_annotations);
test_support::embedded_only!(
    crate::support::Harness;
    bad_bindings_and_preconditions,
);

fn pod(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

fn binding(pod: &str, node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod},
           "target": {"kind": "Node", "name": node}})
}

async fn binds_once_with_condition_and_annotations(h: &Harness) {
    let pods = h.store("", "pods");
    pods.create(Some("default"), pod("web"), &write())
        .await
        .expect("create");
    let mut b = binding("web", "node-1");
    b["metadata"]["annotations"] = json!({"scheduled-by": "test"});
    let status = pods
        .bind(Some("default"), "web", &b, &write())
        .await
        .expect("bind");
    assert_eq!(status["status"], "Success");
    let bound = pods
        .get(Some("default"), "web", &Default::default())
        .await
        .expect("get");
    assert_eq!(bound["spec"]["nodeName"], "node-1");
    assert_eq!(bound["metadata"]["annotations"]["scheduled-by"], "test");
    let conditions = bound["status"]["conditions"]
        .as_array()
        .expect("conditions");
    let scheduled = conditions
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .expect("PodScheduled");
    assert_eq!(scheduled["status"], "True");
    assert!(scheduled["lastTransitionTime"].is_string());

    // A second binding is a conflict naming the node it already has.
    let err = pods
        .bind(Some("default"), "web", &binding("web", "node-2"), &write())
        .await
        .expect_err("rebind");
    assert!(matches!(err, RegistryError::Conflict { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"node-1\""
    );
    let err = pods
        .bind(
            Some("default"),
            "gone",
            &binding("gone", "node-1"),
            &write(),
        )
        .await
        .expect_err("missing pod");
    assert!(matches!(err, RegistryError::NotFound { .. }), "{err:?}");
}

async fn bad_bindings_and_preconditions(h: &Harness) {
    let pods = h.store("", "pods");
    let created = pods
        .create(Some("default"), pod("web"), &write())
        .await
        .expect("create");
    let err = pods
        .bind(Some("default"), "web", &binding("other", "n"), &write())
        .await
        .expect_err("name mismatch");
    assert!(matches!(err, RegistryError::BadRequest(_)), "{err:?}");
    let bad = json!({"metadata": {"name": "web"}, "target": {"kind": "Pod"}});
    let err = pods
        .bind(Some("default"), "web", &bad, &write())
        .await
        .expect_err("bad target");
    let RegistryError::Invalid { causes, .. } = &err else {
        panic!("{err:?}");
    };
    let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(fields, ["target.kind", "target.name"]);

    let mut wrong_uid = binding("web", "n");
    wrong_uid["metadata"]["uid"] = json!("not-the-uid");
    let err = pods
        .bind(Some("default"), "web", &wrong_uid, &write())
        .await
        .expect_err("uid precondition");
    assert!(matches!(err, RegistryError::Conflict { .. }), "{err:?}");

    // A dry run checks and writes nothing.
    pods.bind(Some("default"), "web", &binding("web", "n"), &dry_run())
        .await
        .expect("dry run");
    let still = pods
        .get(Some("default"), "web", &Default::default())
        .await
        .expect("get");
    assert!(still["spec"]["nodeName"].is_null());

    let mut right_uid = binding("web", "n");
    right_uid["metadata"]["uid"] = created["metadata"]["uid"].clone();
    pods.bind(Some("default"), "web", &right_uid, &write())
        .await
        .expect("bind with uid");
}
