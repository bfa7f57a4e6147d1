//! The storage.k8s.io/v1 kinds (upstream's pkg/apis/storage/validation and
//! pkg/registry/storage): StorageClasses, and what CSI drivers publish and consume
//! (CSIDriver, CSINode, VolumeAttachment, CSIStorageCapacity, VolumeAttributesClass).

mod csi_driver;
mod csi_node;
mod csi_storage_capacity;
mod storage_class;
#[cfg(test)]
mod tests;
mod volume_attachment;
mod volume_attributes_class;

pub use csi_driver::CSIDriverStrategy;
pub use csi_node::CSINodeStrategy;
pub use csi_storage_capacity::CSIStorageCapacityStrategy;
pub use storage_class::StorageClassStrategy;
pub use volume_attachment::VolumeAttachmentStrategy;
pub use volume_attributes_class::VolumeAttributesClassStrategy;

use serde_json::Value;

use crate::error::Cause;
use crate::validation::names::is_dns1123_subdomain;
use crate::validation::{is_qualified_name, quote};

const CSI_DRIVER_NAME_MAX_LENGTH: usize = 63;

/// A CSI driver's name where a field names one (core's ValidateCSIDriverName): a DNS
/// subdomain, compared lower-cased, of at most 63 characters.
fn csi_driver_name(name: &str, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if name.is_empty() {
        causes.push(Cause::required(field));
    }
    if name.len() > CSI_DRIVER_NAME_MAX_LENGTH {
        causes.push(Cause::too_long(field, CSI_DRIVER_NAME_MAX_LENGTH));
    }
    for m in is_dns1123_subdomain(&name.to_lowercase()) {
        causes.push(Cause::invalid(field, quote(name), &m));
    }
    causes
}

/// A provisioner or driver name of a class (validateProvisioner): required, a qualified
/// name when lower-cased.
fn provisioner(name: &str, field: &str) -> Vec<Cause> {
    if name.is_empty() {
        return vec![Cause::required(field)];
    }
    is_qualified_name(&name.to_lowercase())
        .into_iter()
        .map(|m| Cause::invalid(field, quote(&name.to_lowercase()), &m))
        .collect()
}

/// A class's parameters (validateParameters): at most 512 of them and 256 KiB in all, no
/// empty key, and (where `allow_empty` is false) at least one.
fn parameters(params: Option<&Value>, allow_empty: bool, field: &str) -> Vec<Cause> {
    const MAX_COUNT: usize = 512;
    const MAX_SIZE: usize = 256 * 1024;
    let empty = serde_json::Map::new();
    let params = params.and_then(Value::as_object).unwrap_or(&empty);
    if params.len() > MAX_COUNT {
        return vec![Cause::too_long(field, MAX_COUNT)];
    }
    let mut causes = Vec::new();
    let mut size = 0;
    for (key, value) in params {
        if key.is_empty() {
            causes.push(Cause::invalid(field, "\"\"", "field can not be empty."));
        }
        size += key.len() + value.as_str().map_or(0, str::len);
    }
    if size > MAX_SIZE {
        causes.push(Cause::too_long(field, MAX_SIZE));
    }
    if !allow_empty && params.is_empty() {
        causes.push(Cause::required_because(
            field,
            "must contain at least one key/value pair",
        ));
    }
    causes
}

/// Upstream prints an immutable struct or list in its Go form; we print its JSON.
fn immutable(field: &str, value: Option<&Value>) -> Cause {
    let shown = value.map_or_else(|| "null".to_string(), Value::to_string);
    Cause::invalid(field, shown, "field is immutable")
}
