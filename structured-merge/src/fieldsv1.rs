//! FieldsV1: the JSON form of a field set stored in `metadata.managedFields[].fieldsV1`.
//! Each level is an object keyed by serialised path elements (`f:`, `k:`, `v:`, `i:`); a
//! leaf is `{}`, and `".": {}` marks a node that is a member and also has members below it.

use crate::error::Error;
use crate::path::{KeyFields, PathElement};
use crate::set::Set;
use serde_json::{Map, Value};

const SELF_MARKER: &str = ".";

/// The FieldsV1 text of a set, byte for byte as upstream writes it: the `"."` marker first,
/// then entries in path element order.
pub fn to_json_string(set: &Set) -> String {
    let mut out = String::from("{");
    write_level(set, false, &mut out);
    out.push('}');
    out
}

/// The FieldsV1 object of a set (key order is whatever `serde_json::Map` keeps), built
/// directly: objects' managedFields are encoded on every write.
pub fn to_value(set: &Set) -> Value {
    Value::Object(value_level(set, false))
}

fn value_level(set: &Set, include_self: bool) -> Map<String, Value> {
    let mut out = Map::new();
    for pe in set.members().filter(|pe| set.child(pe).is_none()) {
        out.insert(pe.to_fieldsv1_key(), Value::Object(Map::new()));
    }
    for (pe, sub) in set.children() {
        let level = value_level(sub, set.is_member(pe));
        out.insert(pe.to_fieldsv1_key(), Value::Object(level));
    }
    if include_self && !out.is_empty() {
        out.insert(SELF_MARKER.to_string(), Value::Object(Map::new()));
    }
    out
}

fn write_entry_key(pe: &PathElement, first: &mut bool, out: &mut String) {
    if !*first {
        out.push(',');
    }
    *first = false;
    out.push_str(&Value::String(pe.to_fieldsv1_key()).to_string());
    out.push(':');
}

fn write_level(set: &Set, include_self: bool, out: &mut String) {
    let mut entries: Vec<(&PathElement, Option<&Set>)> = set
        .members()
        .filter(|pe| set.child(pe).is_none())
        .map(|pe| (pe, None))
        .chain(set.children().map(|(pe, sub)| (pe, Some(sub))))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut first = true;
    if include_self && !entries.is_empty() {
        out.push_str("\".\":{}");
        first = false;
    }
    for (pe, sub) in entries {
        write_entry_key(pe, &mut first, out);
        out.push('{');
        if let Some(sub) = sub {
            write_level(sub, set.is_member(pe), out);
        }
        out.push('}');
    }
}

/// Parses FieldsV1 text.
pub fn from_json_str(text: &str) -> Result<Set, Error> {
    let v: Value = serde_json::from_str(text).map_err(|e| Error::FieldsV1(e.to_string()))?;
    from_value(&v)
}

/// Reads a FieldsV1 object. Entries of a kind this version does not know (a prefix other than
/// `f`, `k`, `v`, `i`) are dropped, as upstream does, so newer writers do not break readers.
pub fn from_value(v: &Value) -> Result<Set, Error> {
    let (set, _) = read_level(v, "")?;
    Ok(set)
}

/// Returns the subtree at `v` and whether the node itself is a member.
fn read_level(v: &Value, at: &str) -> Result<(Set, bool), Error> {
    let Value::Object(map) = v else {
        return Err(Error::FieldsV1(format!(
            "expected an object at {:?}, found {}",
            if at.is_empty() { "<root>" } else { at },
            kind_name(v)
        )));
    };
    let mut set = Set::new();
    let mut is_member = false;
    for (key, sub) in map {
        if key == SELF_MARKER {
            is_member = true;
            continue;
        }
        let Some(pe) = parse_element(key)? else {
            continue;
        };
        let (grandchildren, child_is_member) = read_level(sub, key)?;
        if child_is_member {
            set.insert_member(pe.clone());
        }
        set.attach(pe, grandchildren);
    }
    // A node with nothing below it is a leaf, hence a member.
    if map.is_empty() || set.is_empty() {
        is_member = true;
    }
    Ok((set, is_member))
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses one serialised path element; `None` for an unknown kind.
pub fn parse_element(key: &str) -> Result<Option<PathElement>, Error> {
    let bad = |why: String| Error::FieldsV1(format!("path element {key:?}: {why}"));
    let (kind, body) = match key.split_once(':') {
        Some((kind, body)) if kind.len() == 1 => (kind, body),
        _ => return Err(bad("expected a one-letter kind and a colon".into())),
    };
    let pe = match kind {
        "f" => PathElement::Field(body.to_string()),
        "v" => PathElement::Value(serde_json::from_str(body).map_err(|e| bad(e.to_string()))?),
        "k" => {
            let v: Value = serde_json::from_str(body).map_err(|e| bad(e.to_string()))?;
            let Value::Object(fields) = v else {
                return Err(bad("a key must be a JSON object".into()));
            };
            PathElement::Key(KeyFields::new(fields.into_iter().collect()))
        }
        "i" => PathElement::Index(body.parse().map_err(|e| bad(format!("{e}")))?),
        _ => return Ok(None),
    };
    Ok(Some(pe))
}

#[cfg(test)]
#[path = "fieldsv1_tests.rs"]
mod tests;
