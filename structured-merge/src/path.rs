//! Path elements and paths: how a field set names one node of an object.

use crate::value_order::{canonical_json, compare, compare_fields};
use serde_json::Value;
use std::cmp::Ordering;
use std::fmt;

/// The key of one element of a map-typed list: its key fields' values, sorted by field name.
#[derive(Debug, Clone)]
pub struct KeyFields(Vec<(String, Value)>);

impl KeyFields {
    /// Sorts the fields by name so two keys built in different orders are equal.
    pub fn new(mut fields: Vec<(String, Value)>) -> Self {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        KeyFields(fields)
    }

    pub fn fields(&self) -> &[(String, Value)] {
        &self.0
    }

    /// The key as a JSON object, e.g. `{"name":"nginx"}`.
    pub fn to_object(&self) -> Value {
        Value::Object(self.0.iter().cloned().collect())
    }
}

/// One step of a path: which child of an object or list it selects.
#[derive(Debug, Clone)]
pub enum PathElement {
    /// A field of a struct or an entry of a map.
    Field(String),
    /// The element of a map-typed list whose key fields have these values.
    Key(KeyFields),
    /// The element of a set-typed list with this value.
    Value(Value),
    /// The element at this position of a list that has neither keys nor set semantics.
    Index(usize),
}

impl PathElement {
    pub fn field(name: impl Into<String>) -> Self {
        PathElement::Field(name.into())
    }

    /// A key from (field, value) pairs, in any order.
    pub fn key<I, K>(fields: I) -> Self
    where
        I: IntoIterator<Item = (K, Value)>,
        K: Into<String>,
    {
        PathElement::Key(KeyFields::new(
            fields.into_iter().map(|(k, v)| (k.into(), v)).collect(),
        ))
    }

    fn kind_rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The FieldsV1 spelling: `f:name`, `k:{"name":"nginx"}`, `v:"x"`, `i:0`.
    pub fn to_fieldsv1_key(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(key) => {
                let mut s = String::from("k:");
                canonical_json(&key.to_object(), &mut s);
                s
            }
            PathElement::Value(v) => {
                let mut s = String::from("v:");
                canonical_json(v, &mut s);
                s
            }
            PathElement::Index(i) => format!("i:{i}"),
        }
    }
}

// Upstream's order: fields, then keys, then values, then indices; within a kind by content.
impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => compare_fields(
                a.0.iter().map(|(k, v)| (k.as_str(), v)),
                b.0.iter().map(|(k, v)| (k.as_str(), v)),
            ),
            (PathElement::Value(a), PathElement::Value(b)) => compare(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.kind_rank().cmp(&other.kind_rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

// Equality follows the order so that 1 and 1.0 name the same set element, as upstream.
impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

fn scalar_text(v: &Value) -> String {
    let mut s = String::new();
    canonical_json(v, &mut s);
    s
}

/// Upstream's human form, used in conflict messages: `.spec.containers[name="nginx"].image`.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(key) => {
                let parts: Vec<String> = key
                    .0
                    .iter()
                    .map(|(k, v)| format!("{k}={}", scalar_text(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={}]", scalar_text(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A sequence of path elements from the root of an object.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Path(pub Vec<PathElement>);

impl Path {
    pub fn elements(&self) -> &[PathElement] {
        &self.0
    }
}

impl From<Vec<PathElement>> for Path {
    fn from(v: Vec<PathElement>) -> Self {
        Path(v)
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in &self.0 {
            write!(f, "{pe}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_sort_fields_keys_values_indices() {
        let mut v = [
            PathElement::Index(0),
            PathElement::Value(json!("a")),
            PathElement::key([("name", json!("a"))]),
            PathElement::field("z"),
        ];
        v.sort();
        let kinds: Vec<u8> = v.iter().map(PathElement::kind_rank).collect();
        assert_eq!(kinds, vec![0, 1, 2, 3]);
    }

    #[test]
    fn key_fields_are_sorted_whatever_the_input_order() {
        let a = PathElement::key([("protocol", json!("TCP")), ("containerPort", json!(80))]);
        let b = PathElement::key([("containerPort", json!(80)), ("protocol", json!("TCP"))]);
        assert_eq!(a, b);
        assert_eq!(
            a.to_fieldsv1_key(),
            r#"k:{"containerPort":80,"protocol":"TCP"}"#
        );
    }

    #[test]
    fn int_and_float_values_are_the_same_element() {
        assert_eq!(PathElement::Value(json!(1)), PathElement::Value(json!(1.0)));
    }

    #[test]
    fn path_displays_as_upstream() {
        let p = Path(vec![
            PathElement::field("spec"),
            PathElement::field("containers"),
            PathElement::key([("name", json!("nginx"))]),
            PathElement::field("image"),
        ]);
        assert_eq!(p.to_string(), r#".spec.containers[name="nginx"].image"#);
        let s = Path(vec![
            PathElement::field("finalizers"),
            PathElement::Value(json!("a")),
        ]);
        assert_eq!(s.to_string(), r#".finalizers[="a"]"#);
        assert_eq!(Path(vec![PathElement::Index(2)]).to_string(), "[2]");
    }
}
