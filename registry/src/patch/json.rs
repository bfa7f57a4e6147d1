//! RFC 6902 JSON patch and RFC 7386 merge patch, with upstream's answers: a body that does not
//! decode is 400, a patch that decodes but cannot be applied is a bare 422.

use serde_json::Value;

use crate::error::{RegistryError, Result};
use crate::go_fmt;

/// Upstream's cap on the operations of one JSON patch.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

pub(super) fn apply_json_patch(original: &Value, body: &[u8]) -> Result<Value> {
    let ops = decode_operations(body)?;
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(RegistryError::RequestEntityTooLarge(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            ops.len()
        )));
    }
    // Upstream decodes operations loosely and only rejects an unknown `op`, a missing `path`
    // and the like when applying them, so those are 422, not 400.
    let patch: json_patch::Patch =
        serde_json::from_value(Value::Array(ops)).map_err(|_| RegistryError::Unprocessable)?;
    // On our own copy, dropped when an operation fails: json_patch::patch's undo of the
    // operations already applied can panic (a failed `move` after a `copy` to its source
    // leaves nothing to undo), and a request must not reach a panic.
    let mut doc = original.clone();
    json_patch::patch_unsafe(&mut doc, &patch).map_err(|_| RegistryError::Unprocessable)?;
    Ok(doc)
}

/// The body as upstream's DecodePatch reads it: a JSON array of objects (`null` entries and a
/// `null` body are accepted; the former then fail to apply, the latter patches nothing).
fn decode_operations(body: &[u8]) -> Result<Vec<Value>> {
    let decoded: Value =
        serde_json::from_slice(body).map_err(|e| RegistryError::BadRequest(e.to_string()))?;
    let ops = match decoded {
        Value::Null => return Ok(Vec::new()),
        Value::Array(ops) => ops,
        other => {
            return Err(RegistryError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                go_fmt::json_kind(&other)
            )))
        }
    };
    if let Some(bad) = ops.iter().find(|op| !op.is_object() && !op.is_null()) {
        return Err(RegistryError::BadRequest(format!(
            "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
            go_fmt::json_kind(bad)
        )));
    }
    Ok(ops)
}

pub(super) fn apply_merge_patch(original: &Value, body: &[u8]) -> Result<Value> {
    let bad = || RegistryError::BadRequest("Invalid JSON Patch".into());
    let patch: Value = serde_json::from_slice(body).map_err(|_| bad())?;
    match patch {
        Value::Object(_) => {
            let mut doc = original.clone();
            json_patch::merge(&mut doc, &patch);
            Ok(doc)
        }
        // A top-level array replaces the document (which then fails to decode as an object).
        Value::Array(items) => Ok(Value::Array(items.into_iter().map(prune_nulls).collect())),
        _ => Err(bad()),
    }
}

/// What a merge patch value becomes where there was nothing to merge into: its objects lose
/// their null members.
fn prune_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, prune_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(prune_nulls).collect()),
        other => other,
    }
}
