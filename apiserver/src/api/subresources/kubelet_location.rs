//! Where a node's kubelet is reached, as upstream's NodeConnectionInfoGetter finds it: the
//! node's address of the first preferred type, and the port the kubelet reports.

use registry::options::ListOptions;
use registry::{Registry, RegistryError};
use serde_json::Value;

/// The address types tried in order: kubeadm's `--kubelet-preferred-address-types`, which
/// kind and kubeadm clusters run kube-apiserver with.
const PREFERRED_ADDRESS_TYPES: [&str; 3] = ["InternalIP", "ExternalIP", "Hostname"];

/// The kubelet port when the node reports none.
const DEFAULT_KUBELET_PORT: u16 = 10250;

/// A kubelet's address.
#[derive(Debug, PartialEq, Eq)]
pub struct KubeletAddress {
    pub host: String,
    pub port: u16,
}

impl KubeletAddress {
    /// The kubelet URL of `path_and_query` (kubelets serve HTTPS).
    pub fn url(&self, path: &str, query: &str) -> String {
        let host = super::dial::join_host_port(&self.host, self.port);
        if query.is_empty() {
            format!("https://{host}{path}")
        } else {
            format!("https://{host}{path}?{query}")
        }
    }
}

/// The kubelet of the node called `node`.
pub async fn of_node(registry: &Registry, node: &str) -> Result<KubeletAddress, RegistryError> {
    let nodes = registry
        .store("", "v1", "nodes")
        .ok_or_else(|| RegistryError::Internal("no nodes resource".to_string()))?;
    let node = nodes.get(None, node, &ListOptions::default()).await?;
    from_node(&node)
}

fn from_node(node: &Value) -> Result<KubeletAddress, RegistryError> {
    let addresses = node["status"]["addresses"].as_array();
    let host = PREFERRED_ADDRESS_TYPES.iter().find_map(|kind| {
        addresses?
            .iter()
            .find(|a| a["type"] == *kind)
            .and_then(|a| a["address"].as_str())
    });
    let Some(host) = host else {
        // Go prints the addresses as its %v of []NodeAddress: `[{Type address} ...]`.
        let known: Vec<String> = addresses
            .into_iter()
            .flatten()
            .map(|a| {
                let kind = a["type"].as_str().unwrap_or_default();
                let address = a["address"].as_str().unwrap_or_default();
                format!("{{{kind} {address}}}")
            })
            .collect();
        return Err(RegistryError::Unclassified(format!(
            "no preferred addresses found; known addresses: [{}]",
            known.join(" ")
        )));
    };
    let port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
        .as_u64()
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)
        .unwrap_or(DEFAULT_KUBELET_PORT);
    Ok(KubeletAddress {
        host: host.to_string(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_preferred_address_and_the_reported_port() {
        let node = json!({"status": {
            "addresses": [
                {"type": "Hostname", "address": "node-0"},
                {"type": "InternalIP", "address": "127.1.0.1"},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        }});
        let kubelet = from_node(&node).expect("an address");
        assert_eq!(
            kubelet,
            KubeletAddress {
                host: "127.1.0.1".into(),
                port: 10250
            }
        );
        assert_eq!(
            kubelet.url("/exec/default/p/c", "command=ls&output=1"),
            "https://127.1.0.1:10250/exec/default/p/c?command=ls&output=1"
        );
        let bare =
            json!({"status": {"addresses": [{"type": "InternalDNS", "address": "n.local"}]}});
        assert_eq!(
            from_node(&bare).map_err(|e| e.to_string()),
            Err("no preferred addresses found; known addresses: [{InternalDNS n.local}]".into())
        );
        let port_less = json!({"status": {"addresses": [{"type": "Hostname", "address": "n"}]}});
        assert_eq!(from_node(&port_less).map(|k| k.port).ok(), Some(10250));
    }
}
