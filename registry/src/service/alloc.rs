//! A Service's cluster IP and node ports, taken on create and update and given back when the
//! write fails or the Service goes (upstream's pkg/registry/core/service/storage alloc.go,
//! run from the Store's BeginCreate / BeginUpdate / AfterDelete hooks).

use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;
use std::sync::Arc;

use async_trait::async_trait;
use rand::Rng;
use serde_json::{json, Value};
use storage::Interface;
use tracing::warn;

use super::allocation::Allocations;
use super::ranges::ServiceNetwork;
use super::spec::{self, HEADLESS};
use crate::error::{Cause, Qualified, RegistryError, Result};
use crate::object::{self, Object};
use crate::store::hooks::{Finish, StoreHooks};

/// Upstream's keys of the two range allocations.
pub(super) const IPS_KEY: &str = "/ranges/serviceips";
pub(super) const PORTS_KEY: &str = "/ranges/servicenodeports";

pub struct ServiceAllocator {
    network: ServiceNetwork,
    ips: Arc<Allocations>,
    ports: Arc<Allocations>,
}

/// What one write took or gives up.
#[derive(Default)]
struct Values {
    ips: Vec<String>,
    ports: Vec<String>,
}

impl ServiceAllocator {
    /// Allocates from `network`, recording allocations in `storage` (the storage root).
    pub fn new(storage: Arc<dyn Interface>, network: ServiceNetwork) -> Self {
        Self {
            ips: Arc::new(Allocations::new(
                storage.clone(),
                IPS_KEY,
                network.cluster_ips.to_string(),
            )),
            ports: Arc::new(Allocations::new(
                storage,
                PORTS_KEY,
                network.node_ports.to_string(),
            )),
            network,
        }
    }

    pub fn network(&self) -> &ServiceNetwork {
        &self.network
    }

    /// Gives `values` back (a failed write's, a deleted Service's). A failure here leaks
    /// until the values are released again; it is logged rather than failing the request,
    /// whose own write already happened or already failed.
    async fn give_back(ips: &Allocations, ports: &Allocations, values: Values) {
        if let Err(e) = ips.release(&values.ips).await {
            warn!(error = %e, ips = ?values.ips, "could not release cluster IPs");
        }
        if let Err(e) = ports.release(&values.ports).await {
            warn!(error = %e, ports = ?values.ports, "could not release node ports");
        }
    }

    /// The Finish of a write: on failure `taken` goes back; on success `freed` does.
    fn finisher(&self, taken: Values, freed: Values, dry_run: bool) -> Finish {
        let (ips, ports) = (self.ips.clone(), self.ports.clone());
        Box::new(move |success| {
            Box::pin(async move {
                if dry_run {
                    return;
                }
                let values = if success { freed } else { taken };
                Self::give_back(&ips, &ports, values).await;
            })
        })
    }

    /// Gives up `taken` after a refused allocation, then returns the refusal.
    async fn refuse(&self, taken: Values, dry_run: bool, err: RegistryError) -> RegistryError {
        if !dry_run {
            Self::give_back(&self.ips, &self.ports, taken).await;
        }
        err
    }

    /// A cluster IP for `svc`: the requested one if free, a random one if none was asked
    /// for, none for a headless Service.
    async fn allocate_ip(&self, svc: &mut Object, dry_run: bool, taken: &mut Values) -> Result<()> {
        let requested = spec::cluster_ip(svc).to_string();
        if requested == HEADLESS {
            spec::set_cluster_ip(svc, HEADLESS);
            return Ok(());
        }
        let cidr = self.network.cluster_ips;
        if requested.is_empty() {
            let pick = move |used: &BTreeSet<String>| {
                pick_free(cidr.size(), cidr.static_band(), |off| {
                    !used.contains(&cidr.ip(off).to_string())
                })
                .map(|off| cidr.ip(off).to_string())
            };
            let picked = if dry_run {
                pick(&self.ips.snapshot().await?)
            } else {
                self.ips.allocate_next(pick).await?
            };
            let Some(ip) = picked else {
                return Err(RegistryError::Internal(
                    "failed to allocate a serviceIP: range is full".into(),
                ));
            };
            spec::set_cluster_ip(svc, &ip);
            if !dry_run {
                taken.ips.push(ip);
            }
            return Ok(());
        }
        let field = "spec.clusterIPs";
        let shown = format!("[]string{{\"{requested}\"}}");
        let Ok(ip) = requested.parse::<Ipv4Addr>() else {
            return Err(invalid(
                svc,
                Cause::invalid(
                    "spec.clusterIPs[0]",
                    format!("\"{requested}\""),
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                ),
            ));
        };
        let failed = |why: String| {
            Cause::invalid(field, &shown, &format!("failed to allocate IP {ip}: {why}"))
        };
        if cidr.offset(ip).is_none() {
            return Err(invalid(
                svc,
                failed(format!(
                    "the provided IP ({ip}) is not in the valid range. The range of valid IPs is {cidr}"
                )),
            ));
        }
        let ip_text = ip.to_string();
        let free = if dry_run {
            !self.ips.snapshot().await?.contains(&ip_text)
        } else {
            self.ips.allocate(&ip_text).await?
        };
        if !free {
            return Err(invalid(
                svc,
                failed("provided IP is already allocated".into()),
            ));
        }
        spec::set_cluster_ip(svc, &ip_text);
        if !dry_run {
            taken.ips.push(ip_text);
        }
        Ok(())
    }

    /// Node ports for every port of `svc` that has none, and the requested ones it does not
    /// hold yet (`held`: those its stored version has). Ports sharing a port number (TCP and
    /// UDP of one service port) share a node port, as upstream gives them.
    async fn allocate_node_ports(
        &self,
        svc: &mut Object,
        held: &BTreeSet<i64>,
        dry_run: bool,
        taken: &mut Values,
    ) -> Result<()> {
        let range = self.network.node_ports;
        let mut ports = spec::ports(svc).to_vec();
        let mut by_port: HashMap<Option<i64>, i64> = ports
            .iter()
            .filter_map(|p| Some((p.get("port").and_then(Value::as_i64), spec::node_port(p)?)))
            .collect();
        let used = if dry_run {
            Some(self.ports.snapshot().await?)
        } else {
            None
        };
        let mut granted: BTreeSet<i64> = held.clone();
        for (i, port) in ports.iter_mut().enumerate() {
            let number = port.get("port").and_then(Value::as_i64);
            if let Some(requested) = spec::node_port(port) {
                if granted.contains(&requested) {
                    continue;
                }
                let field = format!("spec.ports[{i}].nodePort");
                if !range.contains(requested) {
                    let why = format!("provided port is not in the valid range. The range of valid ports is {range}");
                    return Err(invalid(svc, Cause::invalid(&field, requested, &why)));
                }
                let text = requested.to_string();
                let free = match &used {
                    Some(used) => !used.contains(&text),
                    None => self.ports.allocate(&text).await?,
                };
                if !free {
                    let why = "provided port is already allocated";
                    return Err(invalid(svc, Cause::invalid(&field, requested, why)));
                }
                granted.insert(requested);
                if used.is_none() {
                    taken.ports.push(text);
                }
                continue;
            }
            let shared = by_port.get(&number).copied();
            let assigned = match shared {
                Some(n) => n,
                None => {
                    let pick = move |used: &BTreeSet<String>| {
                        pick_free(range.size(), range.static_band(), |off| {
                            !used.contains(&range.port(off).to_string())
                        })
                        .map(|off| range.port(off).to_string())
                    };
                    let picked = match &used {
                        Some(used) => pick(used),
                        None => self.ports.allocate_next(pick).await?,
                    };
                    let Some(text) = picked else {
                        return Err(RegistryError::Internal(
                            "failed to allocate a nodePort: range is full".into(),
                        ));
                    };
                    let n: i64 = text.parse().unwrap_or_default();
                    if used.is_none() {
                        taken.ports.push(text);
                    }
                    granted.insert(n);
                    by_port.insert(number, n);
                    n
                }
            };
            if let Some(map) = port.as_object_mut() {
                map.insert("nodePort".into(), json!(assigned));
            }
        }
        if let Some(slot) = spec::ports_mut(svc) {
            *slot = ports;
        }
        Ok(())
    }
}

#[async_trait]
impl StoreHooks for ServiceAllocator {
    async fn begin_create(&self, svc: &mut Object, dry_run: bool) -> Result<Finish> {
        let mut taken = Values::default();
        let mut result = Ok(());
        if spec::needs_cluster_ip(svc) {
            result = self.allocate_ip(svc, dry_run, &mut taken).await;
        }
        if result.is_ok() && spec::needs_node_ports(svc) {
            result = self
                .allocate_node_ports(svc, &BTreeSet::new(), dry_run, &mut taken)
                .await;
        }
        match result {
            Ok(()) => Ok(self.finisher(taken, Values::default(), dry_run)),
            Err(e) => Err(self.refuse(taken, dry_run, e).await),
        }
    }

    async fn begin_update(&self, new: &mut Object, old: &Object, dry_run: bool) -> Result<Finish> {
        spec::patch_allocated_values(new, old);
        spec::drop_type_dependent_fields(new, old);
        let mut taken = Values::default();
        let mut result = Ok(());
        // A cluster IP never changes once set (validation refuses it); one is allocated only
        // when the Service had none (ExternalName before).
        if spec::needs_cluster_ip(new) && !spec::needs_cluster_ip(old) {
            result = self.allocate_ip(new, dry_run, &mut taken).await;
        }
        if result.is_ok() && spec::needs_node_ports(new) {
            let held = if spec::needs_node_ports(old) {
                spec::node_ports(old)
            } else {
                BTreeSet::new()
            };
            result = self
                .allocate_node_ports(new, &held, dry_run, &mut taken)
                .await;
        }
        if let Err(e) = result {
            return Err(self.refuse(taken, dry_run, e).await);
        }
        let mut freed = Values::default();
        if let Some(ip) = spec::allocated_ip(old) {
            if spec::allocated_ip(new) != Some(ip) {
                freed.ips.push(ip.to_string());
            }
        }
        let kept = spec::node_ports(new);
        freed.ports = spec::node_ports(old)
            .difference(&kept)
            .map(i64::to_string)
            .collect();
        Ok(self.finisher(taken, freed, dry_run))
    }

    async fn after_delete(&self, svc: &Object) {
        let values = Values {
            ips: spec::allocated_ip(svc)
                .map(str::to_string)
                .into_iter()
                .collect(),
            ports: spec::node_ports(svc).iter().map(i64::to_string).collect(),
        };
        Self::give_back(&self.ips, &self.ports, values).await;
    }
}

/// A free offset of a range of `size`: a random one above the static band while there is
/// room, else one in the band.
fn pick_free(size: u64, band: u64, free: impl Fn(u64) -> bool) -> Option<u64> {
    let mut rng = rand::rng();
    for (lo, hi) in [(band, size), (0, band.min(size))] {
        if lo >= hi {
            continue;
        }
        let span = hi - lo;
        let start = rng.random_range(0..span);
        if let Some(off) = (0..span)
            .map(|i| lo + (start + i) % span)
            .find(|o| free(*o))
        {
            return Some(off);
        }
    }
    None
}

fn invalid(svc: &Object, cause: Cause) -> RegistryError {
    RegistryError::invalid(
        &Qualified::new("", "Service"),
        object::name(svc),
        vec![cause],
    )
}

#[cfg(test)]
mod tests {
    use super::pick_free;

    #[test]
    fn draws_prefer_the_dynamic_band() {
        for _ in 0..50 {
            let off = pick_free(100, 16, |_| true).unwrap_or_default();
            assert!((16..100).contains(&off));
        }
        assert_eq!(pick_free(100, 16, |o| o == 3), Some(3));
        assert_eq!(pick_free(100, 16, |_| false), None);
    }
}
