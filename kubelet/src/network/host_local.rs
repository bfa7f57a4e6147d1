//! The in-process IPAM: what CNI's host-local IPAM plugin does for a bridge network, without
//! a network namespace: each sandbox gets the next free address of the node's podCIDR (the
//! first address is the bridge's gateway, the last the broadcast), released on tear-down.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{Ipv4Cidr, NetworkError, NetworkPlugin, PodNetworkStatus, SandboxRef};

pub const PLUGIN_NAME: &str = "host-local";

struct Allocations {
    by_sandbox: HashMap<String, Ipv4Addr>,
    taken: HashMap<Ipv4Addr, String>,
    /// The offset last handed out: host-local goes round the range, so a released address
    /// is not reused at once.
    last: u64,
}

pub struct HostLocalIpam {
    range: Ipv4Cidr,
    state: Mutex<Allocations>,
}

impl HostLocalIpam {
    pub fn new(range: Ipv4Cidr) -> Self {
        Self {
            range,
            state: Mutex::new(Allocations {
                by_sandbox: HashMap::new(),
                taken: HashMap::new(),
                last: 1,
            }),
        }
    }

    fn allocate(&self, sandbox_id: &str) -> Result<Ipv4Addr, NetworkError> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ip) = state.by_sandbox.get(sandbox_id) {
            return Ok(*ip);
        }
        // Offsets 2 ..= size-2: not the network, the gateway or the broadcast address.
        let first = 2;
        let last = self.range.size().saturating_sub(2);
        let span = last.saturating_sub(first) + 1;
        for step in 1..=span {
            let offset = first + (state.last + step - first) % span;
            let Some(ip) = self.range.nth(offset) else {
                continue;
            };
            if state.taken.contains_key(&ip) {
                continue;
            }
            state.last = offset;
            state.taken.insert(ip, sandbox_id.to_string());
            state.by_sandbox.insert(sandbox_id.to_string(), ip);
            return Ok(ip);
        }
        Err(NetworkError::RangeFull(self.range.to_string()))
    }
}

#[async_trait]
impl NetworkPlugin for HostLocalIpam {
    fn name(&self) -> &str {
        PLUGIN_NAME
    }

    async fn set_up_pod(&self, sandbox: &SandboxRef) -> Result<PodNetworkStatus, NetworkError> {
        self.allocate(&sandbox.sandbox_id)
            .map(|ip| PodNetworkStatus { ip })
    }

    fn adopt(&self, sandbox: &SandboxRef, ip: Ipv4Addr) -> bool {
        if !self.range.contains(ip) {
            return false;
        }
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match state.taken.get(&ip) {
            Some(owner) => owner == &sandbox.sandbox_id,
            None => {
                state.taken.insert(ip, sandbox.sandbox_id.clone());
                state.by_sandbox.insert(sandbox.sandbox_id.clone(), ip);
                true
            }
        }
    }

    async fn tear_down_pod(&self, sandbox: &SandboxRef) -> Result<(), NetworkError> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ip) = state.by_sandbox.remove(&sandbox.sandbox_id) {
            state.taken.remove(&ip);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox(id: &str) -> SandboxRef {
        SandboxRef {
            namespace: "ns".into(),
            name: id.into(),
            sandbox_id: id.into(),
            uid: String::new(),
        }
    }

    #[tokio::test]
    async fn unique_addresses_until_the_range_is_full() {
        let ipam = HostLocalIpam::new("10.1.2.0/29".parse().unwrap());
        let mut seen = Vec::new();
        // A /29 has 8 addresses; network, gateway and broadcast leave 5.
        for i in 0..5 {
            let ip = ipam.set_up_pod(&sandbox(&i.to_string())).await.unwrap().ip;
            assert!(!seen.contains(&ip), "{ip} given twice");
            assert_ne!(ip, "10.1.2.1".parse::<Ipv4Addr>().unwrap());
            seen.push(ip);
        }
        assert_eq!(
            ipam.set_up_pod(&sandbox("0")).await.unwrap().ip,
            seen[0],
            "the same sandbox keeps its address"
        );
        assert!(ipam.set_up_pod(&sandbox("x")).await.is_err());
        ipam.tear_down_pod(&sandbox("2")).await.unwrap();
        assert_eq!(ipam.set_up_pod(&sandbox("y")).await.unwrap().ip, seen[2]);
    }

    #[tokio::test]
    async fn adopted_addresses_are_not_handed_out_again() {
        let ipam = HostLocalIpam::new("10.1.2.0/29".parse().unwrap());
        let kept: Ipv4Addr = "10.1.2.2".parse().unwrap();
        assert!(ipam.adopt(&sandbox("old"), kept));
        assert!(ipam.adopt(&sandbox("old"), kept), "adopting twice is fine");
        assert!(
            !ipam.adopt(&sandbox("other"), kept),
            "taken by another sandbox"
        );
        assert!(!ipam.adopt(&sandbox("far"), "10.9.9.9".parse().unwrap()));
        for i in 0..4 {
            let ip = ipam.set_up_pod(&sandbox(&i.to_string())).await.unwrap().ip;
            assert_ne!(ip, kept);
        }
        assert_eq!(ipam.set_up_pod(&sandbox("old")).await.unwrap().ip, kept);
    }
}
