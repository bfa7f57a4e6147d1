//! Serving what CustomResourceDefinitions define, while the server runs (upstream's
//! crdHandler with its discovery and OpenAPI controllers): a definition's served versions get
//! catalogue entries (routes and discovery follow the catalogue), Stores, and descriptions in
//! the OpenAPI documents, and lose them when the definition goes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use openapi::{CustomResource, OpenApi};
use serde_json::Value;
use tracing::{info, warn};

use super::cel::Rules;
use super::conversion::{ConversionWebhook, WebhookConverter};
use super::definition::Definition;
use super::schema::CustomSchema;
use super::served::{served_versions, ServedVersion};
use super::strategy::CustomResourceStrategy;
use registry::strategy::Converter;
use registry::Registry;

/// Installs and removes the resources of definitions; shared by whatever follows the
/// definitions (one per server).
pub struct Installer {
    registry: Arc<Registry>,
    /// The served OpenAPI documents (the registry's validation schemas are told as well).
    documents: Option<Arc<OpenApi>>,
    installed: Mutex<HashMap<String, Installed>>,
    /// How conversion webhooks are called; without one, definitions with strategy Webhook
    /// serve errors instead of unconverted objects.
    webhook: Arc<dyn ConversionWebhook>,
}

/// The webhook client of an installer given none.
struct NoWebhookClient;

#[async_trait::async_trait]
impl ConversionWebhook for NoWebhookClient {
    async fn post(&self, _config: &Value, _body: Vec<u8>) -> Result<Vec<u8>, String> {
        Err("this server calls no conversion webhooks".into())
    }
}

struct Installed {
    /// What the resources were built from: a change of anything else (status conditions,
    /// labels) leaves the Stores alone.
    source: Value,
    /// (group, version, plural) of each served version.
    served: Vec<(String, String, String)>,
    terminating: Arc<AtomicBool>,
}

impl Installer {
    pub fn new(registry: Arc<Registry>, documents: Option<Arc<OpenApi>>) -> Self {
        Self {
            registry,
            documents,
            installed: Mutex::new(HashMap::new()),
            webhook: Arc::new(NoWebhookClient),
        }
    }

    /// Calls conversion webhooks through `webhook` (the server's HTTPS client).
    pub fn with_conversion_webhook(mut self, webhook: Arc<dyn ConversionWebhook>) -> Self {
        self.webhook = webhook;
        self
    }

    /// Brings what is served in line with a definition as stored: nothing until it is
    /// established, then every served version.
    pub fn sync(&self, obj: &Value) {
        let crd = Definition::parse(obj);
        let name = crd.metadata.name.clone();
        if !crd.established() {
            self.remove(&name);
            return;
        }
        let source = serde_json::json!([
            obj.get("spec"),
            crd.status.accepted_names.kind,
            crd.status.accepted_names.plural,
            crd.metadata.uid
        ]);
        let mut installed = self
            .installed
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(current) = installed.get(&name) {
            if current.source == source {
                current
                    .terminating
                    .store(crd.terminating(), Ordering::Release);
                return;
            }
        }
        let terminating = Arc::new(AtomicBool::new(crd.terminating()));
        let versions = served_versions(&crd);
        let served: Vec<(String, String, String)> = versions
            .iter()
            .map(|v| {
                (
                    v.info.group.clone(),
                    v.info.version.clone(),
                    v.info.plural.clone(),
                )
            })
            .collect();
        if let Some(previous) = installed.remove(&name) {
            for gone in previous.served.iter().filter(|s| !served.contains(s)) {
                self.uninstall(gone);
            }
        }
        let multi_version = crd.spec.versions.len() > 1;
        let converter = WebhookConverter::of(&crd, self.webhook.clone())
            .map(|c| Arc::new(c) as Arc<dyn Converter>);
        for version in versions {
            self.install(version, &terminating, multi_version, converter.clone());
        }
        info!(definition = %name, versions = served.len(), "custom resources installed");
        installed.insert(
            name,
            Installed {
                source,
                served,
                terminating,
            },
        );
    }

    /// Stops serving a definition's resources (their stored objects stay).
    pub fn remove(&self, name: &str) {
        let removed = self
            .installed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
        if let Some(removed) = removed {
            for served in &removed.served {
                self.uninstall(served);
            }
            info!(definition = %name, "custom resources uninstalled");
        }
    }

    /// Names of the definitions being served.
    pub fn serving(&self) -> Vec<String> {
        self.installed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    fn install(
        &self,
        version: ServedVersion,
        terminating: &Arc<AtomicBool>,
        multi_version: bool,
        converter: Option<Arc<dyn Converter>>,
    ) {
        let ServedVersion { info, schema } = version;
        let compiled = match schema.as_ref().map(CustomSchema::compile).transpose() {
            Ok(compiled) => compiled.map(Arc::new),
            Err(e) => {
                // Validation compiled it when the definition was written; a failure now means
                // a stored definition this version cannot read.
                warn!(group = %info.group, version = %info.version, plural = %info.plural, error = %e, "schema does not compile; version not served");
                return;
            }
        };
        let rules = match schema.as_ref().map(|s| Rules::compile(s, "")).transpose() {
            Ok(rules) => rules.filter(|r| !r.is_empty()).map(Arc::new),
            Err(causes) => {
                warn!(group = %info.group, version = %info.version, plural = %info.plural, problems = causes.len(), "validation rules do not compile; version not served");
                return;
            }
        };
        let custom = CustomResource {
            resource: info.openapi_spec(),
            schema,
        };
        self.registry.describe_custom(custom.clone());
        if let Some(documents) = &self.documents {
            documents.set_custom(custom);
        }
        let strategy = CustomResourceStrategy {
            schema: compiled,
            rules,
            terminating: terminating.clone(),
            multi_version,
            converter,
        };
        let info = Arc::new(info);
        self.registry.catalogue().upsert(info.as_ref().clone());
        self.registry.install_with(info, Box::new(strategy));
    }

    fn uninstall(&self, (group, version, plural): &(String, String, String)) {
        self.registry.uninstall(group, version, plural);
        self.registry
            .catalogue()
            .remove_version(group, version, plural);
        self.registry.forget_custom(group, version, plural);
        if let Some(documents) = &self.documents {
            documents.remove_custom(group, version, plural);
        }
    }
}
