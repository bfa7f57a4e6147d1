//! A registry over a real backend with the scheduler running on its informers, and helpers to
//! make nodes and pods and wait for what the scheduler does.

#![allow(dead_code)]

#[path = "../../../registry/tests/support/mod.rs"]
mod registry_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use client::informer::{InformerConfig, InformerFactory};
use registry::options::ListOptions;
use registry::{Store, Subresource};
use scheduler::{Scheduler, SchedulerConfig};
use serde_json::{json, Value};
use test_support::{FromBackend, TestBackend};
use tokio_util::sync::CancellationToken;

pub use registry_support::write;

pub const WAIT: Duration = Duration::from_secs(15);

pub struct Harness {
    pub inner: registry_support::Harness,
    pub stop: CancellationToken,
}

impl FromBackend for Harness {
    async fn from_backend(backend: TestBackend) -> Self {
        let inner = registry_support::Harness::from_backend(backend).await;
        let factory = InformerFactory::new(inner.registry.clone(), InformerConfig::default());
        let config = SchedulerConfig {
            initial_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_millis(200),
            ..SchedulerConfig::default()
        };
        let scheduler = Scheduler::new(&factory, config).expect("scheduler");
        let stop = CancellationToken::new();
        tokio::spawn(scheduler.run(stop.clone()));
        Self { inner, stop }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Harness {
    pub fn pods(&self) -> Arc<Store> {
        self.inner.store("", "pods")
    }

    pub async fn node(&self, name: &str, cpu: &str, extra: Value) {
        let mut node = json!({
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
        });
        merge(&mut node, extra);
        let nodes = self.inner.store("", "nodes");
        let status = node["status"].clone();
        let mut created = nodes
            .create(None, node, &write())
            .await
            .expect("create node");
        // Status is the kubelet's to write, through its subresource.
        created["status"] = status;
        nodes
            .update(None, name, created, Subresource::Status, &write())
            .await
            .expect("node status");
    }

    pub async fn pod(&self, name: &str, cpu: &str, extra: Value) {
        let mut pod = json!({
            "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx",
                "resources": {"requests": {"cpu": cpu}}}]},
        });
        merge(&mut pod, extra);
        self.pods()
            .create(Some("default"), pod, &write())
            .await
            .expect("create pod");
    }

    pub async fn get(&self, name: &str) -> Value {
        self.pods()
            .get(Some("default"), name, &ListOptions::default())
            .await
            .expect("get pod")
    }

    /// Waits until `check` holds of the pod.
    pub async fn wait_pod(&self, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let pod = self.get(name).await;
            if check(&pod) {
                return pod;
            }
            assert!(Instant::now() < deadline, "{what}: {pod:#}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    pub async fn node_of(&self, name: &str) -> String {
        let pod = self
            .wait_pod(name, "bound", |p| p["spec"]["nodeName"].is_string())
            .await;
        pod["spec"]["nodeName"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Waits for an event of `reason` about the pod (events are written in the background).
    pub async fn event(&self, name: &str, reason: &str) -> Value {
        self.event_where(name, reason, |_| true).await
    }

    /// Waits for an event of `reason` about the pod that `check` accepts.
    pub async fn event_where(
        &self,
        name: &str,
        reason: &str,
        check: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let events = self.events_of(name).await;
            if let Some(e) = events
                .into_iter()
                .find(|e| e["reason"] == reason && check(e))
            {
                return e;
            }
            assert!(
                Instant::now() < deadline,
                "no such {reason} event for {name}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    pub async fn events_of(&self, name: &str) -> Vec<Value> {
        let list = self
            .inner
            .store("", "events")
            .list(Some("default"), &ListOptions::default())
            .await
            .expect("events");
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["involvedObject"]["name"] == name)
            .cloned()
            .collect()
    }
}

fn merge(target: &mut Value, extra: Value) {
    match (target, extra) {
        (Value::Object(t), Value::Object(e)) => {
            for (k, v) in e {
                merge(t.entry(k).or_insert(Value::Null), v);
            }
        }
        (t, e) => *t = e,
    }
}
