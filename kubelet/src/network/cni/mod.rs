//! Seed 001's `cniNetworkPlugin`: the network of the conf dir (re-read every few seconds, so
//! a changed config is picked up as upstream's syncNetworkConfig does) and the loopback
//! network; SetUpPod creates the sandbox's network namespace and runs ADD for the loopback
//! then the default network, plugin by plugin, each given the previous result
//! (`AddNetworkList`); TearDownPod runs DEL in reverse order with the cached result
//! (`DelNetworkList`), then removes the namespace.

pub mod conf;
pub mod invoke;
pub mod netns;
pub mod result;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{json, Value};
use tracing::{debug, info, warn};

use self::conf::{find_in_path, CniNetwork, NetworkConfigList};
use self::invoke::{exec_plugin, Invocation};
use self::result::CniResult;
use super::{
    Ipv4Cidr, NetworkError, NetworkPlugin, NetworkPluginSettings, PodNetworkStatus, SandboxRef,
};

pub const PLUGIN_NAME: &str = "cni";
/// upstream's network.DefaultInterfaceName.
const IFNAME: &str = "eth0";
/// upstream's network.CNITimeoutSec.
const CNI_TIMEOUT: Duration = Duration::from_secs(220);
/// upstream's defaultSyncConfigPeriod.
const SYNC_CONFIG_PERIOD: Duration = Duration::from_secs(5);

/// A sandbox whose network is up: what DEL needs.
struct Attachment {
    netns: PathBuf,
    ip: std::net::Ipv4Addr,
    result: Option<CniResult>,
}

pub struct CniNetworkPlugin {
    settings: NetworkPluginSettings,
    pod_cidr: Ipv4Cidr,
    lo_network: NetworkConfigList,
    default_network: Mutex<(CniNetwork, Instant)>,
    attached: Mutex<HashMap<String, Attachment>>,
}

impl CniNetworkPlugin {
    pub fn new(settings: NetworkPluginSettings, pod_cidr: Ipv4Cidr, network: CniNetwork) -> Self {
        Self {
            settings,
            pod_cidr,
            lo_network: NetworkConfigList::loopback(),
            default_network: Mutex::new((network, Instant::now())),
            attached: Mutex::new(HashMap::new()),
        }
    }

    /// The default network, re-read from the conf dir when the last read is old; a conf
    /// dir that has no usable network any more keeps the last one.
    fn default_network(&self) -> NetworkConfigList {
        let mut current = self
            .default_network
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if current.1.elapsed() >= SYNC_CONFIG_PERIOD {
            current.1 = Instant::now();
            match conf::probe(&self.settings.conf_dir, &self.settings.bin_dirs).network {
                Ok(network) => {
                    if network.list != current.0.list {
                        info!(file = %network.file.display(), network = %network.list.name, "CNI config changed");
                    }
                    current.0 = network;
                }
                Err(reason) => warn!(%reason, "unable to update CNI config"),
            }
        }
        current.0.list.clone()
    }

    fn attached(&self) -> std::sync::MutexGuard<'_, HashMap<String, Attachment>> {
        self.attached.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// buildOneConfig: the plugin's config with the list's name and version, the previous
    /// result, and the runtime config of the capabilities it declares (the node's podCIDR
    /// as `ipRanges`, as the kubelet passes it).
    fn one_config(
        &self,
        list: &NetworkConfigList,
        index: usize,
        prev: Option<&CniResult>,
    ) -> Vec<u8> {
        let mut conf = list.plugins[index].clone();
        conf.insert("name".into(), json!(list.name));
        conf.insert("cniVersion".into(), json!(list.cni_version));
        if let Some(prev) = prev {
            conf.insert("prevResult".into(), prev.raw.clone());
        }
        let ip_ranges = conf.get("capabilities").and_then(|c| c.get("ipRanges"));
        if ip_ranges == Some(&json!(true)) {
            conf.insert(
                "runtimeConfig".into(),
                json!({"ipRanges": [[{"subnet": self.pod_cidr.to_string()}]]}),
            );
        }
        serde_json::to_vec(&Value::Object(conf)).unwrap_or_default()
    }

    /// AddNetworkList: ADD through every plugin of `list`; the last result.
    async fn add_network_list(
        &self,
        list: &NetworkConfigList,
        sandbox: &SandboxRef,
        netns: &std::path::Path,
    ) -> Result<Option<CniResult>, NetworkError> {
        let mut prev: Option<CniResult> = None;
        for i in 0..list.plugins.len() {
            let stdout = self
                .exec(list, i, prev.as_ref(), "ADD", sandbox, netns)
                .await?;
            let failed = |message| NetworkError::Plugin {
                plugin: list.plugin_type(i).to_string(),
                command: "add",
                message,
            };
            prev = Some(CniResult::parse(&stdout).map_err(failed)?);
        }
        Ok(prev)
    }

    /// DelNetworkList: DEL through the plugins of `list` in reverse order; the cached result
    /// goes along from spec 0.4.0 on. An already deleted network is no error.
    async fn del_network_list(
        &self,
        list: &NetworkConfigList,
        sandbox: &SandboxRef,
        netns: &std::path::Path,
        cached: Option<&CniResult>,
    ) -> Result<(), NetworkError> {
        let cached = cached.filter(|_| at_least(&list.cni_version, (0, 4, 0)));
        for i in (0..list.plugins.len()).rev() {
            match self.exec(list, i, cached, "DEL", sandbox, netns).await {
                Err(NetworkError::Plugin { message, .. })
                    if message.contains("no such file or directory") =>
                {
                    debug!(%message, "network already deleted");
                }
                other => {
                    other?;
                }
            }
        }
        Ok(())
    }

    async fn exec(
        &self,
        list: &NetworkConfigList,
        index: usize,
        prev: Option<&CniResult>,
        command: &'static str,
        sandbox: &SandboxRef,
        netns: &std::path::Path,
    ) -> Result<Vec<u8>, NetworkError> {
        let plugin = list.plugin_type(index);
        let failed = |message| NetworkError::Plugin {
            plugin: plugin.to_string(),
            command: if command == "ADD" { "add" } else { "delete" },
            message,
        };
        let binary = find_in_path(plugin, &self.settings.bin_dirs).map_err(failed)?;
        let args = cni_args(sandbox);
        let call = Invocation {
            command,
            container_id: &sandbox.sandbox_id,
            netns,
            ifname: IFNAME,
            args: &args,
            bin_dirs: &self.settings.bin_dirs,
        };
        let conf = self.one_config(list, index, prev);
        exec_plugin(&binary, &conf, &call, CNI_TIMEOUT)
            .await
            .map_err(failed)
    }

    /// Everything ADD may have left behind: DEL of both networks and the namespace.
    async fn clean_up(
        &self,
        network: &NetworkConfigList,
        sandbox: &SandboxRef,
        netns: &std::path::Path,
        cached: Option<&CniResult>,
    ) -> Result<(), NetworkError> {
        if let Err(e) = self
            .del_network_list(&self.lo_network, sandbox, netns, None)
            .await
        {
            warn!(error = %e, "CNI failed to delete the loopback network");
        }
        let deleted = self.del_network_list(network, sandbox, netns, cached).await;
        if let Err(e) = netns::remove(netns.to_path_buf()).await {
            warn!(netns = %netns.display(), error = %e, "removing the network namespace failed");
        }
        deleted
    }
}

/// CNI_ARGS as upstream's kubelet builds them (IgnoreUnknown so plugins that do not know the
/// K8S_ keys accept them).
fn cni_args(sandbox: &SandboxRef) -> String {
    let mut args = format!(
        "IgnoreUnknown=1;K8S_POD_NAMESPACE={};K8S_POD_NAME={};K8S_POD_INFRA_CONTAINER_ID={}",
        sandbox.namespace, sandbox.name, sandbox.sandbox_id
    );
    if !sandbox.uid.is_empty() {
        args.push_str(&format!(";K8S_POD_UID={}", sandbox.uid));
    }
    args
}

/// Whether the spec version `version` ("0.4.0") is at least `min`.
fn at_least(version: &str, min: (u32, u32, u32)) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let v = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    v >= min
}

#[async_trait]
impl NetworkPlugin for CniNetworkPlugin {
    fn name(&self) -> &str {
        PLUGIN_NAME
    }

    async fn set_up_pod(&self, sandbox: &SandboxRef) -> Result<PodNetworkStatus, NetworkError> {
        if let Some(a) = self.attached().get(&sandbox.sandbox_id) {
            return Ok(PodNetworkStatus { ip: a.ip });
        }
        let network = self.default_network();
        let netns = netns::path_for(&self.settings.netns_dir, &sandbox.sandbox_id);
        netns::create(netns.clone())
            .await
            .map_err(|e| NetworkError::Netns(format!("{}: {e}", netns.display())))?;
        let added = async {
            self.add_network_list(&self.lo_network, sandbox, &netns)
                .await?;
            let result = self.add_network_list(&network, sandbox, &netns).await?;
            let ip = result
                .as_ref()
                .and_then(|r| r.pod_ip(IFNAME))
                .ok_or_else(|| NetworkError::Plugin {
                    plugin: network.plugin_type(network.plugins.len() - 1).to_string(),
                    command: "add",
                    message: "the result has no IPv4 address for the pod".into(),
                })?;
            Ok::<_, NetworkError>((ip, result))
        }
        .await;
        match added {
            Ok((ip, result)) => {
                debug!(sandbox = %sandbox.sandbox_id, %ip, netns = %netns.display(), network = %network.name, "pod network set up");
                self.attached()
                    .insert(sandbox.sandbox_id.clone(), Attachment { netns, ip, result });
                Ok(PodNetworkStatus { ip })
            }
            Err(e) => {
                // As the runtime does when RunPodSandbox fails: undo what ADD did, so the
                // next attempt starts clean and nothing leaks.
                if let Err(del) = self.clean_up(&network, sandbox, &netns, None).await {
                    warn!(error = %del, "cleaning up after a failed ADD failed");
                }
                Err(e)
            }
        }
    }

    /// A sandbox whose network namespace is still there (the kubelet before this one set it
    /// up on this host) keeps it; DEL then runs without a cached result.
    fn adopt(&self, sandbox: &SandboxRef, ip: std::net::Ipv4Addr) -> bool {
        let netns = netns::path_for(&self.settings.netns_dir, &sandbox.sandbox_id);
        if !netns.exists() {
            return false;
        }
        self.attached().insert(
            sandbox.sandbox_id.clone(),
            Attachment {
                netns,
                ip,
                result: None,
            },
        );
        true
    }

    async fn tear_down_pod(&self, sandbox: &SandboxRef) -> Result<(), NetworkError> {
        let attached = self.attached().remove(&sandbox.sandbox_id);
        let (netns, cached) = match attached {
            Some(a) => (a.netns, a.result),
            None => {
                let netns = netns::path_for(&self.settings.netns_dir, &sandbox.sandbox_id);
                if !netns.exists() {
                    return Ok(());
                }
                (netns, None)
            }
        };
        let network = self.default_network();
        self.clean_up(&network, sandbox, &netns, cached.as_ref())
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin() -> CniNetworkPlugin {
        let list = NetworkConfigList::from_list_bytes(
            br#"{"cniVersion": "1.0.0", "name": "pods", "plugins": [
                {"type": "bridge", "ipam": {"type": "host-local"}},
                {"type": "portmap", "capabilities": {"portMappings": true}},
                {"type": "host-local-ranges", "capabilities": {"ipRanges": true}}]}"#,
        )
        .unwrap();
        CniNetworkPlugin::new(
            NetworkPluginSettings::default(),
            "10.244.3.0/24".parse().unwrap(),
            CniNetwork {
                file: "x.conflist".into(),
                list,
            },
        )
    }

    #[test]
    fn one_config_carries_name_version_prev_result_and_ip_ranges() {
        let p = plugin();
        let list = p.default_network();
        let prev = CniResult {
            raw: json!({"cniVersion": "1.0.0", "ips": [{"address": "10.244.3.2/24"}]}),
        };
        let conf: Value = serde_json::from_slice(&p.one_config(&list, 1, Some(&prev))).unwrap();
        assert_eq!(conf["name"], "pods");
        assert_eq!(conf["cniVersion"], "1.0.0");
        assert_eq!(conf["type"], "portmap");
        assert_eq!(conf["prevResult"], prev.raw);
        assert!(conf.get("runtimeConfig").is_none());
        let conf: Value = serde_json::from_slice(&p.one_config(&list, 2, None)).unwrap();
        assert_eq!(
            conf["runtimeConfig"]["ipRanges"][0][0]["subnet"],
            "10.244.3.0/24"
        );
        assert!(conf.get("prevResult").is_none());
    }

    #[test]
    fn cni_args_name_the_pod() {
        let mut sandbox = SandboxRef {
            namespace: "default".into(),
            name: "web".into(),
            sandbox_id: "abc".into(),
            uid: "u-1".into(),
        };
        assert_eq!(
            cni_args(&sandbox),
            "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u-1"
        );
        sandbox.uid.clear();
        assert!(!cni_args(&sandbox).contains("K8S_POD_UID"));
        assert!(at_least("0.4.0", (0, 4, 0)) && at_least("1.0.0", (0, 4, 0)));
        assert!(!at_least("0.3.1", (0, 4, 0)));
    }
}
