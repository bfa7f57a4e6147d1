//! API aggregation (upstream's kube-aggregator): APIServices (apiregistration.k8s.io/v1)
//! decide who serves a group-version. One with `spec.service` sends every request under
//! `/apis/<group>/<version>` to that Service's endpoint (`proxy`), as the authenticated and
//! authorized user in the front-proxy headers; its discovery is fetched and merged into this
//! server's (`discovery`); its `Available` condition is kept by `available`, and while it is
//! not True the group answers 503. A local APIService is served here: by the catalogue, or
//! by an in-process API registered with [`Aggregator::serve_locally`] (the metrics API),
//! which a later `spec.service` replaces.

pub mod authentication_info;
pub mod available;
pub mod discovery;
pub mod local;
pub mod proxy;
pub(crate) mod tls;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use registry::Registry;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::tls::front_proxy::FrontProxy;
use local::LocalApi;

const GROUP: &str = "apiregistration.k8s.io";
const PLURAL: &str = "apiservices";

/// Where an APIService's requests go: `spec.service` and how to trust it.
#[derive(Clone, Debug, PartialEq)]
pub struct Backend {
    pub namespace: String,
    pub name: String,
    pub port: i64,
    /// PEM, decoded from `spec.caBundle`.
    pub ca_bundle: Vec<u8>,
    pub insecure_skip_tls_verify: bool,
}

impl Backend {
    /// The clientConfig shape `webhooks::transport::resolve` reads.
    fn client_config(&self) -> Value {
        json!({"service": {"namespace": self.namespace, "name": self.name, "port": self.port}})
    }

    /// The Service's DNS name, which its serving certificate must carry.
    pub fn server_name(&self) -> String {
        format!("{}.{}.svc", self.name, self.namespace)
    }
}

/// One APIService as the aggregator acts on it.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiService {
    pub name: String,
    pub group: String,
    pub version: String,
    pub group_priority: i64,
    pub version_priority: i64,
    /// None: served locally.
    pub backend: Option<Backend>,
    /// Whether its `Available` condition is True.
    pub available: bool,
}

impl ApiService {
    pub fn from_object(obj: &Value) -> Option<Self> {
        use base64::Engine;
        let spec = &obj["spec"];
        let backend = spec["service"].as_object().map(|service| Backend {
            namespace: service["namespace"].as_str().unwrap_or_default().into(),
            name: service["name"].as_str().unwrap_or_default().into(),
            port: service.get("port").and_then(Value::as_i64).unwrap_or(443),
            ca_bundle: spec["caBundle"]
                .as_str()
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .unwrap_or_default(),
            insecure_skip_tls_verify: spec["insecureSkipTLSVerify"] == true,
        });
        let available = obj["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Available" && c["status"] == "True");
        Some(Self {
            name: obj["metadata"]["name"].as_str()?.to_string(),
            group: spec["group"].as_str().unwrap_or_default().to_string(),
            version: spec["version"].as_str()?.to_string(),
            group_priority: spec["groupPriorityMinimum"].as_i64().unwrap_or(0),
            version_priority: spec["versionPriority"].as_i64().unwrap_or(0),
            backend,
            available,
        })
    }
}

/// Who answers a request under `/apis/<group>/<version>`.
pub enum Route {
    Remote(ApiService),
    Local(Arc<dyn LocalApi>),
}

pub struct Aggregator {
    registry: Arc<Registry>,
    pub(crate) front_proxy: FrontProxy,
    /// By `<group>/<version>`.
    services: RwLock<BTreeMap<String, ApiService>>,
    locals: RwLock<Vec<Arc<dyn LocalApi>>>,
    pub(crate) discovery: discovery::Cache,
}

fn key(group: &str, version: &str) -> String {
    format!("{group}/{version}")
}

impl Aggregator {
    pub fn new(registry: Arc<Registry>, front_proxy: FrontProxy) -> Arc<Self> {
        Arc::new(Self {
            registry,
            front_proxy,
            services: RwLock::default(),
            locals: RwLock::default(),
            discovery: discovery::Cache::default(),
        })
    }

    /// An aggregator that follows no APIService (it is never started) and has no
    /// front-proxy credentials: every request is the catalogue's. For routers built without
    /// the server's start-up (benchmarks, tests).
    pub fn idle(registry: Arc<Registry>) -> Arc<Self> {
        Self::new(registry, FrontProxy::default())
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Serves `api` in-process while its APIService has no `spec.service`.
    pub fn serve_locally(&self, api: Arc<dyn LocalApi>) {
        if let Ok(mut locals) = self.locals.write() {
            locals.push(api);
        }
    }

    fn local(&self, group: &str, version: &str) -> Option<Arc<dyn LocalApi>> {
        let locals = self.locals.read().ok()?;
        locals
            .iter()
            .find(|api| api.group() == group && api.version() == version)
            .cloned()
    }

    /// The APIServices as known now, by `<group>/<version>`.
    pub fn services(&self) -> Vec<ApiService> {
        self.services
            .read()
            .map(|s| s.values().cloned().collect())
            .unwrap_or_default()
    }

    fn replace(&self, list: Vec<Arc<Value>>) {
        let next: BTreeMap<String, ApiService> = list
            .iter()
            .filter_map(|obj| ApiService::from_object(obj))
            .map(|s| (key(&s.group, &s.version), s))
            .collect();
        if let Ok(mut services) = self.services.write() {
            *services = next;
        }
    }

    /// Who serves `path` (below `/apis/`), when it is not the catalogue: a remote APIService
    /// for `<group>/<version>[/...]`, or an in-process API whose APIService is local.
    pub fn route(&self, path: &str) -> Option<Route> {
        let mut parts = path.trim_start_matches('/').splitn(3, '/');
        let (group, version) = (parts.next()?, parts.next()?);
        if group.is_empty() || version.is_empty() {
            return None;
        }
        let service = self
            .services
            .read()
            .ok()?
            .get(&key(group, version))
            .cloned();
        match service {
            Some(s) if s.backend.is_some() => Some(Route::Remote(s)),
            Some(_) => self.local(group, version).map(Route::Local),
            None => None,
        }
    }

    /// Follows the APIServices (and keeps the in-process APIs' own registered), refreshing
    /// remote discovery on every change and every `period`.
    pub fn start(
        self: &Arc<Self>,
        informers: &client::informer::InformerFactory,
        period: Duration,
        stop: CancellationToken,
    ) {
        let informer = match informers.informer(GROUP, "v1", PLURAL) {
            Ok(i) => i,
            Err(e) => {
                warn!(error = %e, "APIServices are not served; aggregation stays off");
                return;
            }
        };
        let indexer = informer.indexer().clone();
        let notifications = informer.subscribe();
        let this = self.clone();
        let stop_events = stop.clone();
        tokio::spawn(async move {
            if informer.wait_for_sync().await {
                this.replace(indexer.list());
                this.register_locals().await;
                this.discovery.refresh_all(&this).await;
            }
            let reload = this.clone();
            let indexer = indexer.clone();
            let _ = client::informer::dispatch(notifications, stop_events, move |_| {
                reload.replace(indexer.list());
                let refresh = reload.clone();
                tokio::spawn(async move { refresh.discovery.refresh_all(&refresh).await });
            })
            .await;
        });
        let this = self.clone();
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(period);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    _ = ticker.tick() => this.discovery.refresh_all(&this).await,
                }
            }
        });
    }

    /// The APIServices of the in-process APIs, created when absent (a later `spec.service`
    /// written over one is kept).
    async fn register_locals(&self) {
        let Some(store) = self.registry.store(GROUP, "v1", PLURAL) else {
            return;
        };
        let apis: Vec<Arc<dyn LocalApi>> =
            self.locals.read().map(|l| l.clone()).unwrap_or_default();
        for api in apis {
            let (group, version) = (api.group(), api.version());
            let object = json!({
                "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": format!("{version}.{group}")},
                "spec": {"group": group, "version": version,
                    "groupPriorityMinimum": api.group_priority(),
                    "versionPriority": api.version_priority()},
            });
            match store
                .create(None, object, &registry::options::WriteOptions::default())
                .await
            {
                Ok(_) | Err(registry::RegistryError::AlreadyExists { .. }) => {}
                Err(e) => warn!(group, version, error = %e, "registering the in-process API"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_support::TestBackend;

    fn apiservice(name: &str, group: &str, service: Option<Value>, available: bool) -> Value {
        let mut obj = json!({"metadata": {"name": name},
            "spec": {"group": group, "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 10},
            "status": {"conditions": [{"type": "Available",
                "status": if available { "True" } else { "False" }}]}});
        if let Some(service) = service {
            obj["spec"]["service"] = service;
        }
        obj
    }

    #[tokio::test]
    async fn remote_group_versions_are_routed_and_local_ones_are_not() {
        let backend = TestBackend::embedded().await;
        let aggregator = Aggregator::idle(crate::testing::registry(&backend).await);
        aggregator.replace(vec![
            Arc::new(apiservice(
                "v1.wardle.example.com",
                "wardle.example.com",
                Some(json!({"namespace": "w", "name": "api"})),
                false,
            )),
            Arc::new(apiservice("v1.apps", "apps", None, true)),
        ]);
        match aggregator.route("wardle.example.com/v1/namespaces/x/flunders") {
            Some(Route::Remote(s)) => {
                assert!(!s.available);
                let backend = s.backend.expect("a backend");
                assert_eq!(
                    (backend.port, backend.server_name()),
                    (443, "api.w.svc".into())
                );
            }
            _ => panic!("not routed to the remote server"),
        }
        assert!(aggregator.route("apps/v1/deployments").is_none());
        assert!(aggregator.route("wardle.example.com").is_none());
        assert!(aggregator.route("other.example.com/v1").is_none());
    }
}
