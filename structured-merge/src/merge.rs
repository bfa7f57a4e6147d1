//! Merging an applied configuration into the live object under the schema: what server-side
//! apply writes before it prunes the fields the applier gave up.

use crate::list_item::{index_items, positions, value_error, Occurs};
use crate::path::PathElement;
use crate::schema::{ListKind, Node, Schema, TypeRef};
use crate::Error;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// `applied` merged into `live`: structs and granular maps field by field, map lists by key
/// and set lists by value (in upstream's order, see `merge_items`), and
/// anything atomic (scalars, atomic lists and maps, untyped leaves) replaced by the applied
/// value.
pub fn merge(
    schema: &Schema,
    root: &TypeRef,
    live: &Value,
    applied: &Value,
) -> Result<Value, Error> {
    let mut path = Vec::new();
    merge_at(schema, root, live, applied, &mut path)
}

fn merge_at(
    schema: &Schema,
    tr: &TypeRef,
    live: &Value,
    applied: &Value,
    path: &mut Vec<PathElement>,
) -> Result<Value, Error> {
    let node = schema.resolve(tr)?;
    merge_node(schema, node, live, applied, path)
}

fn merge_node(
    schema: &Schema,
    node: Node<'_>,
    live: &Value,
    applied: &Value,
    path: &mut Vec<PathElement>,
) -> Result<Value, Error> {
    match (node, live, applied) {
        (
            Node::Struct {
                fields,
                rest,
                atomic: false,
                ..
            },
            Value::Object(l),
            Value::Object(a),
        ) => merge_entries(schema, l, a, path, |name| {
            fields.get(name).or(rest).map(Child::Typed)
        }),
        (
            Node::Map {
                value,
                atomic: false,
            },
            Value::Object(l),
            Value::Object(a),
        ) => merge_entries(schema, l, a, path, |_| Some(Child::Typed(value))),
        (Node::Deduced, Value::Object(l), Value::Object(a)) => {
            merge_entries(schema, l, a, path, |_| Some(Child::Deduced))
        }
        (Node::List { element, kind }, Value::Array(l), Value::Array(a))
            if *kind != ListKind::Atomic =>
        {
            merge_items(schema, element, kind, l, a, path)
        }
        _ => Ok(applied.clone()),
    }
}

#[derive(Clone, Copy)]
enum Child<'a> {
    Typed(&'a TypeRef),
    Deduced,
}

fn merge_entries<'s>(
    schema: &'s Schema,
    live: &Map<String, Value>,
    applied: &Map<String, Value>,
    path: &mut Vec<PathElement>,
    child_type: impl Fn(&str) -> Option<Child<'s>>,
) -> Result<Value, Error> {
    // Built entry by entry so that each live value is cloned once, not once per level.
    let mut out = Map::new();
    for (name, a) in applied {
        path.push(PathElement::Field(name.clone()));
        let merged = match (live.get(name), child_type(name)) {
            (Some(l), Some(Child::Typed(tr))) => merge_at(schema, tr, l, a, path)?,
            (Some(l), Some(Child::Deduced)) => merge_node(schema, Node::Deduced, l, a, path)?,
            (None, Some(_)) => a.clone(),
            (_, None) => return Err(value_error(path, "field not declared in schema".into())),
        };
        path.pop();
        out.insert(name.clone(), merged);
    }
    for (name, l) in live {
        if !applied.contains_key(name) {
            out.insert(name.clone(), l.clone());
        }
    }
    Ok(Value::Object(out))
}

/// Upstream's ordered list merge: applied items come in the applied order, and live items
/// the configuration does not name stay where they were relative to the items around them.
/// Live duplicates of a key the configuration names collapse into the applied item.
fn merge_items(
    schema: &Schema,
    element: &TypeRef,
    kind: &ListKind,
    live: &[Value],
    applied: &[Value],
    path: &mut Vec<PathElement>,
) -> Result<Value, Error> {
    let live_pes = index_items(schema, element, kind, live, path, true)?;
    let applied_pes = index_items(schema, element, kind, applied, path, false)?;
    let live_at = positions(&live_pes);
    let applied_at = positions(&applied_pes);
    let mut shared = applied_pes.iter().filter(|pe| live_at.contains_key(pe));
    let mut next_shared = shared.next();
    let mut done: BTreeSet<&PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(live.len().max(applied.len()));
    let (mut l, mut r) = (0, 0);
    while l < live.len() || r < applied.len() {
        if l < live.len() && r < applied.len() {
            let pe = &live_pes[l];
            if *pe == applied_pes[r] {
                done.insert(pe);
                out.push(merge_item(
                    schema,
                    element,
                    &live_at,
                    live,
                    pe,
                    &applied[r],
                    path,
                )?);
                l += 1;
                r += 1;
                next_shared = shared.next();
                continue;
            }
            // A shared item that must wait for its place in the applied order.
            if applied_at.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                l += 1;
                continue;
            }
        }
        if l < live.len() {
            let pe = &live_pes[l];
            if !applied_at.contains_key(pe) {
                out.push(live[l].clone());
                l += 1;
                continue;
            }
            if done.contains(pe) || r >= applied.len() {
                l += 1;
            }
        }
        if r < applied.len() {
            let pe = &applied_pes[r];
            done.insert(pe);
            out.push(merge_item(
                schema,
                element,
                &live_at,
                live,
                pe,
                &applied[r],
                path,
            )?);
            r += 1;
            if next_shared == Some(pe) {
                next_shared = shared.next();
            }
        }
    }
    Ok(Value::Array(out))
}

fn merge_item(
    schema: &Schema,
    element: &TypeRef,
    live_at: &BTreeMap<&PathElement, Occurs>,
    live: &[Value],
    pe: &PathElement,
    applied: &Value,
    path: &mut Vec<PathElement>,
) -> Result<Value, Error> {
    match live_at.get(pe) {
        Some(&Occurs::Once(i)) => {
            path.push(pe.clone());
            let merged = merge_at(schema, element, &live[i], applied, path);
            path.pop();
            merged
        }
        // Absent, or duplicated in live: duplicates are not merged into, as upstream.
        _ => Ok(applied.clone()),
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
