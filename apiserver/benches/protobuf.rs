//! What an answer's encoding costs per object, JSON (the wire encoder every JSON answer goes
//! through) against protobuf (the encoder protobuf answers go through), on two pods: upstream's
//! fully populated fixture and a small one as a user writes it. One thread, in process.
//!
//! `cargo bench -p apiserver --bench protobuf`; `BENCH_ITERATIONS` sets the encodings per
//! measurement (default 20000).

use std::time::Instant;

use apiserver::api::protobuf::encode;
use registry::wire::{self, Style};
use serde_json::{json, Value};

fn per_object_us(iterations: usize, mut f: impl FnMut() -> usize) -> f64 {
    // Warm up (the encoder reads its plans once), then the best of three runs.
    let mut sink = 0;
    for _ in 0..iterations / 10 {
        sink += f();
    }
    let mut best = f64::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        for _ in 0..iterations {
            sink += f();
        }
        best = best.min(start.elapsed().as_secs_f64() * 1e6 / iterations as f64);
    }
    assert!(sink > 0);
    best
}

fn main() {
    let iterations = std::env::var("BENCH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let fixture: Value = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/protobuf/fixtures/core.v1.Pod.json"
    )))
    .expect("the fixture");
    let small = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "default", "uid": "6f1c0c5e-2f0b-4c41-9d1a-0d7b3c1e9a11",
                     "resourceVersion": "12345", "creationTimestamp": "2026-01-01T00:00:00Z",
                     "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                 "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
                 "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "nodeName": "node-1"},
        "status": {"phase": "Running", "podIP": "10.0.0.5"}});
    println!("object        json µs  protobuf µs  protobuf/json  bytes json/protobuf");
    for (name, object) in [("fixture pod", &fixture), ("small pod", &small)] {
        let json_bytes = wire::body(object, Style::Compact).expect("JSON").len();
        let pb_bytes = encode::encode(object).expect("protobuf").len();
        let json_us = per_object_us(iterations, || {
            wire::body(object, Style::Compact).map_or(0, |b| b.len())
        });
        let pb_us = per_object_us(iterations, || encode::encode(object).map_or(0, |b| b.len()));
        println!(
            "{name:<12} {json_us:>8.2} {pb_us:>12.2} {:>14.2}  {json_bytes}/{pb_bytes}",
            pb_us / json_us
        );
    }
}
