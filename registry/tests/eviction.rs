//! The pods `eviction` subresource: a PodDisruptionBudget with no room refuses with 429 and
//! upstream's cause; one with room loses a disruption and records the pod, which goes;
//! several budgets, a wrong name, a missing pod; pods evicted without asking a budget
//! (pending, terminating, unready while the budget holds).

mod support;

use registry::options::DryRun;
use registry::{RegistryError, Subresource};
use serde_json::{json, Value};
use support::{delete, list, write, Harness};

test_support::both_backends!(
    crate::support::Harness;
    budget_refuses_then_allows,
    multiple_budgets_bad_names_and_missing_pods,
    pods_evicted_without_a_budget_check,
);

const NS: &str = "default";

fn eviction(name: &str) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": NS}})
}

/// A pod labelled app=web in `phase`, Ready as `ready` says.
async fn pod(h: &Harness, name: &str, phase: &str, ready: bool) -> Value {
    let pods = h.store("", "pods");
    let created = pods
        .create(
            Some(NS),
            json!({"metadata": {"name": name, "labels": {"app": "web"}},
                   "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
            &write(),
        )
        .await
        .expect("create pod");
    let mut running = created.clone();
    running["status"] = json!({"phase": phase, "conditions": [{
        "type": "Ready", "status": if ready { "True" } else { "False" },
        "lastTransitionTime": "2024-01-01T00:00:00Z"}]});
    pods.update(Some(NS), name, running, Subresource::Status, &write())
        .await
        .expect("pod status")
        .0
}

/// A budget over app=web whose status says what the disruption controller would have.
async fn budget(h: &Harness, name: &str, allowed: i64, desired: i64, current: i64) {
    let pdbs = h.store("policy", "poddisruptionbudgets");
    let created = pdbs
        .create(
            Some(NS),
            json!({"metadata": {"name": name},
                   "spec": {"minAvailable": desired, "selector": {"matchLabels": {"app": "web"}}}}),
            &write(),
        )
        .await
        .expect("create pdb");
    set_budget_status(h, created, allowed, desired, current).await;
}

async fn set_budget_status(h: &Harness, mut pdb: Value, allowed: i64, desired: i64, current: i64) {
    pdb["status"] = json!({"observedGeneration": pdb["metadata"]["generation"],
        "disruptionsAllowed": allowed, "desiredHealthy": desired, "currentHealthy": current,
        "expectedPods": current});
    let name = pdb["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    h.store("policy", "poddisruptionbudgets")
        .update(Some(NS), &name, pdb, Subresource::Status, &write())
        .await
        .expect("pdb status");
}

async fn get(h: &Harness, group: &str, plural: &str, name: &str) -> Option<Value> {
    h.store(group, plural)
        .get(Some(NS), name, &list())
        .await
        .ok()
}

async fn budget_refuses_then_allows(h: &Harness) {
    pod(h, "web-1", "Running", true).await;
    budget(h, "web", 0, 1, 1).await;

    let err = h
        .registry
        .evict(Some(NS), "web-1", &eviction("web-1"), &write())
        .await
        .expect_err("the budget has no room");
    let status = err.status();
    assert_eq!((status.code, status.reason), (429, "TooManyRequests"));
    assert_eq!(
        status.message,
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    let details = status.details.expect("details");
    assert_eq!(details.causes[0].kind, "DisruptionBudget");
    assert_eq!(
        details.causes[0].message,
        "The disruption budget web needs 1 healthy pods and has 1 currently"
    );
    assert!(get(h, "", "pods", "web-1").await.is_some());

    // A dry run with room answers Success and changes nothing.
    let stored = get(h, "policy", "poddisruptionbudgets", "web")
        .await
        .expect("pdb");
    set_budget_status(h, stored, 1, 1, 2).await;
    let dry = registry::options::WriteOptions {
        dry_run: DryRun::All,
        ..Default::default()
    };
    let status = h
        .registry
        .evict(Some(NS), "web-1", &eviction("web-1"), &dry)
        .await
        .expect("dry run");
    assert_eq!(status.code, 201);
    assert!(get(h, "", "pods", "web-1").await.is_some());
    let pdb = get(h, "policy", "poddisruptionbudgets", "web")
        .await
        .expect("pdb");
    assert_eq!(pdb["status"]["disruptionsAllowed"], 1);

    let status = h
        .registry
        .evict(Some(NS), "web-1", &eviction("web-1"), &write())
        .await
        .expect("evicted");
    assert_eq!((status.code, status.status), (201, "Success"));
    assert!(get(h, "", "pods", "web-1").await.is_none());
    let pdb = get(h, "policy", "poddisruptionbudgets", "web")
        .await
        .expect("pdb");
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    assert!(pdb["status"]["disruptedPods"]["web-1"].is_string());
    let condition = &pdb["status"]["conditions"][0];
    assert_eq!(
        (
            &condition["type"],
            &condition["status"],
            &condition["reason"]
        ),
        (
            &json!("DisruptionAllowed"),
            &json!("False"),
            &json!("InsufficientPods")
        )
    );

    // A budget changed since the controller last looked is still being processed.
    pod(h, "web-2", "Running", true).await;
    let mut stale = get(h, "policy", "poddisruptionbudgets", "web")
        .await
        .expect("pdb");
    stale["spec"]["minAvailable"] = json!(0);
    h.store("policy", "poddisruptionbudgets")
        .update(Some(NS), "web", stale, Subresource::Main, &write())
        .await
        .expect("spec change");
    let err = h
        .registry
        .evict(Some(NS), "web-2", &eviction("web-2"), &write())
        .await
        .expect_err("stale budget");
    let status = err.status();
    assert_eq!(status.code, 429);
    let details = status.details.expect("details");
    assert_eq!(details.retry_after_seconds, Some(10));
    assert_eq!(
        details.causes[0].message,
        "The disruption budget web is still being processed by the server."
    );
}

async fn multiple_budgets_bad_names_and_missing_pods(h: &Harness) {
    pod(h, "web-1", "Running", true).await;
    budget(h, "one", 1, 1, 2).await;
    budget(h, "two", 1, 1, 2).await;
    let status = h
        .registry
        .evict(Some(NS), "web-1", &eviction("web-1"), &write())
        .await
        .expect("a failure status");
    assert_eq!((status.code, status.status), (500, "Failure"));
    assert_eq!(
        status.message,
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );
    assert!(get(h, "", "pods", "web-1").await.is_some());

    let err = h
        .registry
        .evict(Some(NS), "web-1", &eviction("other"), &write())
        .await
        .expect_err("name mismatch");
    assert!(matches!(err, RegistryError::BadRequest(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "name in URL does not match name in Eviction object"
    );
    let err = h
        .registry
        .evict(Some(NS), "gone", &eviction("gone"), &write())
        .await
        .expect_err("missing pod");
    assert_eq!(err.code(), 404);
    assert_eq!(err.to_string(), "pods \"gone\" not found");
}

async fn pods_evicted_without_a_budget_check(h: &Harness) {
    budget(h, "web", 0, 1, 1).await;
    // Pending: nothing runs yet, so nothing is disrupted.
    pod(h, "pending", "Pending", false).await;
    h.registry
        .evict(Some(NS), "pending", &eviction("pending"), &write())
        .await
        .expect("pending pod evicted");
    assert!(get(h, "", "pods", "pending").await.is_none());

    // Terminating: a pod bound to a node waits out its grace period; evicting it again
    // goes through whatever the budget says.
    let pods = h.store("", "pods");
    pod(h, "leaving", "Running", true).await;
    pods.bind(
        Some(NS),
        "leaving",
        &json!({"metadata": {"name": "leaving"}, "target": {"kind": "Node", "name": "node-0"}}),
        &write(),
    )
    .await
    .expect("bind");
    pods.delete(Some(NS), "leaving", delete())
        .await
        .expect("graceful delete");
    h.registry
        .evict(Some(NS), "leaving", &eviction("leaving"), &write())
        .await
        .expect("terminating pod evicted");
    let leaving = get(h, "", "pods", "leaving")
        .await
        .expect("still terminating");
    assert!(leaving["metadata"]["deletionTimestamp"].is_string());

    // Unready while the budget is met (desired 1, current 2): it goes and the budget keeps
    // its disruptions, marked DisruptionTarget as upstream marks an evicted pod.
    let stored = get(h, "policy", "poddisruptionbudgets", "web")
        .await
        .expect("pdb");
    set_budget_status(h, stored, 0, 1, 2).await;
    pod(h, "unready", "Running", false).await;
    h.registry
        .evict(Some(NS), "unready", &eviction("unready"), &write())
        .await
        .expect("unready pod evicted");
    assert!(get(h, "", "pods", "unready").await.is_none());
    let pdb = get(h, "policy", "poddisruptionbudgets", "web")
        .await
        .expect("pdb");
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    assert!(pdb["status"]["disruptedPods"].is_null());

    // A ready pod on a node is marked DisruptionTarget before its graceful deletion.
    set_budget_status(h, pdb, 1, 1, 2).await;
    pod(h, "ready", "Running", true).await;
    pods.bind(
        Some(NS),
        "ready",
        &json!({"metadata": {"name": "ready"}, "target": {"kind": "Node", "name": "node-0"}}),
        &write(),
    )
    .await
    .expect("bind");
    h.registry
        .evict(Some(NS), "ready", &eviction("ready"), &write())
        .await
        .expect("ready pod evicted");
    let ready = get(h, "", "pods", "ready").await.expect("terminating");
    let conditions = ready["status"]["conditions"]
        .as_array()
        .expect("conditions");
    assert!(conditions.iter().any(|c| c["type"] == "DisruptionTarget"
        && c["reason"] == "EvictionByEvictionAPI"
        && c["status"] == "True"));
}
