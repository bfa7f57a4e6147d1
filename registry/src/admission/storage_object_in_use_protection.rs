//! StorageObjectInUseProtection (upstream's plugin/pkg/admission/storage/storageobjectinuseprotection):
//! every PersistentVolumeClaim and PersistentVolume is created with the finalizer that keeps it
//! while it is in use (`kubernetes.io/pvc-protection`, `kubernetes.io/pv-protection`); the
//! protection controllers remove it once nothing uses the object.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{on_main, Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::Result;
use crate::object::{self, Object};
use crate::Registry;

/// The finalizer of claims in use by pods.
pub const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
/// The finalizer of volumes bound to claims.
pub const PV_PROTECTION: &str = "kubernetes.io/pv-protection";

pub(super) fn build(_: &Registry) -> Arc<dyn Plugin> {
    Arc::new(StorageObjectInUseProtection)
}

struct StorageObjectInUseProtection;

#[async_trait]
impl Plugin for StorageObjectInUseProtection {
    fn name(&self) -> &'static str {
        "StorageObjectInUseProtection"
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        operation == Operation::Create
            && (on_main(info, subresource, "", "persistentvolumeclaims")
                || on_main(info, subresource, "", "persistentvolumes"))
    }

    fn mutates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &Attributes<'_>, obj: Option<&mut Object>) -> Result<()> {
        let Some(obj) = obj else { return Ok(()) };
        let finalizer = if attrs.info.plural == "persistentvolumes" {
            PV_PROTECTION
        } else {
            PVC_PROTECTION
        };
        if object::finalizers(obj).iter().any(|f| f == finalizer) {
            return Ok(());
        }
        let meta = object::meta_mut(obj);
        let list = meta.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(list) = list.as_array_mut() {
            list.push(Value::from(finalizer));
        }
        Ok(())
    }
}
