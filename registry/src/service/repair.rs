//! The repair of the range allocations (upstream's ipallocator/controller/repair.go and
//! portallocator/controller/repair.go): the allocations are rebuilt from the Services that
//! exist. A value a Service uses but the record lacks is marked again; one the record holds
//! that no Service uses is freed only after [`REPAIRS_BEFORE_LEAK_CLEANUP`] repairs in a row
//! saw it so, because a Service being created right now has its value taken before it is
//! stored. Duplicates and values outside the range are reported for the Service's owner to
//! fix (upstream cannot move a Service's address either).
//!
//! Each record is read before the Services are listed and written back only if no allocation
//! changed it meanwhile; a lost race leaves the record as it was until the next repair.

use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use storage::Interface;
use tracing::{debug, info, warn};

use super::alloc::{IPS_KEY, PORTS_KEY};
use super::allocation::Allocations;
use super::ranges::ServiceNetwork;
use super::spec;
use crate::error::Result;
use crate::options::ListOptions;
use crate::store::Store;

/// Upstream's numRepairsBeforeLeakCleanup.
pub const REPAIRS_BEFORE_LEAK_CLEANUP: u32 = 3;

/// Which range a problem is about; upstream reports them from two components.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeKind {
    ClusterIps,
    NodePorts,
}

impl RangeKind {
    /// The component upstream's events name.
    pub fn component(self) -> &'static str {
        match self {
            Self::ClusterIps => "ipallocator-repair-controller",
            Self::NodePorts => "portallocator-repair-controller",
        }
    }
}

/// Something a repair found wrong with a Service (a Warning event about it, upstream).
#[derive(Clone, Debug)]
pub struct RepairProblem {
    pub kind: RangeKind,
    pub service: Value,
    pub reason: &'static str,
    pub message: String,
}

pub struct Repair {
    network: ServiceNetwork,
    ips: Allocations,
    ports: Allocations,
    /// Values seen leaked → repairs left before they are freed, per range.
    leaks: Mutex<[HashMap<String, u32>; 2]>,
}

/// A value's standing against the range, for one Service.
enum Check {
    Ok(String),
    Problem(&'static str, String),
}

impl Repair {
    /// Repairs the records in `storage` (the storage root) for `network`.
    pub fn new(storage: Arc<dyn Interface>, network: ServiceNetwork) -> Self {
        Self {
            ips: Allocations::new(storage.clone(), IPS_KEY, network.cluster_ips.to_string()),
            ports: Allocations::new(storage, PORTS_KEY, network.node_ports.to_string()),
            network,
            leaks: Mutex::new([HashMap::new(), HashMap::new()]),
        }
    }

    /// One repair of both ranges from the Services in `services`; what it found wrong.
    pub async fn run_once(&self, services: &Store) -> Result<Vec<RepairProblem>> {
        let ips = self.ips.read().await?;
        let ports = self.ports.read().await?;
        let list = services.list(None, &ListOptions::default()).await?;
        let items = list["items"].as_array().cloned().unwrap_or_default();
        let mut problems = Vec::new();
        for (kind, (stored, revision)) in
            [(RangeKind::ClusterIps, ips), (RangeKind::NodePorts, ports)]
        {
            let mut found = Vec::new();
            let rebuilt = self.rebuild(kind, &items, &stored, &mut found);
            let alloc = match kind {
                RangeKind::ClusterIps => &self.ips,
                RangeKind::NodePorts => &self.ports,
            };
            if rebuilt != stored && !alloc.replace_if_unchanged(revision, rebuilt).await? {
                // A Service written meanwhile may be what looked unallocated: this round's
                // findings about the range are not reported.
                debug!(
                    ?kind,
                    "the range allocation changed during the repair; next time"
                );
                continue;
            }
            problems.extend(found);
        }
        Ok(problems)
    }

    /// The values of `svc` in the range `kind`, each checked.
    fn values(&self, kind: RangeKind, svc: &Value) -> Vec<Check> {
        match kind {
            RangeKind::ClusterIps => {
                let Some(ip) = spec::allocated_ip(svc) else {
                    return Vec::new();
                };
                let check = match ip.parse::<Ipv4Addr>() {
                    Err(_) => Check::Problem(
                        "ClusterIPNotValid",
                        format!("Cluster IP {ip} is not a valid IP; please recreate service"),
                    ),
                    Ok(addr) if self.network.cluster_ips.offset(addr).is_none() => Check::Problem(
                        "ClusterIPOutOfRange",
                        format!(
                            "Cluster IP [IPv4]:{ip} is not within the service CIDR {}; please recreate service",
                            self.network.cluster_ips
                        ),
                    ),
                    Ok(addr) => Check::Ok(addr.to_string()),
                };
                vec![check]
            }
            RangeKind::NodePorts => spec::node_ports(svc)
                .into_iter()
                .map(|port| {
                    if self.network.node_ports.contains(port) {
                        Check::Ok(port.to_string())
                    } else {
                        Check::Problem(
                            "PortOutOfRange",
                            format!(
                                "Port {port} is not within the port range {}; please recreate service",
                                self.network.node_ports
                            ),
                        )
                    }
                })
                .collect(),
        }
    }

    fn rebuild(
        &self,
        kind: RangeKind,
        services: &[Value],
        stored: &BTreeSet<String>,
        problems: &mut Vec<RepairProblem>,
    ) -> BTreeSet<String> {
        let mut leaks = self.leaks.lock().unwrap_or_else(|p| p.into_inner());
        let leaks = &mut leaks[kind as usize];
        let mut rebuilt = BTreeSet::new();
        let mut report = |svc: &Value, reason: &'static str, message: String| {
            warn!(service = %format!("{}/{}", crate::object::namespace(svc), crate::object::name(svc)), reason, "{message}");
            problems.push(RepairProblem {
                kind,
                service: svc.clone(),
                reason,
                message,
            });
        };
        for svc in services {
            for check in self.values(kind, svc) {
                let value = match check {
                    Check::Problem(reason, message) => {
                        report(svc, reason, message);
                        continue;
                    }
                    Check::Ok(value) => value,
                };
                if !rebuilt.insert(value.clone()) {
                    let (reason, message) = match kind {
                        RangeKind::ClusterIps => ("ClusterIPAlreadyAllocated", format!("Cluster IP [IPv4]:{value} was assigned to multiple services; please recreate service")),
                        RangeKind::NodePorts => ("PortAlreadyAllocated", format!("Port {value} was assigned to multiple services; please recreate service")),
                    };
                    report(svc, reason, message);
                    continue;
                }
                if !stored.contains(&value) {
                    let (reason, message) = match kind {
                        RangeKind::ClusterIps => (
                            "ClusterIPNotAllocated",
                            format!("Cluster IP [IPv4]:{value} is not allocated; repairing"),
                        ),
                        RangeKind::NodePorts => (
                            "PortNotAllocated",
                            format!("Port {value} is not allocated; repairing"),
                        ),
                    };
                    report(svc, reason, message);
                }
                // Used, so not leaked.
                leaks.remove(&value);
            }
        }
        let leaked: Vec<String> = stored.difference(&rebuilt).cloned().collect();
        for value in &leaked {
            let left = *leaks
                .entry(value.clone())
                .or_insert(REPAIRS_BEFORE_LEAK_CLEANUP);
            if left > 1 {
                // Kept as if used until it has been seen leaked often enough.
                leaks.insert(value.clone(), left - 1);
                rebuilt.insert(value.clone());
                debug!(?kind, value, "may have leaked: flagged for later clean up");
            } else {
                leaks.remove(value);
                info!(?kind, value, "leaked allocation released");
            }
        }
        // Forget values that are no longer in the record at all.
        leaks.retain(|v, _| stored.contains(v));
        rebuilt
    }
}
