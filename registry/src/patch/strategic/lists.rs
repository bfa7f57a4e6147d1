//! Lists in a strategic merge patch: merged by key or as an ordered set, the list directives,
//! and the ordering upstream gives the result (`$setElementOrder` first, then the patch's
//! order, then the object's; an item new to the list goes before the object's remaining items
//! unless an order says otherwise).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::errors::{bad, bad_arg_type, bad_patch_type, no_merge_key};
use super::{fresh_map, merge_map, DIRECTIVE};
use crate::error::{RegistryError, Result};
use crate::go_fmt;
use crate::patch::{Field, PatchSchema, Strategy, UNTAGGED};

/// The Go type of a decoded JSON object.
const OBJECT: &str = "map[string]interface {}";

/// A list value merged into the object's list of the same field.
pub(super) fn merge_field_list(
    current: Vec<Value>,
    patch: Vec<Value>,
    field: &Field,
) -> Result<Vec<Value>> {
    if field.strategy != Strategy::Merge {
        return fresh_list(patch, field);
    }
    merge_list(current, patch, field, false)
}

/// `$deleteFromPrimitiveList`. Upstream replaces a non-merging list with the deletion list;
/// here the listed values are removed from it, as they are from a merging one.
pub(super) fn delete_listed(
    current: Vec<Value>,
    doomed: Vec<Value>,
    field: &Field,
) -> Result<Vec<Value>> {
    if field.strategy != Strategy::Merge {
        return Ok(without(current, &doomed));
    }
    merge_list(current, doomed, field, true)
}

/// A patch list applied where the object has none, or whose field is not merged: items carry
/// no directives into the result.
pub(super) fn fresh_list(items: Vec<Value>, field: &Field) -> Result<Vec<Value>> {
    let merging = field.strategy == Strategy::Merge;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::Object(mut item) => {
                if item.contains_key(DIRECTIVE) {
                    if merging {
                        // Deleting from, or replacing, an empty list: the directive item is all.
                        continue;
                    }
                    item.remove(DIRECTIVE);
                }
                out.push(Value::Object(fresh_map(item, field.ty)?));
            }
            Value::Array(inner) => out.push(Value::Array(fresh_list(inner, &UNTAGGED)?)),
            other => out.push(other),
        }
    }
    Ok(out)
}

fn merge_list(
    current: Vec<Value>,
    patch: Vec<Value>,
    field: &Field,
    deleting: bool,
) -> Result<Vec<Value>> {
    if current.is_empty() && patch.is_empty() {
        return Ok(current);
    }
    if element_type(&current, &patch)? != OBJECT {
        if deleting {
            return Ok(without(current, &patch));
        }
        let merged = union(&current, &patch);
        let (ordered, server_only) = partition(merged, &patch, field.merge_key)?;
        return Ok(arrange(
            ordered,
            server_only,
            &patch,
            &current,
            field.merge_key,
        ));
    }
    let Some(key) = field.merge_key else {
        return Err(bad("cannot merge lists without merge key for type struct"));
    };
    let (current, patch) = list_directives(current, patch, key, field.ty)?;
    let merged = merge_by_key(current.clone(), &patch, key, field.ty)?;
    let (ordered, server_only) = partition(merged, &patch, Some(key))?;
    Ok(arrange(ordered, server_only, &patch, &current, Some(key)))
}

/// `$patch: delete` items remove every item with their key; a `$patch: replace` item makes the
/// patch's other items the whole list. Returns the list and the patch's plain items.
fn list_directives(
    mut current: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
    ty: Option<&PatchSchema>,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    let mut doomed = HashSet::new();
    for item in patch {
        let Some(directive) = item.get(DIRECTIVE) else {
            plain.push(item);
            continue;
        };
        let Value::Object(obj) = &item else {
            continue;
        };
        match directive.as_str() {
            Some("delete") => match obj.get(key) {
                Some(value) => {
                    doomed.insert(value.to_string());
                }
                None => return Err(no_merge_key(obj, key)),
            },
            Some("replace") => replace = true,
            Some("merge") => return Err(bad("merging lists cannot yet be specified in the patch")),
            _ => return Err(bad_patch_type(directive, obj)),
        }
    }
    if !doomed.is_empty() {
        current.retain(|c| c.get(key).is_none_or(|v| !doomed.contains(&v.to_string())));
    }
    if !replace {
        return Ok((current, plain));
    }
    let mut replaced = Vec::with_capacity(plain.len());
    for item in plain {
        if let Value::Object(item) = item {
            replaced.push(Value::Object(fresh_map(item, ty)?));
        }
    }
    Ok((replaced, Vec::new()))
}

/// Each patch item merges into the first item with its key, or is appended.
fn merge_by_key(
    mut merged: Vec<Value>,
    patch: &[Value],
    key: &str,
    ty: Option<&PatchSchema>,
) -> Result<Vec<Value>> {
    let mut positions = FirstIndex::new(&merged, Some(key));
    for item in patch {
        let Value::Object(obj) = item else {
            return Err(bad_arg_type(OBJECT, item));
        };
        let Some(wanted) = obj.get(key) else {
            return Err(no_merge_key(obj, key));
        };
        match positions.find(wanted) {
            Some(i) => {
                if let Some(Value::Object(existing)) = merged.get_mut(i) {
                    let taken = std::mem::take(existing);
                    *existing = merge_map(taken, obj.clone(), ty)?;
                }
            }
            None => {
                positions.record(wanted, merged.len());
                merged.push(Value::Object(fresh_map(obj.clone(), ty)?));
            }
        }
    }
    Ok(merged)
}

/// `$setElementOrder/<field>` with the field's patch list, if any: the merged list in the given
/// order, items the order does not name placed by their order in the object.
pub(super) fn with_element_order(
    current: Option<Vec<Value>>,
    incoming: Option<Vec<Value>>,
    order: &[Value],
    field: &Field,
) -> Result<Option<Vec<Value>>> {
    let key = field.merge_key;
    if let Some(key) = key {
        for item in order {
            let Value::Object(obj) = item else {
                return Err(bad_arg_type(OBJECT, item));
            };
            if !obj.contains_key(key) {
                return Err(no_merge_key(obj, key));
            }
        }
    }
    validate_order(incoming.as_deref().unwrap_or_default(), order, key)?;
    let server_order = current.clone().unwrap_or_default();
    let merged = match (current, incoming) {
        (None, None) => return Ok(None),
        (Some(current), None) => current,
        (None, Some(patch)) => fresh_list(patch, field)?,
        (Some(current), Some(patch)) => merge_field_list(current, patch, field)?,
    };
    if merged.is_empty() {
        return Ok(Some(merged));
    }
    let (ordered, server_only) = partition(merged, order, key)?;
    Ok(Some(arrange(
        ordered,
        server_only,
        order,
        &server_order,
        key,
    )))
}

/// The patch's items must appear in the order list, in the same relative order.
fn validate_order(patch: &[Value], order: &[Value], key: Option<&str>) -> Result<()> {
    if patch.is_empty() || order.is_empty() {
        return Ok(());
    }
    let mut items = Vec::with_capacity(patch.len());
    for item in patch {
        if key.is_some() {
            let Value::Object(obj) = item else {
                return Err(bad_arg_type(OBJECT, item));
            };
            if obj.get(DIRECTIVE).and_then(Value::as_str) == Some("delete") {
                continue;
            }
        }
        items.push(item);
    }
    let (mut p, mut o) = (0, 0);
    while p < items.len() && o < order.len() {
        if items[p].get(DIRECTIVE).is_some() {
            p += 1;
            continue;
        }
        if same_key(items[p], &order[o], key)? {
            p += 1;
        }
        o += 1;
    }
    if p < items.len() {
        return Err(bad(format!(
            "The order in patch list:\n{}\n doesn't match $setElementOrder list:\n{}\n",
            go_fmt::list(patch),
            go_fmt::list(order)
        )));
    }
    Ok(())
}

fn same_key(left: &Value, right: &Value, key: Option<&str>) -> Result<bool> {
    let Some(key) = key else {
        return Ok(left == right);
    };
    let value_of = |item: &Value| match item {
        Value::Object(obj) => obj.get(key).cloned().ok_or_else(|| no_merge_key(obj, key)),
        other => Err(bad_arg_type(OBJECT, other)),
    };
    Ok(value_of(left)? == value_of(right)?)
}

/// The one Go type every element of both lists has.
fn element_type(a: &[Value], b: &[Value]) -> Result<&'static str> {
    let mut items = a.iter().chain(b);
    let Some(first) = items.next() else {
        return Err(bad("no elements in any of the given slices"));
    };
    match first {
        // Upstream answers lists of lists with 422.
        Value::Array(_) => return Err(RegistryError::Unprocessable),
        Value::Null => return Err(not_identical(a, b)),
        _ => {}
    }
    let expected = go_fmt::type_name(first);
    if items.any(|item| go_fmt::type_name(item) != expected) {
        return Err(not_identical(a, b));
    }
    Ok(expected)
}

fn not_identical(a: &[Value], b: &[Value]) -> RegistryError {
    bad(format!(
        "list element types are not identical: [{} {}]",
        go_fmt::list(a),
        go_fmt::list(b)
    ))
}

/// Splits `merged` into the items `by` names (by key, or by value without one) and the rest.
fn partition(
    merged: Vec<Value>,
    by: &[Value],
    key: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let named = FirstIndex::new(by, key);
    let (mut ordered, mut server_only) = (Vec::new(), Vec::new());
    for item in merged {
        let wanted = match key {
            Some(key) => match &item {
                Value::Object(obj) => obj.get(key).ok_or_else(|| no_merge_key(obj, key))?,
                other => return Err(bad_arg_type(OBJECT, other)),
            },
            None => &item,
        };
        if named.find(wanted).is_some() {
            ordered.push(item);
        } else {
            server_only.push(item);
        }
    }
    Ok((ordered, server_only))
}

/// Sorts `ordered` by `order` and `server_only` by `server_order`, then interleaves them: a
/// server-only item goes first only when both it and the next ordered item are in
/// `server_order` and it comes earlier there.
fn arrange(
    mut ordered: Vec<Value>,
    mut server_only: Vec<Value>,
    order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let wanted = FirstIndex::new(order, key);
    let server = FirstIndex::new(server_order, key);
    ordered.sort_by_cached_key(|item| wanted.position(item).unwrap_or(usize::MAX));
    server_only.sort_by_cached_key(|item| server.position(item).unwrap_or(usize::MAX));
    let mut out = Vec::with_capacity(ordered.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = ordered.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (server.position(l), server.position(r)),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// Both lists, each value once, first occurrence kept.
fn union(current: &[Value], patch: &[Value]) -> Vec<Value> {
    let mut seen = HashSet::new();
    current
        .iter()
        .chain(patch)
        .filter(|item| seen.insert(item.to_string()))
        .cloned()
        .collect()
}

fn without(current: Vec<Value>, doomed: &[Value]) -> Vec<Value> {
    let doomed: HashSet<String> = doomed.iter().map(Value::to_string).collect();
    current
        .into_iter()
        .filter(|item| !doomed.contains(&item.to_string()))
        .collect()
}

/// Where an item (by its merge key, or whole) first appears in a list. Values are compared by
/// their JSON text, which is what upstream's interface equality amounts to for them.
struct FirstIndex<'k> {
    key: Option<&'k str>,
    first: HashMap<String, usize>,
}

impl<'k> FirstIndex<'k> {
    fn new(items: &[Value], key: Option<&'k str>) -> Self {
        let mut index = Self {
            key,
            first: HashMap::with_capacity(items.len()),
        };
        for (i, item) in items.iter().enumerate() {
            let identity = match key {
                Some(key) => item.get(key),
                None => Some(item),
            };
            if let Some(identity) = identity {
                index.record(identity, i);
            }
        }
        index
    }

    fn record(&mut self, identity: &Value, at: usize) {
        self.first.entry(identity.to_string()).or_insert(at);
    }

    /// By the identity (merge-key value, or the item itself without a key).
    fn find(&self, identity: &Value) -> Option<usize> {
        self.first.get(&identity.to_string()).copied()
    }

    /// By the item.
    fn position(&self, item: &Value) -> Option<usize> {
        match self.key {
            Some(key) => item.get(key).and_then(|identity| self.find(identity)),
            None => self.find(item),
        }
    }
}
