//! The DefaultStorageClass admission plugin (upstream's
//! plugin/pkg/admission/storage/storageclass/setdefault): a claim created without naming a
//! class gets the default StorageClass's name. A dry run shows it too.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::default_class::DefaultClass;
use super::{on_main, watched, Attributes, Operation, Plugin};
use crate::catalogue::is_default_class;
use crate::catalogue::ResourceInfo;
use crate::error::{Qualified, Result};
use crate::object::Object;
use crate::Registry;

pub(super) fn build(registry: &Registry) -> Arc<dyn Plugin> {
    Arc::new(DefaultStorageClass {
        classes: DefaultClass::new(
            watched(registry, "storage.k8s.io", "storageclasses"),
            Qualified::new("storage.k8s.io", "storageclasses"),
            is_default_class,
        ),
    })
}

pub struct DefaultStorageClass {
    classes: DefaultClass,
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
        if let Some(class) = self.classes.name().await? {
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
