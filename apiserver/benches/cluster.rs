//! A whole cluster in one process: 100 simulated nodes, and one Deployment scaled to 10,000
//! pods that the Deployment and ReplicaSet controllers create, the scheduler binds and the
//! kubelets run to Ready. Measured against the raw Store create rate of the same pods on the
//! same backend in the same run.
//!
//! Figures: time until every pod is Running and Ready; scheduling throughput (binds/s); the
//! pod writes of the run (every ADDED / MODIFIED a pods watch sees: create, bind, the
//! kubelet's status writes) per second against the raw create rate; RSS growth per 1,000 pods.
//! Target: on etcd, pod writes/s ≥ 25% of the raw create rate; for comparison, kube-scheduler's
//! default client limit of 50 binds/s needs ≥ 200 s for 10,000 pods.
//!
//! Run: `cargo bench -p apiserver --bench cluster` (`CLUSTER_PODS=n`, `CLUSTER_NODES=n`,
//! `CLUSTER_BACKENDS=embedded` or `=etcd` for one backend).

#[path = "../../controllers/benches/support/mod.rs"]
mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use client::informer::{InformerConfig, InformerFactory};
use controllers::deployment::{DeploymentController, DeploymentControllerConfig};
use controllers::replicaset::{ReplicaSetController, ReplicaSetControllerConfig};
use futures::StreamExt;
use kubelet::{NodeConfig, Nodes};
use registry::options::{ListOptions, WriteOptions};
use registry::WatchEventType;
use scheduler::{Scheduler, SchedulerConfig};
use serde_json::{json, Value};
use storage::backend::DynBackend;
use support::{backends, env_count, namespace, raw_pod_create_rate, registry_at, rss_kib};
use tokio_util::sync::CancellationToken;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const NS: &str = "bench";

struct Row {
    backend: &'static str,
    raw_rate: f64,
    ready_after: Duration,
    bind_rate: f64,
    pod_writes: u64,
    rss_per_1000_kib: f64,
}

fn main() {
    let pods = env_count("CLUSTER_PODS", 10_000);
    let nodes = env_count("CLUSTER_NODES", 100);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let rows = runtime.block_on(async {
        let mut rows = Vec::new();
        for (name, _kept, backend) in backends("CLUSTER_BACKENDS").await {
            rows.push(measure(name, backend, pods, nodes).await);
        }
        rows
    });
    println!();
    println!("{nodes} nodes, one Deployment of {pods} pods until all are Running and Ready");
    println!(
        "{:<9} {:>12} {:>10} {:>10} {:>11} {:>12} {:>9} {:>14}",
        "backend",
        "raw create/s",
        "all ready",
        "binds/s",
        "pod writes",
        "pod writes/s",
        "vs raw",
        "RSS KiB/1k pods"
    );
    for r in &rows {
        let secs = r.ready_after.as_secs_f64();
        let writes_rate = r.pod_writes as f64 / secs;
        println!(
            "{:<9} {:>12.0} {:>9.1}s {:>10.0} {:>11} {:>12.0} {:>8.0}% {:>14.0}",
            r.backend,
            r.raw_rate,
            secs,
            r.bind_rate,
            r.pod_writes,
            writes_rate,
            100.0 * writes_rate / r.raw_rate,
            r.rss_per_1000_kib
        );
    }
    println!("target: on etcd, pod writes/s ≥ 25% of the raw create rate");
    println!(
        "kube-scheduler's default 50 binds/s: {:.0} s for {pods} pods",
        pods as f64 / 50.0
    );
}

fn template() -> Value {
    json!({
        "metadata": {"labels": {"app": "bench"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    })
}

async fn measure(name: &'static str, backend: DynBackend, pods: usize, nodes: usize) -> Row {
    let raw_rate = raw_pod_create_rate(backend.clone(), NS, &template(), pods).await;
    eprintln!("{name}: raw Store create {raw_rate:.0} pods/s");
    let row = run_cluster(name, backend, pods, nodes, raw_rate).await;
    eprintln!(
        "{name}: all {pods} pods ready after {:.1} s, {:.0} binds/s, {} pod writes",
        row.ready_after.as_secs_f64(),
        row.bind_rate,
        row.pod_writes
    );
    row
}

/// What the pods watch saw: writes, binds and ready pods, and when the last pod was bound.
#[derive(Default)]
struct Seen {
    writes: AtomicU64,
    bound: std::sync::Mutex<(std::collections::HashSet<String>, Option<Instant>)>,
    ready: std::sync::Mutex<std::collections::HashSet<String>>,
}

fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

async fn run_cluster(
    name: &'static str,
    backend: DynBackend,
    pods: usize,
    nodes: usize,
    raw_rate: f64,
) -> Row {
    let registry = registry_at(backend, "/bench-cluster").await;
    // The schemas the server validates and tracks managedFields with, as it runs.
    registry.set_schemas(Arc::new(openapi::OpenApi::new(Vec::new())));
    namespace(&registry, NS).await;
    let stop = CancellationToken::new();
    let informers = InformerFactory::new(registry.clone(), InformerConfig::default());
    let node_config = NodeConfig {
        count: nodes,
        ..NodeConfig::default()
    };
    let mut tasks = vec![
        tokio::spawn(
            Nodes::new(&informers, node_config)
                .expect("nodes")
                .run(stop.clone()),
        ),
        tokio::spawn(
            Scheduler::new(&informers, SchedulerConfig::default())
                .expect("scheduler")
                .run(stop.clone()),
        ),
        tokio::spawn(
            ReplicaSetController::new(&informers, ReplicaSetControllerConfig::default())
                .expect("replicaset controller")
                .run(stop.clone()),
        ),
        tokio::spawn(
            DeploymentController::new(&informers, DeploymentControllerConfig::default())
                .expect("deployment controller")
                .run(stop.clone()),
        ),
    ];
    let node_store = registry.store("", "v1", "nodes").expect("nodes");
    support::wait_for("nodes registered", Duration::from_secs(120), async || {
        let list = node_store
            .list(None, &ListOptions::default())
            .await
            .expect("list nodes");
        list["items"].as_array().map(Vec::len) == Some(nodes)
    })
    .await;

    let pods_store = registry.store("", "v1", "pods").expect("pods");
    let from = pods_store
        .list(Some(NS), &ListOptions::default())
        .await
        .expect("list pods")["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_string();
    let seen = Arc::new(Seen::default());
    let mut watch = pods_store
        .watch(
            Some(NS),
            None,
            &ListOptions {
                resource_version: Some(from),
                ..Default::default()
            },
        )
        .await
        .expect("watch pods");
    let counter = seen.clone();
    tasks.push(tokio::spawn(async move {
        while let Some(event) = watch.next().await {
            if !matches!(event.kind, WatchEventType::Added | WatchEventType::Modified) {
                continue;
            }
            counter.writes.fetch_add(1, Ordering::Relaxed);
            let pod = &event.object;
            let uid = registry::object::uid(pod).to_string();
            if pod["spec"]["nodeName"].is_string() {
                let mut bound = counter.bound.lock().unwrap_or_else(|p| p.into_inner());
                if bound.0.insert(uid.clone()) {
                    bound.1 = Some(Instant::now());
                }
            }
            if is_ready(pod) {
                counter
                    .ready
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(uid);
            }
        }
    }));

    let rss_before = rss_kib();
    let started = Instant::now();
    let deployment = json!({
        "metadata": {"name": "bench"},
        "spec": {"replicas": pods, "selector": {"matchLabels": {"app": "bench"}},
                 "template": template()},
    });
    registry
        .store("apps", "v1", "deployments")
        .expect("deployments")
        .create(Some(NS), deployment, &WriteOptions::default())
        .await
        .expect("deployment");
    let mut last_report = Instant::now();
    support::wait_for("every pod Ready", Duration::from_secs(1800), async || {
        let ready = seen.ready.lock().unwrap_or_else(|p| p.into_inner()).len();
        if last_report.elapsed() > Duration::from_secs(5) {
            last_report = Instant::now();
            let bound = seen.bound.lock().unwrap_or_else(|p| p.into_inner()).0.len();
            eprintln!(
                "{name}: {:.0} s: {bound} bound, {ready} ready",
                started.elapsed().as_secs_f64()
            );
        }
        ready >= pods
    })
    .await;
    let ready_after = started.elapsed();
    let rss_after = rss_kib();
    let last_bind = seen
        .bound
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .1
        .unwrap_or_else(Instant::now);
    let bind_rate = pods as f64 / last_bind.duration_since(started).as_secs_f64();
    let pod_writes = seen.writes.load(Ordering::Relaxed);
    stop.cancel();
    for t in tasks.drain(..) {
        t.abort();
        let _ = t.await;
    }
    Row {
        backend: name,
        raw_rate,
        ready_after,
        bind_rate,
        pod_writes,
        rss_per_1000_kib: (rss_after - rss_before) * 1000.0 / pods as f64,
    }
}
