//! The DefaultStorageClass admission plugin (upstream's
//! plugin/pkg/admission/storage/storageclass/setdefault): a claim created without naming a
//! class gets the default StorageClass's name. A dry run shows it too.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use storage::{Interface, ListOptions, ReadRevision};
use tracing::warn;

use super::{on_main, watched, Attributes, Operation, Plugin};
use crate::catalogue::is_default_class;
use crate::catalogue::ResourceInfo;
use crate::error::{Qualified, RegistryError, Result};
use crate::object::{self, Object};
use crate::Registry;

pub(super) fn build(registry: &Registry) -> Arc<dyn Plugin> {
    let (classes, path) = watched(registry, "storage.k8s.io", "storageclasses");
    Arc::new(DefaultStorageClass::new(classes, &path))
}

pub struct DefaultStorageClass {
    /// The storage of StorageClasses (its watch cache).
    classes: Arc<dyn Interface>,
    /// Their key prefix (`/storageclasses/`).
    prefix: String,
}

impl DefaultStorageClass {
    pub fn new(classes: Arc<dyn Interface>, path: &str) -> Self {
        Self {
            classes,
            prefix: format!("{path}/"),
        }
    }

    /// The default class: of several marked, the newest, then the first by name, as upstream
    /// picks since 1.28.
    async fn default_class(&self) -> Result<Option<String>> {
        // A quorum read (only claim creates pay it): a class made just before the claim counts,
        // which a watch cache a moment behind would miss.
        let opts = ListOptions {
            revision: ReadRevision::Latest,
            recursive: true,
            ..Default::default()
        };
        let list = self
            .classes
            .get_list(&self.prefix, opts)
            .await
            .map_err(|e| {
                RegistryError::from_storage(
                    e,
                    &Qualified::new("storage.k8s.io", "storageclasses"),
                    "",
                )
            })?;
        let mut defaults: Vec<(String, String)> = list
            .items
            .iter()
            .filter_map(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
            .filter(is_default_class)
            .map(|c| {
                let created = c["metadata"]["creationTimestamp"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                (created, object::name(&c).to_string())
            })
            .collect();
        if defaults.len() > 1 {
            warn!(classes = ?defaults, "more than one default StorageClass; the newest is used");
        }
        defaults.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        Ok(defaults.into_iter().next().map(|(_, name)| name))
    }
}

/// Whether the claim names a class (an explicit "" asks for none, and counts).
fn names_class(claim: &Value) -> bool {
    crate::types::claim_class(claim).is_some()
}

#[async_trait]
impl Plugin for DefaultStorageClass {
    fn name(&self) -> &'static str {
        "DefaultStorageClass"
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        operation == Operation::Create && on_main(info, subresource, "", "persistentvolumeclaims")
    }

    async fn admit(&self, _: &Attributes<'_>, claim: Option<&mut Object>) -> Result<()> {
        let Some(claim) = claim.filter(|c| !names_class(c)) else {
            return Ok(());
        };
        if let Some(class) = self.default_class().await? {
            if let Some(spec) = claim.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("storageClassName".into(), Value::String(class));
            }
        }
        Ok(())
    }

    fn mutates(&self) -> bool {
        true
    }
}
