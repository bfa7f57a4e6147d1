//! How an element of a list is named in a path, by the list's kind.

use crate::path::{Path, PathElement};
use crate::schema::{ListKind, Node, Schema, TypeRef};
use crate::Error;
use serde_json::Value;
use std::collections::BTreeMap;

pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

pub(crate) fn value_error(path: &[PathElement], message: String) -> Error {
    let path = Path(path.to_vec()).to_string();
    Error::Value {
        path: if path.is_empty() { ".".into() } else { path },
        message,
    }
}

/// The path element of `item`, the `index`th element of a list of `kind`: its key fields
/// (an absent key field takes its schema default), its value, or its index.
pub(crate) fn item_element(
    schema: &Schema,
    element: &TypeRef,
    kind: &ListKind,
    index: usize,
    item: &Value,
    at: &[PathElement],
) -> Result<PathElement, Error> {
    let fail = |message: String| value_error(at, format!("element {index}: {message}"));
    match kind {
        ListKind::Atomic => Ok(PathElement::Index(index)),
        ListKind::Set => match item {
            Value::Array(_) | Value::Object(_) => Err(fail(format!(
                "a list of type set holds scalars, found a {}",
                kind_of(item)
            ))),
            scalar => Ok(PathElement::Value(scalar.clone())),
        },
        ListKind::Map { keys } => {
            let Value::Object(fields) = item else {
                return Err(fail(format!(
                    "a list of type map holds maps, found a {}",
                    kind_of(item)
                )));
            };
            let defaults = match schema.resolve(element)? {
                Node::Struct { defaults, .. } => Some(defaults),
                _ => None,
            };
            let mut key = Vec::with_capacity(keys.len());
            for name in keys {
                let value = fields
                    .get(name)
                    .or_else(|| defaults.and_then(|d| d.get(name)))
                    .ok_or_else(|| {
                        fail(format!(
                            "associative list with keys has an element that omits key field \
                             {name:?} (and doesn't have default value)"
                        ))
                    })?;
                key.push((name.clone(), value.clone()));
            }
            Ok(PathElement::key(key))
        }
    }
}

/// The path elements of a list's items, in list order. Duplicates are an error unless
/// `allow_duplicates`: upstream tolerates them in live objects, never in a configuration.
pub(crate) fn index_items(
    schema: &Schema,
    element: &TypeRef,
    kind: &ListKind,
    items: &[Value],
    at: &[PathElement],
    allow_duplicates: bool,
) -> Result<Vec<PathElement>, Error> {
    let pes = items
        .iter()
        .enumerate()
        .map(|(index, item)| item_element(schema, element, kind, index, item, at))
        .collect::<Result<Vec<_>, _>>()?;
    if !allow_duplicates && *kind != ListKind::Atomic {
        let mut seen = std::collections::BTreeSet::new();
        for pe in &pes {
            if !seen.insert(pe) {
                return Err(value_error(at, format!("duplicate entries for key {pe}")));
            }
        }
    }
    Ok(pes)
}

/// Where each distinct path element first occurs, and whether it occurs more than once.
pub(crate) fn positions(pes: &[PathElement]) -> BTreeMap<&PathElement, Occurs> {
    let mut at = BTreeMap::new();
    for (i, pe) in pes.iter().enumerate() {
        at.entry(pe)
            .and_modify(|o| *o = Occurs::Many)
            .or_insert(Occurs::Once(i));
    }
    at
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Occurs {
    Once(usize),
    Many,
}
