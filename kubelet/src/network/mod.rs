//! The kubelet's network plugin (seed 001's `network.NetworkPlugin`): the sandbox of every
//! pod is set up by the plugin before its containers start (SetUpPod, which yields the pod
//! IP) and torn down after they stopped (TearDownPod). Upstream's kubelet picks the plugin at
//! start-up (`ProbeNetworkPlugins` / `InitNetworkPlugin`); here [`probe_network_plugin`] does,
//! and logs which mode runs: the CNI driver ([`cni`], ADD / DEL through the binaries of a
//! conf dir, each sandbox a real network namespace) where the process may create namespaces
//! and a usable network is configured, else the in-process IPAM ([`host_local`]).

pub mod cidr;
pub mod cni;
pub mod host_local;

use std::net::Ipv4Addr;
use std::path::PathBuf;
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
    /// A CNI plugin's failure, worded as libcni words it.
    #[error("plugin type={plugin:?} failed ({command}): {message}")]
    Plugin {
        plugin: String,
        command: &'static str,
        message: String,
    },
    #[error("failed to create the network namespace {0}")]
    Netns(String),
}

/// What SetUpPod reports (upstream's PodNetworkStatus).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodNetworkStatus {
    pub ip: Ipv4Addr,
}

/// The identity of a sandbox as the plugin sees it (namespace, name, sandbox id and pod UID,
/// which CNI passes as K8S_POD_NAMESPACE, K8S_POD_NAME, CNI_CONTAINERID and K8S_POD_UID).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SandboxRef {
    pub namespace: String,
    pub name: String,
    pub sandbox_id: String,
    pub uid: String,
}

/// Where the CNI driver finds its network and plugins (upstream's NetworkPluginSettings).
#[derive(Clone, Debug)]
pub struct NetworkPluginSettings {
    /// `--cni-conf-dir`.
    pub conf_dir: PathBuf,
    /// `--cni-bin-dir`, split at commas.
    pub bin_dirs: Vec<PathBuf>,
    /// Where sandboxes' network namespaces are pinned (the CRI runtimes' /var/run/netns).
    pub netns_dir: PathBuf,
}

impl Default for NetworkPluginSettings {
    fn default() -> Self {
        Self {
            conf_dir: PathBuf::from("/etc/cni/net.d"),
            bin_dirs: split_dirs("/opt/cni/bin"),
            netns_dir: PathBuf::from("/var/run/netns"),
        }
    }
}

/// upstream's SplitDirs: a comma-separated list of directories, empty entries dropped.
pub fn split_dirs(dirs: &str) -> Vec<PathBuf> {
    dirs.split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect()
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

/// The plugin a node's kubelet uses for pods in `pod_cidr`: CNI where the process is root
/// and may create network namespaces, and the conf dir holds a network whose plugins, and the loopback
/// plugin, are in the bin dirs; the in-process IPAM otherwise. The log says which and why.
pub fn probe_network_plugin(
    node: &str,
    pod_cidr: Ipv4Cidr,
    settings: &NetworkPluginSettings,
) -> Arc<dyn NetworkPlugin> {
    match usable_cni_network(settings) {
        Ok(network) => {
            info!(
                node,
                pod_cidr = %pod_cidr,
                mode = cni::PLUGIN_NAME,
                file = %network.file.display(),
                network = %network.list.name,
                "network plugin: CNI, each pod sandbox in its own network namespace"
            );
            Arc::new(cni::CniNetworkPlugin::new(
                settings.clone(),
                pod_cidr,
                network,
            ))
        }
        Err(reason) => {
            info!(
                node,
                pod_cidr = %pod_cidr,
                mode = host_local::PLUGIN_NAME,
                %reason,
                "network plugin: in-process IPAM"
            );
            Arc::new(HostLocalIpam::new(pod_cidr))
        }
    }
}

fn usable_cni_network(settings: &NetworkPluginSettings) -> Result<cni::conf::CniNetwork, String> {
    cni::netns::can_create()?;
    let network = cni::conf::probe(&settings.conf_dir, &settings.bin_dirs).network?;
    cni::conf::find_in_path("loopback", &settings.bin_dirs)?;
    Ok(network)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_dirs_split_at_commas() {
        assert_eq!(
            split_dirs("/opt/cni/bin,, /usr/lib/cni ,"),
            vec![PathBuf::from("/opt/cni/bin"), PathBuf::from("/usr/lib/cni")]
        );
    }

    #[test]
    fn without_a_network_the_in_process_ipam_runs() {
        let dir = std::env::temp_dir().join("kubelet-no-cni-conf-here");
        let settings = NetworkPluginSettings {
            conf_dir: dir.clone(),
            bin_dirs: vec![dir],
            ..Default::default()
        };
        let plugin = probe_network_plugin("n", "10.1.0.0/24".parse().unwrap(), &settings);
        assert_eq!(plugin.name(), host_local::PLUGIN_NAME);
    }
}
