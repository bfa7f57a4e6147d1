//! What serving a kind from a CustomResourceDefinition costs: create throughput of a custom
//! resource whose schema declares 20 fields (types, bounds, a pattern, an enum, defaults),
//! next to a built-in ConfigMap of the same size with 20 data fields, in the same run on the
//! same backend. Target: the custom resource's validation, defaulting and pruning cost at
//! most 25% of the built-in's throughput.
//!
//! Run: `cargo bench -p apiextensions --bench custom`. `BENCH_OBJECTS` sets objects per row
//! (default 5000), `BENCH_CLIENTS` concurrent clients (default 16), `BENCH_ROUNDS` the
//! alternating rounds whose median is reported (default 3).

// The registry the tests run on: built-in schemas validate writes, as in the server.
#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Instant;

use std::hint::black_box;

use apiextensions::schema::CustomSchema;
use apiextensions::Installer;
use registry::options::WriteOptions;
use registry::Store;
use serde_json::{json, Value};
use support::Harness;
use test_support::stats::median;
use test_support::FromBackend;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Twenty declared fields of the usual kinds.
fn schema() -> Value {
    let mut properties = serde_json::Map::new();
    for i in 0..8 {
        properties.insert(
            format!("name{i}"),
            json!({"type": "string", "maxLength": 64}),
        );
    }
    for i in 0..6 {
        properties.insert(
            format!("count{i}"),
            json!({"type": "integer", "minimum": 0, "maximum": 1000, "default": 1}),
        );
    }
    for i in 0..3 {
        properties.insert(
            format!("enabled{i}"),
            json!({"type": "boolean", "default": false}),
        );
    }
    properties.insert(
        "mode".into(),
        json!({"type": "string", "enum": ["Fast", "Slow"], "default": "Slow"}),
    );
    properties.insert(
        "schedule".into(),
        json!({"type": "string", "pattern": "^[0-9*/ ,-]+$"}),
    );
    properties.insert(
        "tags".into(),
        json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}),
    );
    json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "required": ["schedule"], "properties": properties},
            "status": {"type": "object", "properties": {"ready": {"type": "integer"}}},
        }
    })
}

fn definition() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.bench.example.com", "uid": "bench"},
        "spec": {
            "group": "bench.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": schema()},
                          "subresources": {"status": {}}}],
        },
        "status": {
            "acceptedNames": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "conditions": [{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "True"}],
        },
    })
}

fn widget(i: usize) -> Value {
    let mut spec = serde_json::Map::new();
    for f in 0..8 {
        spec.insert(format!("name{f}"), json!(format!("value-{f}-{i:08}")));
    }
    for f in 0..6 {
        spec.insert(format!("count{f}"), json!(f * 10 + 3));
    }
    for f in 0..3 {
        spec.insert(format!("enabled{f}"), json!(f % 2 == 0));
    }
    spec.insert("mode".into(), json!("Fast"));
    spec.insert("schedule".into(), json!("*/5 * * * *"));
    spec.insert("tags".into(), json!(["a", "b", "c"]));
    json!({
        "apiVersion": "bench.example.com/v1", "kind": "Widget",
        "metadata": {"name": format!("w-{i:08}"), "namespace": "default", "labels": {"app": "bench"}},
        "spec": spec,
    })
}

/// A ConfigMap as large as a widget, with as many fields.
fn configmap(i: usize) -> Value {
    let mut data = serde_json::Map::new();
    for f in 0..8 {
        data.insert(format!("name{f}"), json!(format!("value-{f}-{i:08}")));
    }
    for f in 0..9 {
        data.insert(format!("count{f}"), json!((f * 10 + 3).to_string()));
    }
    data.insert("mode".into(), json!("Fast"));
    data.insert("schedule".into(), json!("*/5 * * * *"));
    data.insert("tags".into(), json!("a,b,c"));
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{i:08}"), "namespace": "default", "labels": {"app": "bench"}},
        "data": data,
    })
}

async fn creates(store: Arc<Store>, objects: Vec<Value>, clients: usize) -> f64 {
    let n = objects.len();
    let objects = Arc::new(objects);
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (store, objects) = (store.clone(), objects.clone());
            tokio::spawn(async move {
                let mut i = c;
                while i < objects.len() {
                    store
                        .create(
                            Some("default"),
                            objects[i].clone(),
                            &WriteOptions::default(),
                        )
                        .await
                        .expect("create");
                    i += clients;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("bench task");
    }
    n as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let n = env("BENCH_OBJECTS", 5000);
    let clients = env("BENCH_CLIENTS", 16);
    let rounds = env("BENCH_ROUNDS", 3).max(1);
    let harness = Harness::embedded().await;
    let registry = &harness.registry;
    Installer::new(registry.clone(), None).sync(&definition());
    let widgets = registry
        .store("bench.example.com", "v1", "widgets")
        .expect("widgets served");
    let configmaps = registry.store("", "v1", "configmaps").expect("configmaps");
    println!(
        "object bytes: widget {}, configmap {}",
        widget(0).to_string().len(),
        configmap(0).to_string().len()
    );
    let (mut builtin, mut custom) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let base = round * n;
        let cms = (base..base + n).map(configmap).collect();
        builtin.push(creates(configmaps.clone(), cms, clients).await);
        let ws = (base..base + n).map(widget).collect();
        custom.push(creates(widgets.clone(), ws, clients).await);
    }
    let (builtin, custom) = (median(builtin), median(custom));
    println!("{n} creates per row, {clients} clients, median of {rounds} rounds, embedded store");
    println!(
        "{:<40} {:>10.0} creates/s",
        "built-in ConfigMap, 20 fields", builtin
    );
    println!(
        "{:<40} {:>10.0} creates/s",
        "custom resource, 20-field schema", custom
    );
    println!(
        "custom ÷ built-in: {:.2} (validation cost {:.0}%; target ≤ 25%)",
        custom / builtin,
        (1.0 - custom / builtin) * 100.0
    );
    // Throughput on two cores is noisy; the CPU the schema costs per object is not.
    let compiled = CustomSchema::compile(&schema()).expect("schema compiles");
    let objects: Vec<Value> = (0..n).map(widget).collect();
    let started = Instant::now();
    for obj in &objects {
        let mut obj = obj.clone();
        compiled.apply_defaults(&mut obj);
        black_box(compiled.validate(&obj));
    }
    let per_object = started.elapsed().as_secs_f64() / n as f64;
    println!(
        "schema defaults + validation: {:.1} µs per object (clone included), {:.1}% of the {:.1} µs between built-in creates",
        per_object * 1e6,
        per_object * builtin * 100.0,
        1e6 / builtin
    );
}
