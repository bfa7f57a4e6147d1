//! pods' `proxy`: a request to one of the pod's ports, through the server, by the pod's IP
//! (upstream's pod ProxyREST and ResourceLocation). The name may carry a scheme and a port:
//! `web`, `web:8080`, `https:web:8443`; without a port, the first port a container declares.

use std::net::IpAddr;

use async_trait::async_trait;
use axum::response::Response;
use registry::RegistryError;
use serde_json::Value;

use super::reverse_proxy::{self, Location};
use super::{Call, Handler};

pub(super) struct PodProxy;

#[async_trait]
impl Handler for PodProxy {
    async fn serve(&self, call: Call<'_>) -> Result<Response, RegistryError> {
        let Some((scheme, name, port)) = reverse_proxy::split_scheme_name_port(call.name) else {
            return Err(RegistryError::BadRequest(format!(
                "invalid pod request {}",
                registry::validation::quote(call.name)
            )));
        };
        let pod = call
            .store
            .get(call.namespace, name, &Default::default())
            .await?;
        let port = match port {
            "" => first_container_port(&pod),
            port => Some(port.to_string()),
        };
        let ip = pod["status"]["podIPs"][0]["ip"]
            .as_str()
            .and_then(|ip| ip.parse::<IpAddr>().ok())
            .filter(is_global_unicast)
            .ok_or_else(|| RegistryError::BadRequest("address not allowed".to_string()))?;
        // A port that is no number is no port Go resolves for a pod (it knows only /etc/services).
        let port = match port {
            None => None,
            Some(port) => Some(port.parse::<u16>().map_err(|_| {
                RegistryError::ServiceUnavailable(format!(
                    "error trying to reach service: dial tcp: address tcp/{port}: unknown port"
                ))
            })?),
        };
        let location = Location {
            https: scheme == "https",
            host: ip.to_string(),
            port,
            path: reverse_proxy::backend_path(
                call.req.info.proxy_path.as_deref().unwrap_or_default(),
            ),
        };
        reverse_proxy::serve(call.req, location).await
    }
}

/// The first port any container declares, in container order.
fn first_container_port(pod: &Value) -> Option<String> {
    pod["spec"]["containers"]
        .as_array()?
        .iter()
        .find_map(|c| c["ports"][0]["containerPort"].as_i64())
        .map(|p| p.to_string())
}

/// Go's net.IP.IsGlobalUnicast: not unspecified, loopback, multicast, link-local or the
/// IPv4 broadcast address.
fn is_global_unicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_multicast()
                || v4.is_link_local()
                || v4.is_broadcast())
        }
        IpAddr::V6(v6) => {
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || (v6.segments()[0] & 0xffc0) == 0xfe80)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_declared_port_and_global_unicast_addresses() {
        let pod = json!({"spec": {"containers": [
            {"name": "a"},
            {"name": "b", "ports": [{"containerPort": 8080}, {"containerPort": 9090}]},
        ]}});
        assert_eq!(first_container_port(&pod).as_deref(), Some("8080"));
        assert_eq!(first_container_port(&json!({"spec": {}})), None);
        for ok in ["10.244.0.5", "192.0.2.1", "fd00::5"] {
            assert!(is_global_unicast(&ok.parse().expect("ip")), "{ok}");
        }
        for refused in [
            "127.0.0.1",
            "0.0.0.0",
            "169.254.1.1",
            "224.0.0.1",
            "::1",
            "fe80::1",
        ] {
            assert!(
                !is_global_unicast(&refused.parse().expect("ip")),
                "{refused}"
            );
        }
    }
}
