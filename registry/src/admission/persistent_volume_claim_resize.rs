//! PersistentVolumeClaimResize (upstream's plugin/pkg/admission/storage/persistentvolume/resize):
//! a claim's storage request may grow only when the claim is bound and its StorageClass (the
//! same before and after) allows volume expansion.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use storage::{Interface, ReadRevision};

use super::{on_main, watched, Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::{RegistryError, Result};
use crate::object::Object;
use crate::types::{claim_class, parse_quantity};
use crate::Registry;

pub(super) fn build(registry: &Registry) -> Arc<dyn Plugin> {
    let (classes, prefix) = watched(registry, "storage.k8s.io", "storageclasses");
    Arc::new(PersistentVolumeClaimResize { classes, prefix })
}

struct PersistentVolumeClaimResize {
    /// The StorageClasses' storage (their watch cache), as upstream reads its lister.
    classes: Arc<dyn Interface>,
    prefix: String,
}

/// The requested storage in base units; absent or unreadable reads as zero.
fn requested(claim: &Value) -> f64 {
    claim["spec"]["resources"]["requests"]["storage"]
        .as_str()
        .and_then(parse_quantity)
        .unwrap_or(0.0)
}

impl PersistentVolumeClaimResize {
    async fn allows_expansion(&self, class: &str) -> bool {
        let key = format!("{}/{class}", self.prefix);
        match self.classes.get(&key, ReadRevision::Any).await {
            Ok(kv) => serde_json::from_slice::<Value>(&kv.value)
                .ok()
                .and_then(|c| c["allowVolumeExpansion"].as_bool())
                .unwrap_or(false),
            Err(_) => false,
        }
    }
}

#[async_trait]
impl Plugin for PersistentVolumeClaimResize {
    fn name(&self) -> &'static str {
        "PersistentVolumeClaimResize"
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        operation == Operation::Update && on_main(info, subresource, "", "persistentvolumeclaims")
    }

    async fn validate(&self, attrs: &Attributes<'_>, claim: Option<&Object>) -> Result<()> {
        let (Some(claim), Some(old)) = (claim, attrs.old) else {
            return Ok(());
        };
        if requested(claim) <= requested(old) {
            return Ok(());
        }
        let forbidden = |why: &str| {
            Err(RegistryError::forbidden(
                &attrs.info.qualified_resource(),
                attrs.name,
                why,
            ))
        };
        if old["status"]["phase"].as_str() != Some("Bound") {
            return forbidden("Only bound persistent volume claims can be expanded");
        }
        let class_of = |c| claim_class(c).unwrap_or_default();
        let (class, old_class) = (class_of(claim), class_of(old));
        if class.is_empty() || class != old_class || !self.allows_expansion(class).await {
            return forbidden(
                "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
            );
        }
        Ok(())
    }

    fn validates(&self) -> bool {
        true
    }
}
