//! Strategic merge patch, with upstream's semantics (apimachinery's strategicpatch, as the
//! server applies it: parallel lists merged, unmatched nulls ignored). Maps and directives live
//! here; lists in `lists`.
//!
//! Where upstream copies a patch value verbatim (a field the object lacks, a `$patch: replace`
//! body) and relies on decoding into a Go struct to drop leftover directive keys, the value is
//! merged into an empty one instead, so directives are honoured and never reach the result.

mod errors;
mod lists;

use std::collections::HashSet;

use serde_json::{Map, Value};

use self::errors::{bad, bad_arg_type, bad_patch_type};
use super::{Field, PatchSchema, Strategy, UNTAGGED};
use crate::error::{RegistryError, Result};
use crate::go_fmt;

pub(super) type Object = Map<String, Value>;

pub(super) const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

pub(super) fn apply(original: &Value, body: &[u8], schema: &PatchSchema) -> Result<Value> {
    let patch: Value = serde_json::from_slice(body).map_err(|e| bad(e.to_string()))?;
    let patch = match patch {
        // Upstream decodes `null` into an empty map: nothing to do.
        Value::Null => return Ok(original.clone()),
        Value::Object(patch) => patch,
        other => {
            return Err(bad(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                go_fmt::json_kind(&other)
            )))
        }
    };
    let Value::Object(original) = original else {
        return Err(RegistryError::Internal(
            "the object to patch is not a JSON object".into(),
        ));
    };
    merge_map(original.clone(), patch, Some(schema)).map(Value::Object)
}

/// The metadata of `name` in `ty`; fields the schema does not describe are untagged.
pub(super) fn field<'a>(ty: Option<&'a PatchSchema>, name: &str) -> &'a Field {
    ty.and_then(|t| t.field(name)).unwrap_or(&UNTAGGED)
}

pub(super) fn merge_map(
    mut original: Object,
    mut patch: Object,
    ty: Option<&PatchSchema>,
) -> Result<Object> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.remove(DIRECTIVE);
                fresh_map(patch, ty)
            }
            Some("delete") => Ok(Object::new()),
            _ => Err(bad_patch_type(directive, &patch)),
        };
    }
    retain_keys(&mut original, &mut patch)?;
    set_element_order(&mut original, &mut patch, ty)?;
    // Upstream visits keys in map order (random); deletions after additions gives the one
    // outcome kubectl's patches rely on.
    let (deletions, changes): (Vec<_>, Vec<_>) = patch
        .into_iter()
        .partition(|(key, _)| key.starts_with(DELETE_FROM_PRIMITIVE_LIST));
    for (key, value) in changes {
        merge_field(&mut original, key, value, ty)?;
    }
    for (key, doomed) in deletions {
        let key = extract_key(&key, DELETE_FROM_PRIMITIVE_LIST)?;
        delete_from_list(&mut original, key, doomed, ty)?;
    }
    Ok(original)
}

/// A patch map applied where the object has nothing.
pub(super) fn fresh_map(patch: Object, ty: Option<&PatchSchema>) -> Result<Object> {
    merge_map(Object::new(), patch, ty)
}

/// A patch value applied where the object has nothing (or something of another type).
fn fresh(value: Value, field: &Field) -> Result<Value> {
    Ok(match value {
        Value::Object(patch) => Value::Object(fresh_map(patch, field.ty)?),
        Value::Array(items) => Value::Array(lists::fresh_list(items, field)?),
        other => other,
    })
}

fn merge_field(
    original: &mut Object,
    key: String,
    value: Value,
    ty: Option<&PatchSchema>,
) -> Result<()> {
    if value.is_null() {
        original.remove(&key);
        return Ok(());
    }
    let field = field(ty, &key);
    let merged = match (original.remove(&key), value) {
        (Some(Value::Object(current)), Value::Object(patch))
            if field.strategy != Strategy::Replace =>
        {
            Value::Object(merge_map(current, patch, field.ty)?)
        }
        (Some(Value::Array(current)), Value::Array(patch)) => {
            Value::Array(lists::merge_field_list(current, patch, field)?)
        }
        (_, value) => fresh(value, field)?,
    };
    original.insert(key, merged);
    Ok(())
}

/// `$deleteFromPrimitiveList/<key>`: a null list deletes the field, as upstream; a list the
/// object lacks (or holds as a non-list) is left alone.
fn delete_from_list(
    original: &mut Object,
    key: &str,
    doomed: Value,
    ty: Option<&PatchSchema>,
) -> Result<()> {
    if doomed.is_null() {
        original.remove(key);
        return Ok(());
    }
    let (Some(Value::Array(current)), Value::Array(doomed)) = (original.get_mut(key), doomed)
    else {
        return Ok(());
    };
    let kept = lists::delete_listed(std::mem::take(current), doomed, field(ty, key))?;
    *current = kept;
    Ok(())
}

/// `$retainKeys`: the object keeps only the listed keys, and the patch may set no others.
fn retain_keys(original: &mut Object, patch: &mut Object) -> Result<()> {
    let Some(listed) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(listed) = listed else {
        return Err(bad("invalid patch format of retainKeys"));
    };
    let keep: HashSet<&str> = listed.iter().filter_map(Value::as_str).collect();
    let stray = patch.iter().any(|(key, value)| {
        !value.is_null()
            && !key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            && !key.starts_with(SET_ELEMENT_ORDER)
            && !keep.contains(key.as_str())
    });
    if stray {
        return Err(bad("invalid patch format of retainKeys"));
    }
    original.retain(|key, _| keep.contains(key.as_str()));
    Ok(())
}

/// `$setElementOrder/<key>`: merges that list (if the patch has it) and orders the result.
fn set_element_order(
    original: &mut Object,
    patch: &mut Object,
    ty: Option<&PatchSchema>,
) -> Result<()> {
    let directives: Vec<String> = patch
        .keys()
        .filter(|key| key.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for directive in directives {
        let Some(order) = patch.remove(&directive) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(bad_arg_type("[]interface {}", &order));
        };
        let key = extract_key(&directive, SET_ELEMENT_ORDER)?;
        let current = match original.remove(key) {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(items),
            Some(other) => return Err(bad_arg_type("[]interface {}", &other)),
        };
        let incoming = match patch.remove(key) {
            None => None,
            Some(Value::Array(items)) => Some(items),
            Some(other) => return Err(bad_arg_type("[]interface {}", &other)),
        };
        if let Some(list) = lists::with_element_order(current, incoming, &order, field(ty, key))? {
            original.insert(key.to_string(), Value::Array(list));
        }
    }
    Ok(())
}

/// The field a `$deleteFromPrimitiveList/<key>` or `$setElementOrder/<key>` directive names.
fn extract_key<'k>(directive: &'k str, prefix: &str) -> Result<&'k str> {
    match directive.split_once('/') {
        Some((head, key)) if head == prefix => Ok(key),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST => {
            Err(bad("invalid patch format of primitive list"))
        }
        _ => Err(bad("invalid patch format of setElementOrder list")),
    }
}
