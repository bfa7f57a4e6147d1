//! Where resource metrics come from (upstream's metrics client over `metrics.k8s.io`): the
//! server gives the controller a [`ResourceMetrics`] that asks whoever serves that API
//! (in-process, or the aggregated metrics-server its APIService names).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// One pod's PodMetrics: per container, per resource, the usage in thousandths
/// (MilliValue, as upstream's metrics client keeps them).
#[derive(Clone, Debug, PartialEq)]
pub struct PodMetric {
    pub timestamp: DateTime<Utc>,
    pub window: Duration,
    pub containers: BTreeMap<String, BTreeMap<String, i64>>,
}

impl PodMetric {
    /// The pod's usage of `resource`: all its containers', or `container`'s alone; None when
    /// a container (or the one named) reports none.
    pub fn usage(&self, resource: &str, container: Option<&str>) -> Option<i64> {
        match container {
            Some(name) => self.containers.get(name)?.get(resource).copied(),
            None => self
                .containers
                .values()
                .map(|usage| usage.get(resource).copied())
                .sum(),
        }
    }
}

/// The PodMetrics of the pods `selector` picks in `namespace`, by pod name; Err is why the
/// resource metrics API could not answer (as upstream's client words it).
#[async_trait]
pub trait ResourceMetrics: Send + Sync {
    async fn pod_metrics(
        &self,
        namespace: &str,
        selector: &str,
    ) -> Result<BTreeMap<String, PodMetric>, String>;
}

/// A metrics client the controller is given.
#[derive(Clone)]
pub struct MetricsClient(pub Arc<dyn ResourceMetrics>);

impl std::fmt::Debug for MetricsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetricsClient")
    }
}
