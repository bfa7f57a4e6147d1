//! The registry harness of registry's tests, and the kubelets over it with short timings.

#![allow(dead_code)]

#[path = "../../../registry/tests/support/mod.rs"]
mod registry_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use client::informer::{InformerConfig, InformerFactory};
use kubelet::{KubeletTimings, NodeConfig, Nodes};
use registry::options::{ListOptions, WriteOptions};
use registry::{RegistryError, Store};
pub use registry_support::Harness;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

pub fn config(count: usize) -> NodeConfig {
    NodeConfig {
        count,
        timings: KubeletTimings {
            lease_renew_interval: Duration::from_millis(300),
            crash_loop_backoff: (Duration::from_secs(1), Duration::from_secs(8)),
            completing_run: Duration::from_millis(300),
            sandbox_retry: Duration::from_millis(200),
            ..Default::default()
        },
        ..Default::default()
    }
}

pub fn start(h: &Harness, config: NodeConfig) -> CancellationToken {
    start_nodes(h, config).0
}

/// Starts the kubelets; the nodes too, to read what their pod workers hold.
pub fn start_nodes(h: &Harness, config: NodeConfig) -> (CancellationToken, Arc<Nodes>) {
    let informers = InformerFactory::new(h.registry.clone(), InformerConfig::default());
    let nodes = Nodes::new(&informers, config).expect("nodes");
    let stop = CancellationToken::new();
    tokio::spawn(nodes.clone().run(stop.clone()));
    (stop, nodes)
}

pub const NS: &str = "default";

pub fn pods(h: &Harness) -> Arc<Store> {
    h.store("", "pods")
}

/// Creates a pod bound to node-0 (unless `extra` names another), `extra` merged into it.
pub async fn create(h: &Harness, name: &str, extra: Value) -> Value {
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeName": "node-0", "containers": [{"name": "app", "image": "nginx:1.27"}]}});
    merge(&mut pod, extra);
    pods(h)
        .create(Some(NS), pod, &WriteOptions::default())
        .await
        .expect("create pod")
}

fn merge(into: &mut Value, extra: Value) {
    match (into, extra) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

pub async fn get(h: &Harness, name: &str) -> Option<Value> {
    match pods(h).get(Some(NS), name, &ListOptions::default()).await {
        Ok(p) => Some(p),
        Err(RegistryError::NotFound { .. }) => None,
        Err(e) => panic!("get: {e}"),
    }
}

pub fn condition<'a>(pod: &'a Value, kind: &str) -> &'a Value {
    pod["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .unwrap_or(&Value::Null)
}

pub async fn wait_for(h: &Harness, name: &str, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let pod = get(h, name).await;
        if let Some(p) = pod.as_ref().filter(|p| ok(p)) {
            return p.clone();
        }
        assert!(
            Instant::now() < deadline,
            "{name}: {what}; last seen {pod:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
