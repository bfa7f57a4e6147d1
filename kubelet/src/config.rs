//! What the simulated nodes look like and how fast their kubelets act. The defaults are
//! upstream's kubelet defaults; tests shorten the timings.

use std::time::Duration;

use crate::network::NetworkPluginSettings;

/// The nodes to register and the timings of their kubelets.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// How many nodes; 0 runs none.
    pub count: usize,
    /// Node `i` is named `<name_prefix>-<i>`.
    pub name_prefix: String,
    /// Capacity (and allocatable: nothing is reserved) in Kubernetes quantities.
    pub cpu: String,
    pub memory: String,
    pub pods: u32,
    /// Devices each node's simulated DRA driver publishes (0: none).
    pub devices: u32,
    /// Node `i` gets the `i`-th /24 of this IPv4 range as its podCIDR.
    pub cluster_cidr: String,
    /// Reported in nodeInfo.kubeletVersion.
    pub kubelet_version: String,
    /// The CNI conf and bin dirs (every node's kubelet uses the same).
    pub network: NetworkPluginSettings,
    pub timings: KubeletTimings,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            count: 1,
            name_prefix: "node".to_string(),
            cpu: "8".to_string(),
            memory: "32Gi".to_string(),
            pods: 110,
            devices: 0,
            cluster_cidr: "10.244.0.0/16".to_string(),
            kubelet_version: "v1.35.0".to_string(),
            network: NetworkPluginSettings::default(),
            timings: KubeletTimings::default(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct KubeletTimings {
    /// Lease renewal (upstream: a quarter of nodeLeaseDurationSeconds).
    pub lease_renew_interval: Duration,
    /// nodeLeaseDurationSeconds.
    pub lease_duration_seconds: u32,
    /// nodeStatusReportFrequency: the node status is written this often even when unchanged.
    pub node_status_report_frequency: Duration,
    /// CrashLoopBackOff: the first back-off and its ceiling (upstream 10 s and 5 min).
    pub crash_loop_backoff: (Duration, Duration),
    /// How long a container runs before exiting 0 when nothing scripts it and it belongs to
    /// a Job (or is an init container), as kwok's default stages complete such pods.
    pub completing_run: Duration,
    /// A network set-up that failed is tried again after this long.
    pub sandbox_retry: Duration,
}

impl Default for KubeletTimings {
    fn default() -> Self {
        Self {
            lease_renew_interval: Duration::from_secs(10),
            lease_duration_seconds: 40,
            node_status_report_frequency: Duration::from_secs(300),
            crash_loop_backoff: (Duration::from_secs(10), Duration::from_secs(300)),
            completing_run: Duration::from_secs(1),
            sandbox_retry: Duration::from_secs(5),
        }
    }
}
