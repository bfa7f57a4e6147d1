//! The registry harness of registry's tests, and the kubelets over it with short timings.

#![allow(dead_code)]

#[path = "../../../registry/tests/support/mod.rs"]
mod registry_support;

use std::sync::Arc;
use std::time::Duration;

use controllers::informer::{InformerConfig, InformerFactory};
use kubelet::{KubeletTimings, NodeConfig, Nodes};
pub use registry_support::Harness;
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
    let informers = InformerFactory::new(h.registry.clone(), InformerConfig::default());
    let nodes = Nodes::new(&informers, config).expect("nodes");
    let stop = CancellationToken::new();
    tokio::spawn(nodes.run(stop.clone()));
    let _: &Arc<_> = informers.registry();
    stop
}
