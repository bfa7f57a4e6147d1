//! services' `proxy`: a request to one of the Service's ready endpoints, through the server
//! (upstream's service ProxyREST and ResourceLocation). The name may carry a scheme and a
//! port: `web`, `web:http` (a port's name), `web:80` (a port's number), `https:web:443`.

use async_trait::async_trait;
use axum::response::Response;
use registry::options::ListOptions;
use registry::{Registry, RegistryError};
use serde_json::Value;

use super::reverse_proxy::{self, Location};
use super::{Call, Handler};

pub(super) struct ServiceProxy;

#[async_trait]
impl Handler for ServiceProxy {
    async fn serve(&self, call: Call<'_>) -> Result<Response, RegistryError> {
        let id = call.name;
        let Some((scheme, name, port)) = reverse_proxy::split_scheme_name_port(id) else {
            return Err(RegistryError::BadRequest(format!(
                "invalid service request {}",
                registry::validation::quote(id)
            )));
        };
        let registry = &call.req.registry;
        let namespace = call.namespace;
        let mut port_name = port.to_string();
        // A port number names the Service port it is the number of.
        if let Ok(number) = port.parse::<i64>() {
            let service = call
                .store
                .get(namespace, name, &ListOptions::default())
                .await?;
            port_name = service["spec"]["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["port"].as_i64() == Some(number))
                .map(|p| p["name"].as_str().unwrap_or_default().to_string())
                .ok_or_else(|| {
                    RegistryError::ServiceUnavailable(format!(
                        "no service port {number} found for service {}",
                        registry::validation::quote(name)
                    ))
                })?;
        }
        let endpoints = store(registry, "endpoints")?
            .get(namespace, name, &ListOptions::default())
            .await?;
        let subsets = endpoints["subsets"].as_array().cloned().unwrap_or_default();
        if subsets.is_empty() {
            return Err(no_endpoints(name));
        }
        let (host, port) = ready_address(registry, namespace, &subsets, &port_name)
            .await
            .ok_or_else(|| no_endpoints(id))?;
        let location = Location {
            https: scheme == "https",
            host,
            port: Some(port),
            path: reverse_proxy::backend_path(
                call.req.info.proxy_path.as_deref().unwrap_or_default(),
            ),
        };
        reverse_proxy::serve(call.req, location).await
    }
}

fn store(
    registry: &Registry,
    plural: &str,
) -> Result<std::sync::Arc<registry::Store>, RegistryError> {
    registry
        .store("", "v1", plural)
        .ok_or_else(|| RegistryError::Internal(format!("no {plural} resource")))
}

fn no_endpoints(name: &str) -> RegistryError {
    RegistryError::ServiceUnavailable(format!(
        "no endpoints available for service {}",
        registry::validation::quote(name)
    ))
}

/// A ready address of a subset serving `port_name`, and that port: subsets and addresses
/// are tried from a varying start, as upstream picks at random, and an address counts only
/// while its target pod exists in the namespace with that IP (upstream's isValidAddress).
async fn ready_address(
    registry: &Registry,
    namespace: Option<&str>,
    subsets: &[Value],
    port_name: &str,
) -> Option<(String, u16)> {
    let pods = store(registry, "pods").ok()?;
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as usize)
        .unwrap_or_default();
    for i in 0..subsets.len() {
        let subset = &subsets[(seed + i) % subsets.len()];
        let addresses = subset["addresses"].as_array().cloned().unwrap_or_default();
        if addresses.is_empty() {
            continue;
        }
        let ports = subset["ports"].as_array().into_iter().flatten();
        for port in ports.filter(|p| p["name"].as_str().unwrap_or_default() == port_name) {
            let Some(number) = port["port"].as_u64().and_then(|p| u16::try_from(p).ok()) else {
                continue;
            };
            for j in 0..addresses.len() {
                let address = &addresses[(seed + j) % addresses.len()];
                if valid_address(&pods, namespace, address).await {
                    let ip = address["ip"].as_str().unwrap_or_default().to_string();
                    return Some((ip, number));
                }
            }
        }
    }
    None
}

async fn valid_address(pods: &registry::Store, namespace: Option<&str>, address: &Value) -> bool {
    let target = &address["targetRef"];
    let (Some(pod_name), Some(target_ns)) = (target["name"].as_str(), target["namespace"].as_str())
    else {
        return false;
    };
    if Some(target_ns) != namespace {
        return false;
    }
    let Ok(pod) = pods.get(namespace, pod_name, &ListOptions::default()).await else {
        return false;
    };
    let ip = &address["ip"];
    pod["status"]["podIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|p| p["ip"] == *ip)
}
