//! The set of fields a value sets, under its schema: what an applier owns when it applies
//! that value.

use crate::list_item::{index_items, kind_of, positions, value_error, Occurs};
use crate::path::PathElement;
use crate::schema::{ListKind, Node, Schema, TypeRef};
use crate::set::Set;
use crate::Error;
use serde_json::{Map, Value};

/// Every field `value` (of type `root`) sets. Scalars and atomic lists and maps are leaves;
/// elements of set and map lists and entries of maps are members themselves as well as the
/// parents of their own fields; struct fields are only parents.
/// Duplicate keys or values in a set or map list are an error: this is the check an applied
/// configuration must pass.
pub fn to_field_set(schema: &Schema, root: &TypeRef, value: &Value) -> Result<Set, Error> {
    field_set(schema, root, value, false)
}

/// Like `to_field_set`, for a live object: an item whose key or value occurs more than once
/// is owned as a whole (a member with nothing below it), as upstream does.
pub fn to_field_set_allowing_duplicates(
    schema: &Schema,
    root: &TypeRef,
    value: &Value,
) -> Result<Set, Error> {
    field_set(schema, root, value, true)
}

fn field_set(
    schema: &Schema,
    root: &TypeRef,
    value: &Value,
    allow_duplicates: bool,
) -> Result<Set, Error> {
    let mut walker = Walker {
        schema,
        allow_duplicates,
        set: Set::new(),
        path: Vec::new(),
    };
    walker.walk(root, value)?;
    Ok(walker.set)
}

struct Walker<'a> {
    schema: &'a Schema,
    allow_duplicates: bool,
    set: Set,
    path: Vec<PathElement>,
}

impl Walker<'_> {
    fn walk(&mut self, tr: &TypeRef, value: &Value) -> Result<(), Error> {
        let node = self.schema.resolve(tr)?;
        self.walk_node(node, value)
    }

    fn walk_node(&mut self, node: Node<'_>, value: &Value) -> Result<(), Error> {
        match node {
            Node::Scalar => match value {
                Value::Array(_) | Value::Object(_) => Err(self.mismatch("a scalar", value)),
                _ => {
                    self.set.insert(&self.path);
                    Ok(())
                }
            },
            Node::AtomicUntyped => {
                self.set.insert(&self.path);
                Ok(())
            }
            Node::Deduced => match value {
                Value::Object(entries) => self.walk_entries(entries, |_| None, Some(Rest::Deduced)),
                _ => {
                    self.set.insert(&self.path);
                    Ok(())
                }
            },
            Node::Struct {
                fields,
                rest,
                atomic,
                ..
            } => match value {
                Value::Null => Ok(()),
                Value::Object(_) if atomic => {
                    self.set.insert(&self.path);
                    Ok(())
                }
                Value::Object(entries) => {
                    self.walk_entries(entries, |name| fields.get(name), rest.map(Rest::Typed))
                }
                other => Err(self.mismatch("a map", other)),
            },
            Node::Map { value: of, atomic } => match value {
                Value::Null => Ok(()),
                Value::Object(_) if atomic => {
                    self.set.insert(&self.path);
                    Ok(())
                }
                Value::Object(entries) => {
                    self.walk_entries(entries, |_| None, Some(Rest::Typed(of)))
                }
                other => Err(self.mismatch("a map", other)),
            },
            Node::List { element, kind } => match value {
                Value::Null => Ok(()),
                Value::Array(_) if *kind == ListKind::Atomic => {
                    self.set.insert(&self.path);
                    Ok(())
                }
                Value::Array(items) => self.walk_items(element, kind, items),
                other => Err(self.mismatch("a list", other)),
            },
        }
    }

    fn walk_entries<'s>(
        &mut self,
        entries: &Map<String, Value>,
        declared: impl Fn(&str) -> Option<&'s TypeRef>,
        rest: Option<Rest<'s>>,
    ) -> Result<(), Error> {
        for (name, child) in entries {
            self.path.push(PathElement::Field(name.clone()));
            if let Some(tr) = declared(name) {
                self.walk(tr, child)?;
                // Upstream owns a declared field set to null or `{}` as a leaf, so that an
                // applier can hold on to an empty struct.
                if child.is_null() || child.as_object().is_some_and(Map::is_empty) {
                    self.set.insert(&self.path);
                }
            } else {
                match rest {
                    Some(Rest::Typed(tr)) => self.walk(tr, child)?,
                    Some(Rest::Deduced) => self.walk_node(Node::Deduced, child)?,
                    None => {
                        return Err(value_error(
                            &self.path,
                            "field not declared in schema".into(),
                        ))
                    }
                }
                self.set.insert(&self.path);
            }
            self.path.pop();
        }
        Ok(())
    }

    fn walk_items(
        &mut self,
        element: &TypeRef,
        kind: &ListKind,
        items: &[Value],
    ) -> Result<(), Error> {
        let pes = index_items(
            self.schema,
            element,
            kind,
            items,
            &self.path,
            self.allow_duplicates,
        )?;
        let at = positions(&pes);
        for (pe, item) in pes.iter().zip(items) {
            let duplicated = at.get(pe) == Some(&Occurs::Many);
            self.path.push(pe.clone());
            if !duplicated {
                self.walk(element, item)?;
            }
            self.set.insert(&self.path);
            self.path.pop();
        }
        Ok(())
    }

    fn mismatch(&self, expected: &str, found: &Value) -> Error {
        value_error(
            &self.path,
            format!("expected {expected}, found a {}", kind_of(found)),
        )
    }
}

#[derive(Clone, Copy)]
enum Rest<'s> {
    Typed(&'s TypeRef),
    Deduced,
}

#[cfg(test)]
#[path = "to_field_set_tests.rs"]
mod tests;
