use std::time::Instant;

use registry::projection::POD_FOR_CONTROLLERS;
use registry::store::{Decoder, Encoded};
use serde_json::json;

use super::*;
use crate::controller_utils::{is_pod_active, is_pod_available, is_pod_ready};
use crate::informer::fake::encode;
use crate::informer::{Indexer, NAMESPACE_INDEX};

/// A pod much as the kubelet leaves it: a spec, managedFields and a status of some 4 KB.
fn full_pod(i: usize, rv: u32, ready: bool) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("web-7d4b9c-{i:05}"), "namespace": "ns",
            "uid": format!("5f0c5a36-{i:04x}-4b1e-9d7e-1c2f3a4b5c6d"),
            "resourceVersion": rv.to_string(), "generateName": "web-7d4b9c-",
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "7d4b9c"},
            "annotations": {POD_DELETION_COST: (i % 7).to_string(), "note": "x".repeat(40)},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": "web-7d4b9c", "uid": "rs-uid", "controller": true,
                "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update",
                 "apiVersion": "v1", "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {
                    ".": {}, "f:app": {}, "f:pod-template-hash": {}}, "f:ownerReferences": {
                    ".": {}, "k:{\"uid\":\"rs-uid\"}": {}}}, "f:spec": {"f:containers": {
                    "k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {},
                    "f:resources": {}}}}}},
                {"manager": "kubelet", "operation": "Update", "subresource": "status",
                 "apiVersion": "v1", "time": "2024-01-01T00:00:05Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {},
                    "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:startTime": {}}}}
            ]
        },
        "spec": {
            "nodeName": format!("node-{}", i % 5000),
            "containers": [{"name": "web", "image": "registry.example/web:1.2.3",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent",
                "volumeMounts": [{"name": "kube-api-access", "readOnly": true,
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}],
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420,
                "sources": [{"serviceAccountToken": {"expirationSeconds": 3607,
                    "path": "token"}}]}}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "serviceAccountName": "default",
            "schedulerName": "default-scheduler", "priority": 0,
            "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300}]
        },
        "status": {
            "phase": "Running", "hostIP": "10.0.0.1", "podIP": "10.244.0.1",
            "podIPs": [{"ip": "10.244.0.1"}], "startTime": "2024-01-01T00:00:01Z",
            "qosClass": "Burstable",
            "conditions": [
                {"type": "Initialized", "status": "True",
                 "lastTransitionTime": "2024-01-01T00:00:01Z"},
                {"type": "Ready", "status": if ready { "True" } else { "False" },
                 "lastTransitionTime": "2024-01-01T00:00:05Z"},
                {"type": "ContainersReady", "status": "True",
                 "lastTransitionTime": "2024-01-01T00:00:05Z"},
                {"type": "PodScheduled", "status": "True",
                 "lastTransitionTime": "2024-01-01T00:00:00Z"}],
            "containerStatuses": [{"name": "web", "ready": ready, "restartCount": i % 3,
                "image": "registry.example/web:1.2.3",
                "imageID": "registry.example/web@sha256:0123456789abcdef",
                "containerID": "containerd://0123456789abcdef", "started": true,
                "state": {"running": {"startedAt": "2024-01-01T00:00:04Z"}}}]
        }
    })
}

#[test]
fn the_view_the_indexer_builds_reads_what_the_whole_pod_says() {
    let mut pod = full_pod(4, 42, true);
    pod["metadata"]["deletionTimestamp"] = json!("2024-01-02T00:00:00Z");
    let idx = Indexer::with_namespace_index(Decoder::default());
    idx.add(encode(&pod)).expect("decodes");
    let views = idx
        .by_index_view::<PodView>(NAMESPACE_INDEX, "ns", |_| true)
        .expect("index");
    let [held] = &views[..] else {
        panic!("one pod");
    };
    // The indexer decodes FIELDS only; a view of the whole pod must say the same.
    assert_eq!(format!("{held:?}"), format!("{:?}", PodView::of(&pod)));

    assert_eq!(held.key(), "ns/web-7d4b9c-00004");
    assert_eq!((held.namespace(), held.name()), ("ns", "web-7d4b9c-00004"));
    assert_eq!(held.uid(), object::uid(&pod));
    assert_eq!(held.revision(), 42);
    assert_eq!(held.labels().get("pod-template-hash"), Some("7d4b9c"));
    assert_eq!(held.controller_uid(), Some("rs-uid"));
    assert_eq!(held.node_name(), "node-4");
    assert_eq!(held.phase(), Some(PodPhase::Running));
    assert_eq!(held.created(), object::parse_time("2024-01-01T00:00:00Z"));
    assert_eq!(held.max_restarts(), 1);
    assert_eq!(held.deletion_cost(), 4);
    assert!(held.is_deleting());
    assert_eq!(held.is_active(), is_pod_active(&pod));
    assert_eq!(held.ready_since(), pod_ready_since(&pod));
    assert_eq!(held.is_ready(), is_pod_ready(&pod));
    let now = object::parse_time("2024-01-01T00:00:20Z").expect("time");
    for min_ready in [0, 10, 30] {
        assert_eq!(
            held.is_available(min_ready, now),
            is_pod_available(&pod, min_ready, now)
        );
    }
}

#[test]
fn an_unset_or_odd_pod_reads_as_its_predicates_say() {
    let pod = json!({"metadata": {"name": "p", "annotations": {POD_DELETION_COST: "x"}},
        "status": {"phase": "Succeeded", "containerStatuses": [{"restartCount": 4}]}});
    let view = PodView::of(&pod);
    assert_eq!((view.namespace(), view.name()), ("", "p"));
    assert_eq!(view.node_name(), "");
    assert_eq!(view.deletion_cost(), 0);
    assert_eq!(view.max_restarts(), 4);
    assert_eq!(view.created(), None);
    assert!(!view.is_active() && !is_pod_active(&pod));
    assert!(!view.is_ready());
}

/// What a ReplicaSet sync reads of its 30,000 pods, the old way (every pod decoded as
/// POD_FOR_CONTROLLERS projects it) against views kept per revision, in the same run.
/// Run: `cargo nextest run -p client --release --run-ignored only pod_view_read_cost
/// --no-capture` (or `cargo test -p client --release pod_view_read_cost -- --ignored
/// --nocapture`).
#[test]
#[ignore = "a measurement: prints timings"]
fn pod_view_read_cost() {
    const PODS: usize = 30_000;
    const ROUNDS: u32 = 5;
    let idx = Indexer::with_namespace_index(Decoder::default());
    let encoded: Vec<Encoded> = (0..PODS)
        .map(|i| encode(&full_pod(i, i as u32 + 1, i % 10 != 0)))
        .collect();
    let bytes: usize = encoded.iter().map(|e| e.value.len()).sum();
    idx.replace(encoded);
    let candidate = |s: &crate::informer::Summary<'_>| s.controller_uid() == Some("rs-uid");
    let now = object::parse_time("2024-01-01T00:01:00Z").expect("time");

    let started = Instant::now();
    let mut old_ready = 0;
    for _ in 0..ROUNDS {
        let pods = idx
            .by_index_projected(NAMESPACE_INDEX, "ns", candidate, POD_FOR_CONTROLLERS)
            .expect("index");
        old_ready = pods
            .iter()
            .filter(|p| is_pod_active(p) && is_pod_available(p, 10, now))
            .count();
    }
    let old = started.elapsed() / ROUNDS;

    let read_views = || {
        let views = idx
            .by_index_view::<PodView>(NAMESPACE_INDEX, "ns", candidate)
            .expect("index");
        views
            .iter()
            .filter(|p| p.is_active() && p.is_available(10, now))
            .count()
    };
    let started = Instant::now();
    let cold_ready = read_views();
    let cold = started.elapsed();
    assert_eq!(cold_ready, old_ready);
    // What a kept view costs: the item's slot, the Arc'd view, its uid and node name (the
    // key and labels are the indexer's own).
    let views = idx
        .by_index_view::<PodView>(NAMESPACE_INDEX, "ns", candidate)
        .expect("index");
    let heap: usize = views
        .iter()
        .map(|v| 24 + 16 + std::mem::size_of::<PodView>() + v.uid().len() + v.node_name().len())
        .sum();
    drop(views);

    let started = Instant::now();
    for _ in 0..ROUNDS {
        assert_eq!(read_views(), old_ready);
    }
    let warm = started.elapsed() / ROUNDS;

    // 1% of the pods turn ready between syncs.
    for i in (0..PODS).step_by(100) {
        idx.update(encode(&full_pod(i, (PODS + i) as u32 + 1, true)))
            .expect("decodes");
    }
    let started = Instant::now();
    let churned_ready = read_views();
    let churned = started.elapsed();
    assert_eq!(churned_ready, old_ready + PODS / 100);

    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    println!();
    println!(
        "{PODS} pods of one ReplicaSet, {} B stored JSON each; mean of {ROUNDS} reads",
        bytes / PODS
    );
    println!("projected decode (old) : {:>9.2} ms/sync", ms(old));
    println!(
        "views, first read      : {:>9.2} ms   ({:.2}x old)",
        ms(cold),
        ms(cold) / ms(old)
    );
    println!(
        "views, unchanged pods  : {:>9.2} ms/sync ({:.0}x faster than old)",
        ms(warm),
        ms(old) / ms(warm)
    );
    println!(
        "views, 1% pods changed : {:>9.2} ms/sync ({:.0}x faster than old)",
        ms(churned),
        ms(old) / ms(churned)
    );
    println!(
        "view memory: ~{} B per pod (size_of PodView {} B)",
        heap / PODS,
        std::mem::size_of::<PodView>()
    );
}
