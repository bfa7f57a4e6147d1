//! Scaling one ReplicaSet from 0 to 5,000 pods, measured against the raw Store create rate of
//! the same pods on the same backend in the same run, and the memory each 1,000 pods cost the
//! process (informer, watch cache, events) as VmRSS tells.
//!
//! Target: the controller's create rate ≥ 50% of the raw Store create rate.
//! Run: `cargo bench -p controllers --bench replicaset` (`REPLICASET_PODS=n` to change 5,000,
//! `REPLICASET_BACKENDS=embedded` or `=etcd` for one backend).

mod support;

use std::time::{Duration, Instant};

use client::informer::{InformerConfig, InformerFactory};
use controllers::replicaset::{ReplicaSetController, ReplicaSetControllerConfig};
use registry::options::{ListOptions, WriteOptions};
use registry::patch::PatchType;
use registry::Subresource;
use serde_json::{json, Value};
use storage::backend::DynBackend;
use storage::Interface;
use support::{
    backends, env_count, namespace, raw_pod_create_rate, registry_at, rss_kib, wait_for,
};
use tokio_util::sync::CancellationToken;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const NS: &str = "bench";

struct Row {
    backend: &'static str,
    raw_rate: f64,
    controller_rate: f64,
    rss_per_1000_kib: f64,
}

fn main() {
    let pods = env_count("REPLICASET_PODS", 5_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let rows = runtime.block_on(async {
        let mut rows = Vec::new();
        for (name, _kept, backend) in backends("REPLICASET_BACKENDS").await {
            rows.push(measure(name, backend, pods).await);
        }
        rows
    });
    println!();
    println!("one ReplicaSet scaled 0 → {pods} pods");
    println!(
        "{:<9} {:>14} {:>16} {:>10} {:>16}",
        "backend", "raw create/s", "controller pod/s", "ctl/raw", "RSS KiB/1k pods"
    );
    for r in &rows {
        println!(
            "{:<9} {:>14.0} {:>16.0} {:>9.0}% {:>16.0}",
            r.backend,
            r.raw_rate,
            r.controller_rate,
            100.0 * r.controller_rate / r.raw_rate,
            r.rss_per_1000_kib
        );
    }
    println!("target: controller create rate ≥ 50% of raw Store create rate");
}

fn template() -> Value {
    json!({
        "metadata": {"labels": {"app": "bench"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    })
}

async fn measure(name: &'static str, backend: DynBackend, pods: usize) -> Row {
    let raw_rate = raw_pod_create_rate(backend.clone(), NS, &template(), pods).await;
    eprintln!("{name}: raw Store create {raw_rate:.0} pods/s");
    let (controller_rate, rss_per_1000_kib) = scale_up(backend, pods).await;
    eprintln!("{name}: controller {controller_rate:.0} pods/s, {rss_per_1000_kib:.0} KiB RSS per 1,000 pods");
    Row {
        backend: name,
        raw_rate,
        controller_rate,
        rss_per_1000_kib,
    }
}

/// Pods per second from scaling to `pods` until all exist, and RSS growth per 1,000 pods.
async fn scale_up(backend: DynBackend, pods: usize) -> (f64, f64) {
    let registry = registry_at(backend, "/bench-rs").await;
    namespace(&registry, NS).await;
    let sets = registry
        .store("apps", "v1", "replicasets")
        .expect("replicasets");
    let rs = json!({
        "metadata": {"name": "bench"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "bench"}}, "template": template()},
    });
    sets.create(Some(NS), rs, &WriteOptions::default())
        .await
        .expect("replicaset");
    let stop = CancellationToken::new();
    let controller = ReplicaSetController::new(
        &InformerFactory::new(registry.clone(), InformerConfig::default()),
        ReplicaSetControllerConfig::default(),
    )
    .expect("controller");
    let running = tokio::spawn(controller.run(stop.clone()));
    wait_for("replicaset synced", Duration::from_secs(60), async || {
        let rs = sets
            .get(Some(NS), "bench", &ListOptions::default())
            .await
            .expect("get");
        rs["status"]["observedGeneration"] == 1
    })
    .await;
    let rss_before = rss_kib();
    let started = Instant::now();
    let scale = serde_json::to_vec(&json!({"spec": {"replicas": pods}})).expect("json");
    sets.patch(
        Some(NS),
        "bench",
        PatchType::Merge,
        &scale,
        Subresource::Main,
        &WriteOptions::default(),
    )
    .await
    .expect("scale");
    let root = registry.root().clone();
    let prefix = format!("/pods/{NS}/");
    wait_for("pods created", Duration::from_secs(600), async || {
        root.count(&prefix).await.unwrap_or(0) >= pods as i64
    })
    .await;
    let rate = pods as f64 / started.elapsed().as_secs_f64();
    // Once the informer holds them all (status counts them), the memory is what it costs.
    wait_for(
        "status counts every pod",
        Duration::from_secs(600),
        async || {
            let rs = sets
                .get(Some(NS), "bench", &ListOptions::default())
                .await
                .expect("get");
            rs["status"]["replicas"] == pods
        },
    )
    .await;
    let rss_after = rss_kib();
    stop.cancel();
    let _ = running.await;
    let per_1000 = (rss_after - rss_before) * 1000.0 / pods as f64;
    (rate, per_1000)
}
