//! Delete as upstream: graceful deletion of pods, finalizers, propagation policies,
//! preconditions, dry run, namespaces' two-phase deletion, deletecollection.

mod support;

use registry::options::{DeleteOptions, DeleteOptionsWire, DryRun, ListOptions, PreconditionsSpec};
use registry::Subresource;
use serde_json::{json, Value};
use support::{delete, list, write, Harness};
use test_support::names;

test_support::both_backends!(
    crate::support::Harness;
    pod_graceful_deletion_sequence,
    finalizers_hold_the_object,
);
test_support::embedded_only!(
    crate::support::Harness;
    propagation_policies_set_finalizers,
    preconditions_and_dry_run,
    namespace_deletion_phases,
    delete_collection_with_selector,
);

fn grace(seconds: i64) -> DeleteOptions {
    DeleteOptions {
        grace_period_seconds: Some(seconds),
        ..Default::default()
    }
}

fn pod(name: &str, node: Option<&str>) -> Value {
    let mut p =
        json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
    if let Some(node) = node {
        p["spec"]["nodeName"] = json!(node);
    }
    p
}

async fn pod_graceful_deletion_sequence(h: &Harness) {
    let pods = h.store("", "pods");
    let created = pods
        .create(Some("default"), pod("web", Some("node-1")), &write())
        .await
        .expect("create");
    let generation = created["metadata"]["generation"].as_i64().unwrap_or(0);

    // First delete: the pod stays, marked with its grace period (30s from its spec).
    let out = pods
        .delete(Some("default"), "web", delete())
        .await
        .expect("delete");
    assert!(!out.deleted);
    let meta = &out.object["metadata"];
    assert_eq!(meta["deletionGracePeriodSeconds"], 30);
    assert!(meta["deletionTimestamp"].is_string());
    if generation > 0 {
        assert_eq!(meta["generation"], generation + 1);
    }
    let first_deadline = meta["deletionTimestamp"].clone();

    // A longer grace period changes nothing; a shorter one moves the deadline earlier.
    let out = pods
        .delete(Some("default"), "web", grace(60))
        .await
        .expect("delete");
    assert!(!out.deleted);
    assert_eq!(out.object["metadata"]["deletionGracePeriodSeconds"], 30);
    assert_eq!(out.object["metadata"]["deletionTimestamp"], first_deadline);
    let out = pods
        .delete(Some("default"), "web", grace(10))
        .await
        .expect("delete");
    assert!(!out.deleted);
    assert_eq!(out.object["metadata"]["deletionGracePeriodSeconds"], 10);
    assert!(out.object["metadata"]["deletionTimestamp"].as_str() < first_deadline.as_str());

    // The kubelet's final delete: grace 0 with the pod's UID as precondition.
    let final_delete = DeleteOptions {
        grace_period_seconds: Some(0),
        preconditions: Some(PreconditionsSpec {
            uid: created["metadata"]["uid"].as_str().map(str::to_string),
            resource_version: None,
        }),
        ..Default::default()
    };
    let out = pods
        .delete(Some("default"), "web", final_delete)
        .await
        .expect("final delete");
    assert!(out.deleted);
    assert_eq!(
        out.object["kind"], "Pod",
        "pods answer with the deleted object"
    );
    assert_eq!(
        pods.get(Some("default"), "web", &list())
            .await
            .expect_err("gone")
            .code(),
        404
    );

    // An unscheduled pod has nothing to wait for.
    pods.create(Some("default"), pod("pending", None), &write())
        .await
        .expect("create");
    let out = pods
        .delete(Some("default"), "pending", delete())
        .await
        .expect("delete");
    assert!(out.deleted);
}

async fn finalizers_hold_the_object(h: &Harness) {
    let cms = h.store("", "configmaps");
    cms.create(
        Some("default"),
        json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
        &write(),
    )
    .await
    .expect("create");
    let out = cms
        .delete(Some("default"), "held", delete())
        .await
        .expect("delete");
    assert!(!out.deleted);
    assert!(out.object["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(out.object["metadata"]["deletionGracePeriodSeconds"], 0);
    // No new finalizer once deletion started.
    let mut more = out.object.clone();
    more["metadata"]["finalizers"] = json!(["example.com/hold", "example.com/another"]);
    let err = cms
        .update(Some("default"), "held", more, Subresource::Main, &write())
        .await
        .expect_err("forbidden");
    assert_eq!(err.code(), 422);
    assert!(
        err.to_string().contains("no new finalizers can be added"),
        "{err}"
    );
    // Other updates still work, and keep the deletion timestamp.
    let mut labelled = cms
        .get(Some("default"), "held", &list())
        .await
        .expect("get");
    labelled["metadata"]["labels"] = json!({"still": "here"});
    let (after, _) = cms
        .update(
            Some("default"),
            "held",
            labelled,
            Subresource::Main,
            &write(),
        )
        .await
        .expect("update");
    assert_eq!(
        after["metadata"]["deletionTimestamp"],
        out.object["metadata"]["deletionTimestamp"]
    );
    // The update that empties the finalizers removes it.
    let mut emptied = after.clone();
    emptied["metadata"]["finalizers"] = json!([]);
    cms.update(
        Some("default"),
        "held",
        emptied,
        Subresource::Main,
        &write(),
    )
    .await
    .expect("empty finalizers");
    assert_eq!(
        cms.get(Some("default"), "held", &list())
            .await
            .expect_err("gone")
            .code(),
        404
    );
}

async fn propagation_policies_set_finalizers(h: &Harness) {
    let deploys = h.store("apps", "deployments");
    let d = |name: &str| {
        json!({"metadata": {"name": name}, "spec": {"selector": {"matchLabels": {"a": "b"}},
               "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    };
    let parse = |p: &str| {
        DeleteOptions::parse(DeleteOptionsWire {
            propagation_policy: Some(p.into()),
            ..Default::default()
        })
    };
    let policy = |p: &str| parse(p).expect("valid options");
    for name in ["orphan", "fore", "back", "legacy"] {
        deploys
            .create(Some("default"), d(name), &write())
            .await
            .expect("create");
    }
    let out = deploys
        .delete(Some("default"), "orphan", policy("Orphan"))
        .await
        .expect("orphan");
    assert!(!out.deleted);
    assert_eq!(out.object["metadata"]["finalizers"], json!(["orphan"]));
    let out = deploys
        .delete(Some("default"), "fore", policy("Foreground"))
        .await
        .expect("foreground");
    assert!(!out.deleted);
    assert_eq!(
        out.object["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    let out = deploys
        .delete(Some("default"), "back", policy("Background"))
        .await
        .expect("background");
    assert!(out.deleted);
    assert_eq!(out.object["kind"], "Status");
    assert_eq!(out.object["status"], "Success");
    assert_eq!(out.object["details"]["name"], "back");
    let legacy = DeleteOptions {
        orphan_dependents: Some(true),
        ..Default::default()
    };
    let out = deploys
        .delete(Some("default"), "legacy", legacy)
        .await
        .expect("orphanDependents");
    assert_eq!(out.object["metadata"]["finalizers"], json!(["orphan"]));
    // core/v1 replicationcontrollers orphan by default, as upstream.
    let rc = json!({"metadata": {"name": "rc"}, "spec": {"selector": {"a": "b"},
                     "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    h.store("", "replicationcontrollers")
        .create(Some("default"), rc, &write())
        .await
        .expect("rc");
    let out = h
        .store("", "replicationcontrollers")
        .delete(Some("default"), "rc", delete())
        .await
        .expect("delete rc");
    assert_eq!(out.object["metadata"]["finalizers"], json!(["orphan"]));
    // Options are parsed where the request arrives; an unknown policy never reaches a Store.
    let err = parse("Sideways").expect_err("bad policy");
    assert_eq!(err.code(), 422);
}

async fn preconditions_and_dry_run(h: &Harness) {
    let cms = h.store("", "configmaps");
    let c = cms
        .create(
            Some("default"),
            json!({"metadata": {"name": "p"}}),
            &write(),
        )
        .await
        .expect("create");
    let wrong_uid = DeleteOptions {
        preconditions: Some(PreconditionsSpec {
            uid: Some("other".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let err = cms
        .delete(Some("default"), "p", wrong_uid)
        .await
        .expect_err("uid");
    assert_eq!(err.code(), 409);
    assert!(
        err.to_string().contains("the UID in the precondition"),
        "{err}"
    );
    let wrong_rv = DeleteOptions {
        preconditions: Some(PreconditionsSpec {
            uid: None,
            resource_version: Some("1".into()),
        }),
        ..Default::default()
    };
    assert_eq!(
        cms.delete(Some("default"), "p", wrong_rv)
            .await
            .expect_err("rv")
            .code(),
        409
    );
    let dry = DeleteOptions {
        dry_run: DryRun::All,
        ..Default::default()
    };
    let out = cms
        .delete(Some("default"), "p", dry)
        .await
        .expect("dry run");
    assert!(out.deleted);
    cms.get(Some("default"), "p", &list())
        .await
        .expect("still there");
    let right = DeleteOptions {
        preconditions: Some(PreconditionsSpec {
            uid: c["metadata"]["uid"].as_str().map(str::to_string),
            resource_version: c["metadata"]["resourceVersion"]
                .as_str()
                .map(str::to_string),
        }),
        ..Default::default()
    };
    assert!(
        cms.delete(Some("default"), "p", right)
            .await
            .expect("delete")
            .deleted
    );
    assert_eq!(
        cms.delete(Some("default"), "p", delete())
            .await
            .expect_err("gone")
            .code(),
        404
    );
}

async fn namespace_deletion_phases(h: &Harness) {
    let namespaces = h.store("", "namespaces");
    for system in ["default", "kube-system", "kube-public"] {
        let err = namespaces
            .delete(None, system, delete())
            .await
            .expect_err("protected");
        assert_eq!(err.code(), 403);
        assert_eq!(
            err.to_string(),
            format!("namespaces \"{system}\" is forbidden: this namespace may not be deleted")
        );
    }
    h.namespace("doomed").await;
    let cms = h.store("", "configmaps");
    cms.create(Some("doomed"), json!({"metadata": {"name": "c"}}), &write())
        .await
        .expect("create");
    let out = namespaces
        .delete(None, "doomed", delete())
        .await
        .expect("delete");
    assert!(!out.deleted);
    assert_eq!(out.object["status"]["phase"], "Terminating");
    assert!(out.object["metadata"]["deletionTimestamp"].is_string());
    let err = cms
        .create(
            Some("doomed"),
            json!({"metadata": {"name": "late"}}),
            &write(),
        )
        .await
        .expect_err("terminating");
    assert_eq!(err.code(), 403);
    assert!(
        err.to_string().contains("because it is being terminated"),
        "{err}"
    );
    // Deleting again while spec.finalizers remain keeps it.
    assert!(
        !namespaces
            .delete(None, "doomed", delete())
            .await
            .expect("again")
            .deleted
    );
    // The namespace controller's finalize: emptying spec.finalizers of a terminating
    // namespace removes it (upstream's ShouldDeleteNamespaceDuringUpdate).
    let mut ns = namespaces.get(None, "doomed", &list()).await.expect("get");
    ns["spec"]["finalizers"] = json!([]);
    let (ns, _) = namespaces
        .update(None, "doomed", ns, Subresource::Finalize, &write())
        .await
        .expect("finalize");
    assert!(ns["spec"]
        .get("finalizers")
        .is_none_or(|f| f.as_array().is_some_and(Vec::is_empty)));
    assert_eq!(
        namespaces
            .get(None, "doomed", &list())
            .await
            .expect_err("gone")
            .code(),
        404
    );
    // The controller's final delete then finds nothing.
    let err = namespaces
        .delete(None, "doomed", delete())
        .await
        .expect_err("already gone");
    assert_eq!(err.code(), 404);
}

async fn delete_collection_with_selector(h: &Harness) {
    let cms = h.store("", "configmaps");
    for (name, team) in [("a", "x"), ("b", "x"), ("c", "y")] {
        cms.create(
            Some("default"),
            json!({"metadata": {"name": name, "labels": {"team": team}}}),
            &write(),
        )
        .await
        .expect("create");
    }
    let selector = ListOptions {
        label_selector: Some("team=x".into()),
        ..Default::default()
    };
    let deleted = cms
        .delete_collection(Some("default"), &selector, delete())
        .await
        .expect("deletecollection");
    let mut gone = names(&deleted);
    gone.sort();
    assert_eq!(gone, vec!["a", "b"]);
    assert_eq!(
        names(&cms.list(Some("default"), &list()).await.expect("list")),
        vec!["c"]
    );
}
