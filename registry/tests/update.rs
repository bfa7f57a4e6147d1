//! Update, status, scale, patch; optimistic concurrency under 64 concurrent writers.

mod support;

use registry::patch::PatchType;
use registry::store::subresources::ScaleChange;
use registry::Subresource;
use serde_json::{json, Value};
use support::{dry_run, list, write, Harness};

test_support::both_backends!(crate::support::Harness; concurrent_writers_with_retries);
test_support::embedded_only!(
    crate::support::Harness;
    optimistic_concurrency_and_immutable_fields,
    status_subresource_split_and_generation,
    create_on_update_only_where_allowed,
    scale_subresource,
    patches_of_every_kind,
);

fn deployment(name: &str, image: &str) -> Value {
    json!({
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                          "spec": {"containers": [{"name": "web", "image": image}, {"name": "side", "image": "busybox"}]}}
        }
    })
}

async fn optimistic_concurrency_and_immutable_fields(h: &Harness) {
    let cms = h.store("", "configmaps");
    let v1 = cms
        .create(
            Some("default"),
            json!({"metadata": {"name": "c"}, "data": {"a": "1"}}),
            &write(),
        )
        .await
        .expect("create");
    let mut v2 = v1.clone();
    v2["data"]["a"] = json!("2");
    let (v2, created) = cms
        .update(Some("default"), "c", v2, Subresource::Main, &write())
        .await
        .expect("update");
    assert!(!created);
    assert_ne!(
        v2["metadata"]["resourceVersion"],
        v1["metadata"]["resourceVersion"]
    );
    // Writing from the stale version loses.
    let mut stale = v1.clone();
    stale["data"]["a"] = json!("3");
    let err = cms
        .update(Some("default"), "c", stale, Subresource::Main, &write())
        .await
        .expect_err("stale");
    assert_eq!((err.code(), err.reason()), (409, "Conflict"));
    assert!(
        err.to_string().contains("the object has been modified"),
        "{err}"
    );
    // uid is immutable; creationTimestamp silently kept; name must match the URL.
    let mut uid = v2.clone();
    uid["metadata"]["uid"] = json!("00000000-0000-0000-0000-000000000000");
    let err = cms
        .update(Some("default"), "c", uid, Subresource::Main, &write())
        .await
        .expect_err("uid");
    assert_eq!(err.code(), 422);
    let mut renamed = v2.clone();
    renamed["metadata"]["name"] = json!("other");
    let err = cms
        .update(Some("default"), "c", renamed, Subresource::Main, &write())
        .await
        .expect_err("name");
    assert_eq!(err.code(), 400);
    let mut ts = v2.clone();
    ts["metadata"]["creationTimestamp"] = json!("2001-01-01T00:00:00Z");
    ts["metadata"]["resourceVersion"] = json!("");
    let (kept, _) = cms
        .update(Some("default"), "c", ts, Subresource::Main, &write())
        .await
        .expect("update");
    assert_eq!(
        kept["metadata"]["creationTimestamp"],
        v1["metadata"]["creationTimestamp"]
    );
    // Dry run computes and keeps nothing.
    let mut dry = kept.clone();
    dry["data"]["a"] = json!("dry");
    let (out, _) = cms
        .update(Some("default"), "c", dry, Subresource::Main, &dry_run())
        .await
        .expect("dry");
    assert_eq!(out["data"]["a"], "dry");
    let now = cms.get(Some("default"), "c", &list()).await.expect("get");
    assert_eq!(now["data"]["a"], "2");
}

async fn status_subresource_split_and_generation(h: &Harness) {
    let deploys = h.store("apps", "deployments");
    let d = deploys
        .create(Some("default"), deployment("d", "nginx:1"), &write())
        .await
        .expect("create");
    assert_eq!(d["metadata"]["generation"], 1);
    // The main resource ignores status.
    let mut with_status = d.clone();
    with_status["status"] = json!({"replicas": 5});
    with_status["metadata"]["labels"]["extra"] = json!("yes");
    let (after, _) = deploys
        .update(
            Some("default"),
            "d",
            with_status,
            Subresource::Main,
            &write(),
        )
        .await
        .expect("update");
    assert!(
        after
            .get("status")
            .is_none_or(|s| s.get("replicas").is_none()),
        "{after}"
    );
    assert_eq!(
        after["metadata"]["generation"], 1,
        "metadata changes do not bump generation"
    );
    // /status ignores everything but status.
    let mut status_only = after.clone();
    status_only["status"] = json!({"replicas": 2, "readyReplicas": 1});
    status_only["spec"]["replicas"] = json!(9);
    let (after, _) = deploys
        .update(
            Some("default"),
            "d",
            status_only,
            Subresource::Status,
            &write(),
        )
        .await
        .expect("status");
    assert_eq!(after["status"]["readyReplicas"], 1);
    assert_eq!(after["spec"]["replicas"], 2);
    assert_eq!(after["metadata"]["generation"], 1);
    // A spec change bumps it.
    let mut spec = after.clone();
    spec["spec"]["replicas"] = json!(3);
    let (after, _) = deploys
        .update(Some("default"), "d", spec, Subresource::Main, &write())
        .await
        .expect("spec");
    assert_eq!(after["metadata"]["generation"], 2);
    assert_eq!(
        after["status"]["readyReplicas"], 1,
        "status survives main updates"
    );
}

async fn create_on_update_only_where_allowed(h: &Harness) {
    let lease = json!({"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a"}});
    let (created, was_created) = h
        .store("coordination.k8s.io", "leases")
        .update(
            Some("default"),
            "leader",
            lease,
            Subresource::Main,
            &write(),
        )
        .await
        .expect("leases are created by PUT");
    assert!(was_created);
    assert_eq!(created["spec"]["holderIdentity"], "a");
    let err = h
        .store("", "configmaps")
        .update(
            Some("default"),
            "nope",
            json!({"metadata": {"name": "nope"}}),
            Subresource::Main,
            &write(),
        )
        .await
        .expect_err("configmaps are not");
    assert_eq!(err.code(), 404);
}

async fn scale_subresource(h: &Harness) {
    let deploys = h.store("apps", "deployments");
    deploys
        .create(Some("default"), deployment("s", "nginx:1"), &write())
        .await
        .expect("create");
    let scale = deploys
        .get_scale(Some("default"), "s")
        .await
        .expect("scale");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 2);
    assert_eq!(scale["status"]["selector"], "app=s");
    let mut wanted = scale.clone();
    wanted["spec"]["replicas"] = json!(5);
    let out = deploys
        .update_scale(Some("default"), "s", ScaleChange::Replace(wanted), &write())
        .await
        .expect("scale up");
    assert_eq!(out["spec"]["replicas"], 5);
    let d = deploys
        .get(Some("default"), "s", &list())
        .await
        .expect("get");
    assert_eq!(d["spec"]["replicas"], 5);
    assert_eq!(d["metadata"]["generation"], 2);
    let patched = deploys
        .update_scale(
            Some("default"),
            "s",
            ScaleChange::Patch(PatchType::Merge, br#"{"spec":{"replicas":1}}"#),
            &write(),
        )
        .await
        .expect("patch scale");
    assert_eq!(patched["spec"]["replicas"], 1);
    let mut stale = scale.clone();
    stale["spec"]["replicas"] = json!(7);
    let err = deploys
        .update_scale(Some("default"), "s", ScaleChange::Replace(stale), &write())
        .await
        .expect_err("stale scale");
    assert_eq!(err.code(), 409);
    let err = h
        .store("", "configmaps")
        .get_scale(Some("default"), "x")
        .await
        .expect_err("no scale");
    assert_eq!(err.code(), 404);
}

async fn patches_of_every_kind(h: &Harness) {
    let deploys = h.store("apps", "deployments");
    deploys
        .create(Some("default"), deployment("p", "nginx:1"), &write())
        .await
        .expect("create");
    let strategic =
        br#"{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:2"}]}}}}"#;
    let out = deploys
        .patch(
            Some("default"),
            "p",
            PatchType::Strategic,
            strategic,
            Subresource::Main,
            &write(),
        )
        .await
        .expect("strategic");
    let containers = &out["spec"]["template"]["spec"]["containers"];
    assert_eq!(
        containers.as_array().map(Vec::len),
        Some(2),
        "merged by name: {containers}"
    );
    assert_eq!(containers[0]["image"], "nginx:2");
    assert_eq!(out["metadata"]["generation"], 2);
    let out = deploys
        .patch(
            Some("default"),
            "p",
            PatchType::Merge,
            br#"{"metadata":{"labels":{"extra":"1"}}}"#,
            Subresource::Main,
            &write(),
        )
        .await
        .expect("merge");
    assert_eq!(out["metadata"]["labels"]["extra"], "1");
    let out = deploys
        .patch(
            Some("default"),
            "p",
            PatchType::Json,
            br#"[{"op":"replace","path":"/spec/replicas","value":4}]"#,
            Subresource::Main,
            &write(),
        )
        .await
        .expect("json patch");
    assert_eq!(out["spec"]["replicas"], 4);
    let err = deploys
        .patch(
            Some("default"),
            "p",
            PatchType::Merge,
            b"{not json",
            Subresource::Main,
            &write(),
        )
        .await
        .expect_err("malformed");
    assert_eq!(err.code(), 400);
    let err = deploys
        .patch(
            Some("default"),
            "missing",
            PatchType::Merge,
            b"{}",
            Subresource::Main,
            &write(),
        )
        .await
        .expect_err("missing");
    assert_eq!(err.code(), 404);
    // A patch carrying a stale resourceVersion is a precondition that fails.
    let err = deploys
        .patch(
            Some("default"),
            "p",
            PatchType::Merge,
            br#"{"metadata":{"resourceVersion":"1"}}"#,
            Subresource::Main,
            &write(),
        )
        .await
        .expect_err("stale rv");
    assert_eq!(err.code(), 409);
}

async fn concurrent_writers_with_retries(h: &Harness) {
    const WRITERS: usize = 64;
    let cms = h.store("", "configmaps");
    cms.create(
        Some("default"),
        json!({"metadata": {"name": "counter"}, "data": {}}),
        &write(),
    )
    .await
    .expect("create");
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let cms = cms.clone();
        tasks.push(tokio::spawn(async move {
            // A client's loop: read, change, write with the version read, retry on Conflict.
            loop {
                let mut cm = cms
                    .get(Some("default"), "counter", &list())
                    .await
                    .expect("get");
                cm["data"][format!("w{w}")] = json!("done");
                match cms
                    .update(Some("default"), "counter", cm, Subresource::Main, &write())
                    .await
                {
                    Ok(_) => return,
                    Err(e) if e.code() == 409 => continue,
                    Err(e) => panic!("update failed: {e}"),
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("writer");
    }
    let cm = cms
        .get(Some("default"), "counter", &list())
        .await
        .expect("get");
    let data = cm["data"].as_object().cloned().unwrap_or_default();
    assert_eq!(
        data.len(),
        WRITERS,
        "every acknowledged update is in the object"
    );
}
