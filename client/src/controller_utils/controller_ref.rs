//! Finding the controller of an object (upstream's metav1.GetControllerOf and each
//! controller's resolveControllerRef): the owner reference marked `controller`, resolved
//! through the owners' informer only if it still holds that very object (same uid), so a
//! re-created owner of the same name is not mistaken for the old one.

use std::sync::Arc;

use registry::object;
use serde_json::Value;

use crate::informer::SharedInformer;

/// The owner reference marked controller, if any.
pub fn controller_reference(obj: &Value) -> Option<&Value> {
    obj["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"].as_bool() == Some(true))
}

/// The object of `kind` that controls `obj`, from `owners` (same namespace).
pub fn resolve_controller_ref(
    owners: &SharedInformer,
    kind: &str,
    obj: &Value,
) -> Option<Arc<Value>> {
    let reference = controller_reference(obj)?;
    if reference["kind"].as_str() != Some(kind) {
        return None;
    }
    let name = reference["name"].as_str()?;
    let owner = owners
        .indexer()
        .get(&format!("{}/{name}", object::namespace(obj)))?;
    (Some(object::uid(&owner)) == reference["uid"].as_str()).then_some(owner)
}
