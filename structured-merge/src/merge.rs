//! Merging an applied configuration into the live object under the schema: what server-side
//! apply writes before it prunes the fields the applier gave up.

use crate::list_item::{item_element, value_error};
use crate::path::PathElement;
use crate::schema::{ListKind, Node, Schema, TypeRef};
use crate::Error;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// `applied` merged into `live`: structs and granular maps field by field, map lists by key
/// and set lists by value (live order first, then the applied elements live lacks), and
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
    let mut out = live.clone();
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
    Ok(Value::Object(out))
}

fn index_items(
    schema: &Schema,
    element: &TypeRef,
    kind: &ListKind,
    items: &[Value],
    path: &[PathElement],
) -> Result<Vec<PathElement>, Error> {
    let mut seen = BTreeMap::new();
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let pe = item_element(schema, element, kind, index, item, path)?;
            if seen.insert(pe.clone(), index).is_some() {
                return Err(value_error(path, format!("duplicate entries for key {pe}")));
            }
            Ok(pe)
        })
        .collect()
}

fn merge_items(
    schema: &Schema,
    element: &TypeRef,
    kind: &ListKind,
    live: &[Value],
    applied: &[Value],
    path: &mut Vec<PathElement>,
) -> Result<Value, Error> {
    let live_keys = index_items(schema, element, kind, live, path)?;
    let applied_keys = index_items(schema, element, kind, applied, path)?;
    let applied_at: BTreeMap<&PathElement, usize> = applied_keys
        .iter()
        .enumerate()
        .map(|(i, pe)| (pe, i))
        .collect();
    let mut out = Vec::with_capacity(live.len() + applied.len());
    for (pe, l) in live_keys.iter().zip(live) {
        match applied_at.get(pe) {
            Some(&i) => {
                path.push(pe.clone());
                out.push(merge_at(schema, element, l, &applied[i], path)?);
                path.pop();
            }
            None => out.push(l.clone()),
        }
    }
    let live_set: BTreeMap<&PathElement, ()> = live_keys.iter().map(|pe| (pe, ())).collect();
    for (pe, a) in applied_keys.iter().zip(applied) {
        if !live_set.contains_key(pe) {
            out.push(a.clone());
        }
    }
    Ok(Value::Array(out))
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
