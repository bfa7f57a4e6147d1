//! The cost of server-side field validation per object: a Deployment as kubectl sends it and
//! as stored (with server defaults and status), walked against its compiled schema, next to
//! a clone of the same object for scale.
//!
//! Run: `cargo bench -p registry --bench fields` (`BENCH_ITERATIONS`, default 200000).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use registry::field_validation::{check, FieldSchemas, Written};
use registry::options::WriteOptions;
use serde_json::{json, Value};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn sent() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [
                    {"name": "web", "image": "nginx:1.25", "ports": [{"containerPort": 80}],
                     "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}}},
                    {"name": "side", "image": "busybox", "args": ["sleep", "3600"]}
                ]}
            }
        }
    })
}

fn stored() -> Value {
    let mut obj = sent();
    obj["metadata"]["uid"] = json!("26f60f0e-3891-4803-b063-e3dbbd4b7331");
    obj["metadata"]["generation"] = json!(2);
    obj["metadata"]["creationTimestamp"] = json!("2025-01-01T00:00:00Z");
    obj["metadata"]["annotations"] = json!({"deployment.kubernetes.io/revision": "1"});
    let spec = &mut obj["spec"];
    spec["progressDeadlineSeconds"] = json!(600);
    spec["revisionHistoryLimit"] = json!(10);
    spec["strategy"] = json!({"type": "RollingUpdate",
                              "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}});
    let pod = &mut spec["template"]["spec"];
    pod["dnsPolicy"] = json!("ClusterFirst");
    pod["restartPolicy"] = json!("Always");
    pod["schedulerName"] = json!("default-scheduler");
    pod["securityContext"] = json!({});
    pod["terminationGracePeriodSeconds"] = json!(30);
    for c in pod["containers"].as_array_mut().into_iter().flatten() {
        c["imagePullPolicy"] = json!("IfNotPresent");
        c["terminationMessagePath"] = json!("/dev/termination-log");
        c["terminationMessagePolicy"] = json!("File");
    }
    obj["status"] = json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2,
        "readyReplicas": 2, "availableReplicas": 2,
        "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                        "message": "Deployment has minimum availability.",
                        "lastUpdateTime": "2025-01-01T00:00:00Z",
                        "lastTransitionTime": "2025-01-01T00:00:00Z"}]});
    obj
}

fn per_op(iterations: u32, mut f: impl FnMut()) -> f64 {
    let started = Instant::now();
    for _ in 0..iterations {
        f();
    }
    started.elapsed().as_nanos() as f64 / f64::from(iterations)
}

fn main() {
    let iterations = std::env::var("BENCH_ITERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200_000);
    let schemas = FieldSchemas::default();
    schemas.set_source(Arc::new(openapi::OpenApi::new(Vec::new())));
    let started = Instant::now();
    let schema = schemas.get("apps", "v1", "Deployment").expect("schema");
    println!(
        "first lookup (parse, resolve, compile): {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    let written = Written {
        group: "apps",
        version: "v1",
        kind: "Deployment",
        patched: false,
    };
    let opts = WriteOptions::default();
    println!("{:<34} {:>10}", "Deployment", "ns/object");
    for (name, obj) in [("as sent", sent()), ("as stored", stored())] {
        let mut obj = obj;
        let walk = per_op(iterations, || {
            let findings = check(&schema, black_box(&mut obj), true);
            black_box(findings);
        });
        let validate = per_op(iterations, || {
            let result = schemas.validate(&written, black_box(&mut obj), &opts);
            black_box(result).ok();
        });
        let clone = per_op(iterations, || {
            black_box(obj.clone());
        });
        println!("{:<34} {walk:>10.0}", format!("walk, {name}"));
        println!(
            "{:<34} {validate:>10.0}",
            format!("validate (lookup + walk), {name}")
        );
        println!("{:<34} {clone:>10.0}", format!("clone, {name} (for scale)"));
    }
}
