//! The kubelet's network plugin (seed 001's `network.NetworkPlugin`): the sandbox of every
//! pod is set up by the plugin before its containers start (SetUpPod, which yields the pod
//! IP) and torn down after they stopped (TearDownPod). Upstream's kubelet picks the plugin at
//! start-up (`ProbeNetworkPlugins` / `InitNetworkPlugin`); here [`probe_network_plugin`] does,
//! and logs which mode runs. The in-process IPAM ([`host_local`]) is the only plugin so far;
//! the CNI driver (ADD / DEL through the binaries of a conf dir) is to be another.

pub mod cidr;
pub mod host_local;

use std::net::Ipv4Addr;
use std::sync::Arc;

use async_trait::async_trait;
use thiserror::Error;
use tracing::info;

pub use cidr::Ipv4Cidr;
pub use host_local::HostLocalIpam;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum NetworkError {
    #[error("no IP addresses available in range set: {0}")]
    RangeFull(String),
    #[error("network plugin {plugin} failed: {message}")]
    Plugin { plugin: String, message: String },
}

/// What SetUpPod reports (upstream's PodNetworkStatus).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodNetworkStatus {
    pub ip: Ipv4Addr,
}

/// The identity of a sandbox as the plugin sees it (namespace, name and sandbox id, which
/// CNI passes as K8S_POD_NAMESPACE, K8S_POD_NAME and CNI_CONTAINERID).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SandboxRef {
    pub namespace: String,
    pub name: String,
    pub sandbox_id: String,
}

#[async_trait]
pub trait NetworkPlugin: Send + Sync {
    fn name(&self) -> &str;

    /// Called after the sandbox is created and before any container of the pod starts;
    /// repeating it for the same sandbox gives the same address.
    async fn set_up_pod(&self, sandbox: &SandboxRef) -> Result<PodNetworkStatus, NetworkError>;

    /// A sandbox an earlier kubelet of this node set up (before a restart or a hand-over)
    /// still has `ip`: the plugin takes it over. False when it cannot, and the sandbox is set
    /// up anew.
    /// Not async: a worker adopts before its first await, so that no pod set up meanwhile
    /// is handed an address that is still in use.
    fn adopt(&self, _sandbox: &SandboxRef, _ip: Ipv4Addr) -> bool {
        false
    }

    /// Called before the sandbox is removed; tearing down an unknown sandbox is no error.
    async fn tear_down_pod(&self, sandbox: &SandboxRef) -> Result<(), NetworkError>;
}

/// The plugin a node's kubelet uses for pods in `pod_cidr`.
pub fn probe_network_plugin(node: &str, pod_cidr: Ipv4Cidr) -> Arc<dyn NetworkPlugin> {
    info!(
        node,
        pod_cidr = %pod_cidr,
        mode = host_local::PLUGIN_NAME,
        "network plugin: in-process IPAM (no CNI plugins configured)"
    );
    Arc::new(HostLocalIpam::new(pod_cidr))
}
