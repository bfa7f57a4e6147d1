//! Runs the repair of Services' range allocations (`registry::service::Repair`) at start and
//! every [`INTERVAL`], as kube-apiserver's ipallocator and portallocator repair controllers
//! do, and reports what it finds as Warning events on the Services.

use std::sync::Arc;
use std::time::Duration;

use registry::service::{RangeKind, Repair};
use registry::Store;
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use client::events::{EventRecorder, EventType};
use client::informer::InformerFactory;

/// Upstream's repair interval.
pub const INTERVAL: Duration = Duration::from_secs(180);

#[derive(Debug, Error)]
pub enum ServiceRepairError {
    #[error("the registry serves no v1 services")]
    NoServices,
}

pub struct ServiceRepairController {
    repair: Repair,
    services: Arc<Store>,
    ip_events: EventRecorder,
    port_events: EventRecorder,
    interval: Duration,
}

impl ServiceRepairController {
    pub fn new(
        informers: &InformerFactory,
        interval: Duration,
    ) -> Result<Arc<Self>, ServiceRepairError> {
        let registry = informers.registry();
        let services = registry
            .store("", "v1", "services")
            .ok_or(ServiceRepairError::NoServices)?;
        Ok(Arc::new(Self {
            repair: registry.service_repair(),
            services,
            ip_events: EventRecorder::new(registry.clone(), RangeKind::ClusterIps.component()),
            port_events: EventRecorder::new(registry.clone(), RangeKind::NodePorts.component()),
            interval,
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        info!(interval = ?self.interval, "starting service allocation repair");
        loop {
            self.run_once().await;
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tokio::time::sleep(self.interval) => {}
            }
        }
        info!("service allocation repair stopped");
    }

    /// One repair; a failure is logged and the next interval tries again, as upstream's.
    pub async fn run_once(&self) {
        match self.repair.run_once(&self.services).await {
            Ok(problems) => {
                for p in problems {
                    let recorder = match p.kind {
                        RangeKind::ClusterIps => &self.ip_events,
                        RangeKind::NodePorts => &self.port_events,
                    };
                    recorder.event(&p.service, EventType::Warning, p.reason, p.message);
                }
            }
            Err(e) => warn!(error = %e, "repairing the service range allocations failed"),
        }
    }
}
