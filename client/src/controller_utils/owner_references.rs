//! Rewriting an object's ownerReferences safely: a JSON patch that tests the uid and the exact
//! references the edit was computed from, so a concurrent change makes it fail instead of
//! being overwritten; the edit is then recomputed from a fresh read. Used by the garbage
//! collector (orphaning, trimming dangling owners) and by controllers adopting and releasing.

use registry::options::{ListOptions, WriteOptions};
use registry::patch::PatchType;
use registry::{object, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use tracing::debug;

use super::SyncError;

const PATCH_ATTEMPTS: usize = 5;

/// The raw `metadata.ownerReferences` (Null when absent).
pub fn raw_owner_references(obj: &Value) -> &Value {
    obj.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .unwrap_or(&Value::Null)
}

/// Applies `edit` (None: nothing to change) to the references of the object `name` whose uid
/// is `uid`. `latest` saves the first read. Returns the patched object, if patched; a
/// NotFound error when the object is gone or was replaced by another of the same name.
pub async fn patch_owner_references(
    store: &Store,
    namespace: Option<&str>,
    name: &str,
    uid: &str,
    mut latest: Option<Value>,
    edit: impl Fn(&[Value]) -> Option<Vec<Value>>,
) -> Result<Option<Value>, SyncError> {
    for attempt in 0..PATCH_ATTEMPTS {
        let current = match latest.take() {
            Some(obj) => obj,
            None => store.get(namespace, name, &ListOptions::default()).await?,
        };
        if object::uid(&current) != uid {
            return Err(RegistryError::not_found(&store.info.qualified_resource(), name).into());
        }
        let references = raw_owner_references(&current);
        let list = references.as_array().map(Vec::as_slice).unwrap_or_default();
        let Some(next) = edit(list) else {
            return Ok(None);
        };
        let change = match (next.is_empty(), references.is_null()) {
            (true, true) => return Ok(None),
            (true, false) => json!({"op": "remove", "path": "/metadata/ownerReferences"}),
            (false, true) => {
                json!({"op": "add", "path": "/metadata/ownerReferences", "value": next})
            }
            (false, false) => {
                json!({"op": "replace", "path": "/metadata/ownerReferences", "value": next})
            }
        };
        let mut ops = vec![json!({"op": "test", "path": "/metadata/uid", "value": uid})];
        if !references.is_null() {
            ops.push(
                json!({"op": "test", "path": "/metadata/ownerReferences", "value": references}),
            );
        }
        ops.push(change);
        let body = serde_json::to_vec(&ops).map_err(|e| SyncError::Failed(e.to_string()))?;
        let result = store
            .patch(
                namespace,
                name,
                PatchType::Json,
                &body,
                Subresource::Main,
                &WriteOptions::default(),
            )
            .await;
        match result {
            Ok(patched) => return Ok(Some(patched)),
            // A test failed: the references (or the object) changed since the read.
            Err(RegistryError::Unprocessable) => {
                debug!(
                    name,
                    attempt, "ownerReferences changed while patching; retrying"
                );
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(SyncError::Failed(format!(
        "ownerReferences of {name} kept changing; will retry later"
    )))
}
