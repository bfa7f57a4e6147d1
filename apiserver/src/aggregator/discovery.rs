//! The discovery of aggregated servers (upstream's discoveryManager): each remote
//! APIService's server is asked for its aggregated document (`/apis`, as
//! `apidiscovery.k8s.io/v2` APIGroupDiscoveryList), falling back to its APIResourceList at
//! `/apis/<group>/<version>`; the result is kept, and merged into this server's discovery.
//! A server that fails (or an APIService not Available) leaves its group-version listed with
//! what was last known, marked `Stale`, as upstream does, so clients report that one
//! group-version and carry on with the rest.

use std::collections::BTreeMap;
use std::sync::RwLock;
use std::time::Duration;

use registry::auth::UserInfo;
use serde_json::{json, Value};
use tracing::debug;

use super::proxy::{self, Fetched};
use super::tls::Trust;
use super::{Aggregator, ApiService};
use crate::discovery::external::{self, ExternalVersion};

/// Upstream's discovery fetch timeout.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

const AGGREGATED_ACCEPT: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

/// The last discovery of each remote APIService, by name.
#[derive(Default)]
pub struct Cache {
    versions: RwLock<BTreeMap<String, Value>>,
}

impl Cache {
    fn get(&self, name: &str) -> Option<Value> {
        self.versions.read().ok()?.get(name).cloned()
    }

    fn put(&self, name: &str, version: Value) {
        if let Ok(mut versions) = self.versions.write() {
            versions.insert(name.to_string(), version);
        }
    }

    /// Fetches every remote APIService's discovery again, and forgets the gone ones.
    pub async fn refresh_all(&self, aggregator: &Aggregator) {
        let services = aggregator.services();
        if let Ok(mut versions) = self.versions.write() {
            versions.retain(|name, _| {
                services
                    .iter()
                    .any(|s| &s.name == name && s.backend.is_some())
            });
        }
        for service in services.iter().filter(|s| s.backend.is_some()) {
            let fetched = fetch(aggregator, service).await;
            let entry = match fetched {
                Ok(mut version) => {
                    version["freshness"] = json!("Current");
                    version
                }
                Err(e) => {
                    debug!(apiservice = %service.name, error = %e, "discovery of an aggregated server failed");
                    let mut last = self
                        .get(&service.name)
                        .unwrap_or_else(|| json!({"version": service.version, "resources": []}));
                    last["freshness"] = json!("Stale");
                    last
                }
            };
            self.put(&service.name, entry);
        }
    }
}

impl Aggregator {
    /// The group-versions served other than by the catalogue, for discovery: every remote
    /// APIService (with its last discovery) and every in-process API whose APIService is
    /// local.
    pub fn external_versions(&self) -> Vec<ExternalVersion> {
        let mut out = Vec::new();
        for service in self.services() {
            let discovery = if service.backend.is_some() {
                self.discovery.get(&service.name).unwrap_or_else(
                    || json!({"version": service.version, "resources": [], "freshness": "Stale"}),
                )
            } else if let Some(local) = self.local(&service.group, &service.version) {
                local.version_discovery()
            } else {
                continue;
            };
            out.push(ExternalVersion {
                group: service.group,
                version: service.version,
                group_priority: service.group_priority,
                version_priority: service.version_priority,
                discovery,
            });
        }
        out
    }
}

/// The aggregator's own identity towards aggregated servers' discovery.
fn aggregator_user() -> UserInfo {
    UserInfo {
        name: "system:kube-aggregator".into(),
        ..Default::default()
    }
}

async fn fetch(aggregator: &Aggregator, service: &ApiService) -> Result<Value, String> {
    let Some(backend) = &service.backend else {
        return Err("local".into());
    };
    if !service.available {
        return Err("service unavailable".into());
    }
    let address = proxy::endpoint(aggregator.registry(), backend).await?;
    let trust = || {
        if backend.insecure_skip_tls_verify {
            Trust::Insecure
        } else {
            Trust::Bundle(&backend.ca_bundle)
        }
    };
    let user = aggregator_user();
    let get = |path: String, accept: &'static str| {
        let address = address.clone();
        let user = user.clone();
        let trust = trust();
        async move {
            let peer = proxy::Peer {
                address: &address,
                backend,
                trust,
                front_proxy: &aggregator.front_proxy,
            };
            proxy::get(peer, &user, &path, accept, FETCH_TIMEOUT).await
        }
    };
    let aggregated = get("/apis".into(), AGGREGATED_ACCEPT).await?;
    if let Some(version) = from_aggregated(&aggregated, &service.group, &service.version) {
        return Ok(version);
    }
    let path = format!("/apis/{}/{}", service.group, service.version);
    let legacy = get(path.clone(), "application/json").await?;
    if legacy.status != 200 {
        return Err(format!(
            "failed to download discovery for {path}: ResponseCode: {}",
            legacy.status
        ));
    }
    let list: Value = serde_json::from_slice(&legacy.body).map_err(|e| e.to_string())?;
    Ok(external::version_from_resource_list(
        &list,
        &service.group,
        &service.version,
    ))
}

/// The group-version's entry of an aggregated document, when the answer is one.
fn from_aggregated(fetched: &Fetched, group: &str, version: &str) -> Option<Value> {
    if fetched.status != 200 || !fetched.content_type.contains("APIGroupDiscoveryList") {
        return None;
    }
    let doc: Value = serde_json::from_slice(&fetched.body).ok()?;
    doc["items"]
        .as_array()?
        .iter()
        .filter(|g| g["metadata"]["name"] == group)
        .flat_map(|g| g["versions"].as_array().into_iter().flatten())
        .find(|v| v["version"] == version)
        .cloned()
}
