//! Command-line flags, named as kube-apiserver names them.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "apiserver",
    version,
    about = "A Kubernetes-compatible API server"
)]
pub struct Options {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: IpAddr,

    /// The address the `kubernetes` Service's endpoints name (default: --bind-address, or
    /// 127.0.0.1 when that is unspecified).
    #[arg(long)]
    pub advertise_address: Option<IpAddr>,

    /// Port for plain HTTP, without authentication: served only on a loopback
    /// --bind-address (the trusted local port). 0 disables it.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,

    /// Port for HTTPS with authentication (kube-apiserver's --secure-port). 0 disables it.
    #[arg(long, default_value_t = 6443)]
    pub secure_port: u16,

    /// The serving certificate (PEM, the chain after it). Without it, one signed by the
    /// server's own CA is generated under `<data-dir>/pki` (and kept across restarts).
    #[arg(long, requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,

    /// The serving certificate's private key (PEM).
    #[arg(long, requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,

    /// CA bundle (PEM) that verifies client certificates. Without it, the server's own CA
    /// (`<data-dir>/pki/ca.crt`) does.
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,

    /// Extra names or addresses for the generated serving certificate (repeatable,
    /// comma-separated allowed), as k3s's --tls-san.
    #[arg(long, value_delimiter = ',')]
    pub tls_san: Vec<String>,

    /// Directory of the embedded store (used unless --etcd-servers is given).
    #[arg(long, default_value = "data")]
    pub data_dir: PathBuf,

    /// Comma-separated etcd URLs; when given, etcd is the storage.
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,

    /// Prefix of every key in storage.
    #[arg(long, default_value = "/registry")]
    pub etcd_prefix: String,

    /// Where to write a kubeconfig for this server (default: `<data-dir>/kubeconfig`).
    #[arg(long)]
    pub write_kubeconfig: Option<PathBuf>,

    /// How often to compact storage history (kube-apiserver's default: 5m); 0 disables.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub etcd_compaction_interval: Duration,

    /// How long events are kept after their last write (kube-apiserver's default: 1h).
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    pub event_ttl: Duration,

    /// Encryption at rest (kube-apiserver's --encryption-provider-config): an
    /// apiserver.config.k8s.io/v1 EncryptionConfiguration (YAML or JSON) naming the resources
    /// to encrypt and their providers (aesgcm, aescbc, secretbox, identity); the first
    /// provider writes, all read. An invalid file fails start.
    #[arg(long)]
    pub encryption_provider_config: Option<PathBuf>,

    /// The CIDR Services' cluster IPs are allocated from; its first address is the
    /// `kubernetes` Service's.
    #[arg(long, default_value = "10.96.0.0/12")]
    pub service_cluster_ip_range: registry::service::ServiceCidr,

    /// The ports NodePort and LoadBalancer Services' node ports are allocated from.
    #[arg(long, default_value = "30000-32767")]
    pub service_node_port_range: registry::service::PortRange,

    /// Do not run the in-process controllers (garbage collector, namespace controller), the
    /// scheduler nor the nodes.
    #[arg(long)]
    pub disable_controllers: bool,

    /// The kube-controller-manager controllers to run (its --controllers), a comma list of
    /// upstream's names: `*` is every controller on by default, `name` turns one on, `-name`
    /// turns one off, e.g. `*,-deployment-controller`. An unknown name fails start.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "*",
        allow_hyphen_values = true
    )]
    pub controllers: Vec<String>,

    /// Simulated nodes to register, each with an in-process kubelet that runs the pods bound
    /// to it. 0 runs none (pods bound to a node then wait for a kubelet from elsewhere).
    #[arg(long, default_value_t = 1)]
    pub nodes: usize,

    /// Node `i` is named `<prefix>-<i>`.
    #[arg(long, default_value = "node")]
    pub node_name_prefix: String,

    /// Each node's CPU capacity (a Kubernetes quantity).
    #[arg(long, default_value = "8")]
    pub node_cpu: String,

    /// Each node's memory capacity (a Kubernetes quantity).
    #[arg(long, default_value = "32Gi")]
    pub node_memory: String,

    /// How many pods each node takes.
    #[arg(long, default_value_t = 110)]
    pub node_pods: u32,

    /// Devices each node's simulated DRA driver (`gpu.sim.kube.io`) publishes in a
    /// ResourceSlice, for dynamic resource allocation (`gpu-0`, `gpu-1`, ...). 0 publishes none.
    #[arg(long, default_value_t = 0)]
    pub node_devices: u32,

    /// The pod network: node `i` gets its `i`-th /24 as podCIDR.
    #[arg(long, default_value = "10.244.0.0/16")]
    pub cluster_cidr: String,

    /// The directory in which the kubelets look for CNI network configs (the first valid
    /// .conf / .conflist / .json in lexical order is used).
    #[arg(long, default_value = "/etc/cni/net.d")]
    pub cni_conf_dir: std::path::PathBuf,

    /// A comma-separated list of directories in which the kubelets look for CNI plugin
    /// binaries. CNI runs when the server is root and a usable network is configured; the
    /// in-process IPAM otherwise.
    #[arg(long, default_value = "/opt/cni/bin")]
    pub cni_bin_dir: String,

    /// Run the scheduler (kube-scheduler's job) with the controllers: pending pods are bound to
    /// nodes through pods/binding. `--scheduler=false` leaves binding to another scheduler.
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    pub scheduler: bool,

    /// The scheduler's configuration (kube-scheduler's --config): a
    /// kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration (YAML or JSON). Honoured:
    /// percentageOfNodesToScore (top-level, and the default-scheduler profile's),
    /// parallelism, podInitialBackoffSeconds, podMaxBackoffSeconds; anything else that is
    /// not upstream's default, or an invalid file, fails start.
    #[arg(long, value_name = "FILE")]
    pub scheduler_config: Option<PathBuf>,

    /// Elect a leader among the servers sharing this storage: only the holder of the
    /// kube-system/kube-controller-manager Lease runs the controllers.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,

    /// How long a leader's lease lasts without renewal.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: Duration,

    /// How long the leader keeps trying to renew before it gives up leading.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: Duration,

    /// How often candidates try to acquire, and the leader to renew.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub leader_elect_retry_period: Duration,

    /// The CA certificate (PEM) the kubernetes.io signers issue CertificateSigningRequests
    /// with. Without it, the server's own CA (`<data-dir>/pki/ca.crt`) signs, when the server
    /// has one.
    #[arg(long, requires = "cluster_signing_key_file")]
    pub cluster_signing_cert_file: Option<PathBuf>,

    /// The key (PEM) of --cluster-signing-cert-file.
    #[arg(long, requires = "cluster_signing_cert_file")]
    pub cluster_signing_key_file: Option<PathBuf>,

    /// The longest a signed certificate lasts (a request may ask for less).
    #[arg(long, default_value = "8760h", value_parser = parse_duration)]
    pub cluster_signing_duration: Duration,

    /// The log format: `text` (coloured only on a terminal without NO_COLOR) or `json` (one
    /// object per line, for log collectors). kube-apiserver's --logging-format.
    #[arg(
        long = "logging-format",
        visible_alias = "log-format",
        value_enum,
        default_value_t
    )]
    pub logging_format: crate::logging::LogFormat,

    /// Static bearer tokens (kube-apiserver's --token-auth-file): a CSV file of
    /// `token,user,uid[,"group1,group2"]` lines, read at start; a bad line fails start.
    #[arg(long)]
    pub token_auth_file: Option<PathBuf>,

    /// Requests to the secure port with no credentials act as `system:anonymous` (group
    /// `system:unauthenticated`); `--anonymous-auth=false` answers them 401.
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    pub anonymous_auth: bool,

    /// The private key (PEM: ECDSA P-256 or RSA) service account tokens are signed with.
    /// Without it, one is generated once into `<data-dir>/pki/sa.key` and kept.
    #[arg(long)]
    pub service_account_signing_key_file: Option<PathBuf>,

    /// Files of PEM public keys, private keys or certificates whose keys verify service
    /// account tokens (repeatable); the signing key's when none is given.
    #[arg(long)]
    pub service_account_key_file: Vec<PathBuf>,

    /// The issuer (`iss`) of service account tokens (repeatable): the first issues, every
    /// one is accepted.
    #[arg(long, default_value = "https://kubernetes.default.svc.cluster.local")]
    pub service_account_issuer: Vec<String>,

    /// The audiences of the API: a service account token must name one of them (default:
    /// the first --service-account-issuer).
    #[arg(long, value_delimiter = ',')]
    pub api_audiences: Vec<String>,

    /// The longest expiration a TokenRequest gets (longer requests are shortened, with a
    /// warning); between 1h and 2^32 s. Unset: no cap.
    #[arg(long, value_parser = parse_duration)]
    pub service_account_max_token_expiration: Option<Duration>,

    /// Pod-bound tokens with the ServiceAccount admission's expiration (3607 s) live a
    /// year and are only flagged as stale after it, as upstream's default.
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    pub service_account_extend_token_expiration: bool,

    /// Admission plugins to turn on besides the default ones (comma-separated, upstream's
    /// names, any order: they run in upstream's order). An unknown name fails start.
    #[arg(long, value_delimiter = ',')]
    pub enable_admission_plugins: Vec<String>,

    /// Default admission plugins to turn off (comma-separated, upstream's names), e.g.
    /// `ServiceAccount`: pods then get no account defaulted nor token mounted. An unknown
    /// name fails start.
    #[arg(long, value_delimiter = ',')]
    pub disable_admission_plugins: Vec<String>,

    /// The admission plugins' configuration: an apiserver.config.k8s.io/v1
    /// AdmissionConfiguration whose `plugins[]` entries give a plugin its configuration
    /// inline (`configuration`) or by `path` (relative to this file), e.g. PodSecurity's
    /// PodSecurityConfiguration (defaults and exemptions). A file that does not read fails start.
    #[arg(long)]
    pub admission_control_config_file: Option<PathBuf>,

    /// The authorizers every request is judged by, in order (kube-apiserver's
    /// --authorization-mode): a comma list of RBAC, AlwaysAllow, AlwaysDeny. The first to allow
    /// or deny decides; members of system:masters are always allowed.
    #[arg(long, value_delimiter = ',', default_value = "RBAC")]
    pub authorization_mode: Vec<String>,

    /// API Priority and Fairness: requests are classified by the FlowSchemas, queued fairly
    /// per priority level and answered 429 when their queue is full or they wait too long.
    /// With false, --max-requests-inflight and --max-mutating-requests-inflight are plain
    /// limits.
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true",
          action = clap::ArgAction::Set)]
    pub enable_priority_and_fairness: bool,

    /// With API Priority and Fairness, this and --max-mutating-requests-inflight add up to
    /// the server's seats, shared among the priority levels. Without it, the most
    /// non-mutating requests in flight at once; beyond it requests are answered 429.
    /// Long-running requests (watches, logs, proxy) do not count. 0: no limit.
    #[arg(long, default_value_t = 400)]
    pub max_requests_inflight: usize,

    /// With API Priority and Fairness, see --max-requests-inflight. Without it, the most
    /// mutating requests (create, update, patch, delete) in flight at once; beyond it
    /// requests are answered 429. 0: no limit.
    #[arg(long, default_value_t = 200)]
    pub max_mutating_requests_inflight: usize,

    /// How long a non-long-running request may take before it is answered 504 (a request's
    /// own `?timeout=` may shorten it). 0: no timeout.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub request_timeout: Duration,

    /// Write the audit events of the requests --audit-policy-file selects to this file
    /// (audit.k8s.io/v1 Event JSON, one per line; `-` is standard out).
    #[arg(long)]
    pub audit_log_path: Option<PathBuf>,

    /// The audit policy (an audit.k8s.io/v1 Policy, YAML or JSON): the first rule a request
    /// matches sets the level it is logged at. Without it nothing is audited; an invalid
    /// one fails start.
    #[arg(long)]
    pub audit_policy_file: Option<PathBuf>,

    /// The size in megabytes past which the audit log is rotated (renamed with the time, a
    /// new one started). 0: 100, as upstream's.
    #[arg(long = "audit-log-maxsize", default_value_t = 0)]
    pub audit_log_maxsize: u64,

    /// The most rotated audit logs kept (the oldest go first). 0: all.
    #[arg(long = "audit-log-maxbackup", default_value_t = 0)]
    pub audit_log_maxbackup: usize,

    /// The most days a rotated audit log is kept, by the time in its name. 0: forever.
    #[arg(long = "audit-log-maxage", default_value_t = 0)]
    pub audit_log_maxage: u64,

    /// CA bundle (PEM) of the front proxy: published to aggregated API servers as the CA
    /// that signs the proxy's client certificate. Without it, one is generated
    /// (`<data-dir>/pki/front-proxy-ca.crt`).
    #[arg(long)]
    pub requestheader_client_ca_file: Option<PathBuf>,

    /// The common names aggregated API servers accept from the requestheader CA (published
    /// with it). Empty: `front-proxy-client` for the generated certificate.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,

    /// The client certificate (PEM) the aggregator presents to aggregated API servers.
    #[arg(long, requires = "proxy_client_key_file")]
    pub proxy_client_cert_file: Option<PathBuf>,

    /// The key of --proxy-client-cert-file.
    #[arg(long, requires = "proxy_client_cert_file")]
    pub proxy_client_key_file: Option<PathBuf>,

    /// How often the aggregator checks each APIService's availability and refreshes the
    /// discovery of aggregated servers (upstream: 30 s availability, 1 min discovery).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub apiservice_check_period: Duration,

    /// How often the horizontal pod autoscaler controller looks at each autoscaler.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub horizontal_pod_autoscaler_sync_period: Duration,
}

/// Go-style durations as kube-apiserver flags take them: `300ms`, `90s`, `5m`, `1h`, `0`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .ok_or_else(|| format!("duration {text:?} needs a unit (ms, s, m, h)"))?;
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("invalid duration {text:?}"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(format!("unknown unit {unit:?} in duration {text:?}")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("invalid duration {text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5y").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn defaults_and_etcd_list() {
        let o = Options::parse_from(["apiserver"]);
        assert_eq!(o.port, 8080);
        assert_eq!(o.secure_port, 6443);
        assert!(o.tls_cert_file.is_none() && o.client_ca_file.is_none());
        assert_eq!(o.bind_address.to_string(), "127.0.0.1");
        assert!(o.etcd_servers.is_empty());
        let o = Options::parse_from(["apiserver", "--etcd-servers", "http://a:2379,http://b:2379"]);
        assert_eq!(o.etcd_servers, vec!["http://a:2379", "http://b:2379"]);
        let o = Options::parse_from([
            "apiserver",
            "--tls-san",
            "a.example,10.0.0.1",
            "--tls-san=b",
        ]);
        assert_eq!(o.tls_san, vec!["a.example", "10.0.0.1", "b"]);
        assert!(Options::try_parse_from(["apiserver", "--tls-cert-file", "x.crt"]).is_err());
    }
}
