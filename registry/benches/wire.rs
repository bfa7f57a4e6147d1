//! The cost of writing JSON in upstream's wire order (registry's `wire`: Go field order, Go
//! escaping) next to serde_json's own writer (keys sorted), measured in the same run: a Pod
//! as the kubelet reports it, and a list of 500 of them as a list answer writes them.
//!
//! Run: `cargo bench -p registry --bench wire` (`BENCH_ITERATIONS`, default 20000).

use std::hint::black_box;
use std::time::Instant;

use registry::wire::{self, Style};
use serde_json::{json, Value};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn pod(i: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("web-7c5d8f9b6-{i:05}"), "generateName": "web-7c5d8f9b6-",
            "namespace": "default", "uid": "26f60f0e-3891-4803-b063-e3dbbd4b7331",
            "resourceVersion": "123456", "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "7c5d8f9b6"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": "web-7c5d8f9b6", "uid": "0b5e3a55-8f6c-4d0c-9d8e-2f5f0e2a6c11",
                "controller": true, "blockOwnerDeletion": true}],
        },
        "spec": {
            "containers": [{
                "name": "web", "image": "nginx:1.25", "imagePullPolicy": "IfNotPresent",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"},
                              "requests": {"cpu": "250m", "memory": "64Mi"}},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [{"name": "kube-api-access", "readOnly": true,
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
            }],
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": true, "nodeName": "node-1",
            "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
            "restartPolicy": "Always", "schedulerName": "default-scheduler",
            "securityContext": {}, "serviceAccount": "default",
            "serviceAccountName": "default", "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready",
                 "operator": "Exists", "tolerationSeconds": 300},
                {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable",
                 "operator": "Exists", "tolerationSeconds": 300}],
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420,
                "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}],
        },
        "status": {
            "phase": "Running", "hostIP": "10.0.0.1", "podIP": "10.244.0.5",
            "podIPs": [{"ip": "10.244.0.5"}], "qosClass": "Burstable",
            "startTime": "2025-01-01T00:00:01Z",
            "conditions": [
                {"type": "Ready", "status": "True", "lastProbeTime": null,
                 "lastTransitionTime": "2025-01-01T00:00:03Z"},
                {"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                 "lastTransitionTime": "2025-01-01T00:00:00Z"}],
            "containerStatuses": [{"name": "web", "ready": true, "restartCount": 0,
                "started": true, "image": "nginx:1.25", "imageID": "docker-pullable://nginx@sha256:0d17b565",
                "containerID": "containerd://4b2c1f0e",
                "state": {"running": {"startedAt": "2025-01-01T00:00:02Z"}}}],
        },
    })
}

fn per_op(iterations: u32, mut f: impl FnMut()) -> f64 {
    let started = Instant::now();
    for _ in 0..iterations {
        f();
    }
    started.elapsed().as_nanos() as f64 / f64::from(iterations)
}

fn main() {
    let iterations: u32 = std::env::var("BENCH_ITERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let one = pod(0);
    let list = json!({"apiVersion": "v1", "kind": "PodList",
                      "metadata": {"resourceVersion": "123456"},
                      "items": (0..500).map(pod).collect::<Vec<_>>()});
    let mut out = Vec::with_capacity(1 << 20);
    println!(
        "{:<12} {:>8} {:>14} {:>14} {:>7}",
        "object", "bytes", "sorted ns/op", "wire ns/op", "ratio"
    );
    for (name, value, rounds) in [
        ("Pod", &one, iterations),
        ("PodList×500", &list, iterations / 500 + 1),
    ] {
        let sorted = per_op(rounds, || {
            out.clear();
            serde_json::to_writer(&mut out, black_box(value)).ok();
            black_box(&out);
        });
        let bytes = out.len();
        let ordered = per_op(rounds, || {
            out.clear();
            wire::write(&mut out, black_box(value), Style::Compact).ok();
            black_box(&out);
        });
        let untyped = per_op(rounds, || {
            out.clear();
            wire::write_as(&mut out, black_box(value), None, Style::Compact).ok();
            black_box(&out);
        });
        println!(
            "{name:<12} {bytes:>8} {sorted:>14.0} {ordered:>14.0} {:>7.2} untyped {untyped:.0}",
            ordered / sorted
        );
    }
}
