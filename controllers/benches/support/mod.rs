//! What the controller benchmarks share: the backends to run on, a registry per run, and
//! waiting for a controller's work to show.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use registry::{Catalogue, Registry};
use storage::backend::DynBackend;
use storage::CacherConfig;
use test_support::{BackendKind, TestBackend};

/// Requests in flight while setting up and for the raw baselines.
pub const CONCURRENCY: usize = 64;

/// A number from the environment variable `var`, or `default`.
pub fn env_count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// The backends chosen by `var` (`embedded` or `etcd`; both when unset), each opened; the
/// TestBackend keeps its etcd or directory alive.
pub async fn backends(var: &str) -> Vec<(&'static str, TestBackend, DynBackend)> {
    let mut opened = Vec::new();
    for kind in BackendKind::chosen(var, &[BackendKind::Etcd, BackendKind::Embedded]) {
        let test_backend = TestBackend::open(kind).await;
        let backend = storage::backend::open(&test_backend.etcd_servers(), test_backend.data_dir())
            .await
            .expect("open the test backend");
        opened.push((kind.name(), test_backend, backend));
    }
    opened
}

/// A bootstrapped registry of the built-in resources under `prefix` of `backend`.
pub async fn registry_at(backend: DynBackend, prefix: &str) -> Arc<Registry> {
    let registry = Registry::new(
        storage::KvStore::new(backend, prefix),
        Arc::new(Catalogue::builtin()),
        CacherConfig::default(),
    );
    registry.bootstrap().await.expect("bootstrap");
    registry
}

/// Polls `done` every 10 ms; panics after `limit`.
pub async fn wait_for(what: &str, limit: Duration, mut done: impl AsyncFnMut() -> bool) {
    let started = Instant::now();
    while !done().await {
        assert!(started.elapsed() < limit, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The process's resident set in KiB (/proc/self/status VmRSS).
pub fn rss_kib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0.0)
}

/// Creates the namespace `name`.
pub async fn namespace(registry: &Registry, name: &str) {
    registry
        .store("", "v1", "namespaces")
        .expect("namespaces")
        .create(
            None,
            serde_json::json!({"metadata": {"name": name}}),
            &registry::options::WriteOptions::default(),
        )
        .await
        .expect("namespace");
}

/// The baseline of the workload benchmarks: `pods` pods of `template`, as a ReplicaSet would
/// make them, created straight through the pods Store of a fresh registry in namespace `ns`
/// by 64 concurrent callers; pods per second.
pub async fn raw_pod_create_rate(
    backend: DynBackend,
    ns: &str,
    template: &serde_json::Value,
    pods: usize,
) -> f64 {
    use futures::stream::{self, StreamExt};
    let registry = registry_at(backend, "/bench-raw").await;
    namespace(&registry, ns).await;
    let store = registry.store("", "v1", "pods").expect("pods");
    let owner = serde_json::json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                   "metadata": {"name": "bench", "uid": "raw"}});
    let reference = client::controller_utils::controller_ref(&owner);
    let started = Instant::now();
    stream::iter(0..pods)
        .for_each_concurrent(CONCURRENCY, |_| {
            let pod =
                client::controller_utils::pod_from_template(template, "bench", reference.clone());
            let store = &store;
            async move {
                store
                    .create(Some(ns), pod, &registry::options::WriteOptions::default())
                    .await
                    .expect("create pod");
            }
        })
        .await;
    pods as f64 / started.elapsed().as_secs_f64()
}
