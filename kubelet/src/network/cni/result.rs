//! What a plugin prints: an ADD result (CNI 0.1/0.2 `ip4.ip`; 0.3, 0.4 and 1.0
//! `interfaces` + `ips[].address`) read for the pod IP, or an error (`code`, `msg`,
//! `details`) read for its message, as libcni's `version.NewResult` and `types.Error` do.

use std::net::Ipv4Addr;

use serde::Deserialize;
use serde_json::Value;

/// A parsed ADD result; `raw` is passed on as the next plugin's `prevResult`.
#[derive(Clone, Debug, PartialEq)]
pub struct CniResult {
    pub raw: Value,
}

#[derive(Deserialize)]
struct Interface {
    #[serde(default)]
    name: String,
    #[serde(default)]
    sandbox: String,
}

#[derive(Deserialize)]
struct IpConfig {
    address: String,
    interface: Option<usize>,
}

impl CniResult {
    pub fn parse(stdout: &[u8]) -> Result<Self, String> {
        let raw: Value = serde_json::from_slice(stdout)
            .map_err(|e| format!("failed to parse the plugin's result: {e}"))?;
        if !raw.is_object() {
            return Err("the plugin's result is not a JSON object".into());
        }
        Ok(Self { raw })
    }

    /// The pod's IPv4 address: the one on `ifname` inside the sandbox when the result says
    /// which interface carries it (as the CRI runtimes pick it), else the first IPv4 one.
    pub fn pod_ip(&self, ifname: &str) -> Option<Ipv4Addr> {
        let v4 = |cidr: &str| {
            let ip = cidr.split('/').next().unwrap_or_default();
            ip.parse::<Ipv4Addr>().ok()
        };
        // 0.1.0 / 0.2.0
        if let Some(ip) = self.raw["ip4"]["ip"].as_str().and_then(v4) {
            return Some(ip);
        }
        let interfaces: Vec<Interface> =
            serde_json::from_value(self.raw["interfaces"].clone()).unwrap_or_default();
        let ips: Vec<IpConfig> =
            serde_json::from_value(self.raw["ips"].clone()).unwrap_or_default();
        let on_ifname = |ip: &&IpConfig| {
            ip.interface
                .and_then(|i| interfaces.get(i))
                .is_some_and(|i| i.name == ifname && !i.sandbox.is_empty())
        };
        ips.iter()
            .filter(on_ifname)
            .chain(ips.iter())
            .find_map(|ip| v4(&ip.address))
    }
}

#[derive(Deserialize)]
struct ErrorJson {
    #[serde(default)]
    code: u32,
    #[serde(default)]
    msg: String,
    #[serde(default)]
    details: String,
}

/// The message of a failed plugin: its error JSON (`msg; details`, as types.Error prints
/// it), or failing that what it wrote to stderr.
pub fn error_message(stdout: &[u8], stderr: &[u8]) -> String {
    match serde_json::from_slice::<ErrorJson>(stdout) {
        Ok(e) if !e.msg.is_empty() || e.code != 0 => {
            let msg = if e.msg.is_empty() {
                format!("plugin error code {}", e.code)
            } else {
                e.msg
            };
            if e.details.is_empty() {
                msg
            } else {
                format!("{msg}; {}", e.details)
            }
        }
        _ => {
            let stderr = String::from_utf8_lossy(stderr);
            let stderr = stderr.trim();
            if stderr.is_empty() {
                "netplugin failed with no error message".to_string()
            } else {
                format!("netplugin failed: {stderr:?}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ip(v: Value) -> Option<Ipv4Addr> {
        CniResult::parse(v.to_string().as_bytes())
            .unwrap()
            .pod_ip("eth0")
    }

    #[test]
    fn results_of_every_version_give_the_pod_ip() {
        // 1.0.0 (and 0.4.0): the bridge plugin's shape, the bridge and host veth first.
        let v1 = json!({"cniVersion": "1.0.0",
            "interfaces": [{"name": "cni0", "mac": "aa:bb:cc:dd:ee:01"},
                           {"name": "veth1234", "mac": "aa:bb:cc:dd:ee:02"},
                           {"name": "eth0", "mac": "aa:bb:cc:dd:ee:03", "sandbox": "/var/run/netns/cni-1"}],
            "ips": [{"address": "fd00::5/64", "interface": 2},
                    {"address": "10.244.0.5/24", "gateway": "10.244.0.1", "interface": 2}],
            "routes": [{"dst": "0.0.0.0/0"}], "dns": {}});
        assert_eq!(ip(v1), Some(Ipv4Addr::new(10, 244, 0, 5)));
        // 0.3.1: ips carry a version.
        let v03 = json!({"cniVersion": "0.3.1",
            "ips": [{"version": "4", "address": "10.1.2.3/16", "gateway": "10.1.0.1"}]});
        assert_eq!(ip(v03), Some(Ipv4Addr::new(10, 1, 2, 3)));
        // 0.2.0
        let v02 = json!({"cniVersion": "0.2.0", "ip4": {"ip": "192.168.9.9/24"}});
        assert_eq!(ip(v02), Some(Ipv4Addr::new(192, 168, 9, 9)));
        // An address on the sandbox's eth0 wins over one listed first elsewhere.
        let picked = json!({"cniVersion": "1.0.0",
            "interfaces": [{"name": "cni0"}, {"name": "eth0", "sandbox": "/ns"}],
            "ips": [{"address": "10.0.0.1/24", "interface": 0},
                    {"address": "10.0.0.7/24", "interface": 1}]});
        assert_eq!(ip(picked), Some(Ipv4Addr::new(10, 0, 0, 7)));
        // The loopback plugin reports no address.
        assert_eq!(
            ip(json!({"cniVersion": "0.3.1", "interfaces": [{"name": "lo"}]})),
            None
        );
        assert!(CniResult::parse(b"[1]").is_err());
        assert!(CniResult::parse(b"not json").is_err());
    }

    #[test]
    fn error_json_gives_the_message_and_details() {
        let out = br#"{"cniVersion": "1.0.0", "code": 11, "msg": "no IP addresses available in range set", "details": "10.244.0.0/24"}"#;
        assert_eq!(
            error_message(out, b""),
            "no IP addresses available in range set; 10.244.0.0/24"
        );
        assert_eq!(error_message(br#"{"code": 7, "msg": "boom"}"#, b""), "boom");
        assert_eq!(error_message(br#"{"code": 4}"#, b""), "plugin error code 4");
        assert_eq!(
            error_message(b"garbage", b"panic: oops\n"),
            "netplugin failed: \"panic: oops\""
        );
        assert_eq!(
            error_message(b"", b""),
            "netplugin failed with no error message"
        );
    }
}
