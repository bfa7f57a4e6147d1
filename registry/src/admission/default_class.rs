//! The default of a class kind (StorageClass, IngressClass): the classes marked default by
//! annotation, of several the newest, then the first by name (upstream's choice since 1.28).
//! Read from storage (quorum): a class made just before the object that needs it counts.

use std::sync::Arc;

use serde_json::Value;
use storage::{Interface, ListOptions, ReadRevision};
use tracing::warn;

use crate::error::{Qualified, RegistryError, Result};
use crate::object;

pub(super) struct DefaultClass {
    /// The class kind's storage (its watch cache) and key prefix (`/storageclasses/`).
    classes: Arc<dyn Interface>,
    prefix: String,
    resource: Qualified,
    /// Whether a class is marked the default one.
    marked: fn(&Value) -> bool,
}

impl DefaultClass {
    pub(super) fn new(
        (classes, path): (Arc<dyn Interface>, String),
        resource: Qualified,
        marked: fn(&Value) -> bool,
    ) -> Self {
        Self {
            classes,
            prefix: format!("{path}/"),
            resource,
            marked,
        }
    }

    /// The default class's name, if any class is marked.
    pub(super) async fn name(&self) -> Result<Option<String>> {
        let opts = ListOptions {
            revision: ReadRevision::Latest,
            recursive: true,
            ..Default::default()
        };
        let list = self
            .classes
            .get_list(&self.prefix, opts)
            .await
            .map_err(|e| RegistryError::from_storage(e, &self.resource, ""))?;
        let mut defaults: Vec<(String, String)> = list
            .items
            .iter()
            .filter_map(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
            .filter(|c| (self.marked)(c))
            .map(|c| {
                let created = c["metadata"]["creationTimestamp"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                (created, object::name(&c).to_string())
            })
            .collect();
        if defaults.len() > 1 {
            warn!(resource = %self.resource, classes = ?defaults, "more than one default class; the newest is used");
        }
        defaults.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        Ok(defaults.into_iter().next().map(|(_, name)| name))
    }
}
