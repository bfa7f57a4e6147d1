//! An OpenAPI v3.0 schema of a CRD rewritten as a JSON Schema (draft 7) the `jsonschema` crate
//! compiles: `nullable` and `x-kubernetes-int-or-string` become types, boolean exclusive bounds
//! become numeric ones, formats upstream does not check are dropped, and so is everything that
//! does not validate (descriptions, defaults, x-kubernetes-* extensions).

use super::formats::{self, Check};
use serde_json::{json, Map, Value};

/// Formats are renamed with this prefix, so the crate's own checks of the same names never
/// apply; the error mapping strips it again.
pub(super) const FORMAT_PREFIX: &str = "k8s:";

pub(super) struct Converted {
    pub schema: Value,
    /// The renamed formats the schema uses, with their checks.
    pub formats: Formats,
}

/// Converts `schema`; at a resource root, only the name and generateName constraints of
/// metadata are kept, since the rest of metadata is the Store's to check.
pub(super) fn convert(schema: &Value, resource_root: bool) -> Converted {
    let mut formats = Vec::new();
    let schema = node(schema, resource_root, &mut formats);
    Converted { schema, formats }
}

pub(super) type Formats = Vec<(String, Check)>;

fn node(schema: &Value, resource_root: bool, formats: &mut Formats) -> Value {
    let Some(map) = schema.as_object() else {
        return json!({});
    };
    let mut out = Map::new();
    if let Some(ty) = types(map) {
        out.insert("type".into(), ty);
    }
    if let Some(format) = map.get("format").and_then(Value::as_str) {
        if let Some(check) = formats::checker(&format.replace('-', "")) {
            let name = format!("{FORMAT_PREFIX}{format}");
            if !formats.iter().any(|(n, _)| *n == name) {
                formats.push((name.clone(), check));
            }
            out.insert("format".into(), Value::String(name));
        }
    }
    bound(map, &mut out, "maximum", "exclusiveMaximum");
    bound(map, &mut out, "minimum", "exclusiveMinimum");
    for keyword in [
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "multipleOf",
        "maxProperties",
        "minProperties",
        "required",
    ] {
        if let Some(v) = map.get(keyword) {
            out.insert(keyword.into(), v.clone());
        }
    }
    // An empty enum restricts nothing upstream (JSON Schema's would refuse every value).
    if let Some(values) = map
        .get("enum")
        .filter(|e| e.as_array().is_some_and(|a| !a.is_empty()))
    {
        out.insert("enum".into(), values.clone());
    }
    if let Some(props) = map.get("properties").and_then(Value::as_object) {
        let converted: Map<String, Value> = props
            .iter()
            .map(|(name, prop)| {
                let v = if resource_root && name == "metadata" {
                    metadata(prop, formats)
                } else {
                    node(prop, false, formats)
                };
                (name.clone(), v)
            })
            .collect();
        out.insert("properties".into(), Value::Object(converted));
    }
    match map.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            out.insert("additionalProperties".into(), Value::Bool(*b));
        }
        Some(v @ Value::Object(_)) => {
            out.insert("additionalProperties".into(), node(v, false, formats));
        }
        _ => {}
    }
    match map.get("items") {
        Some(v @ Value::Object(_)) => {
            out.insert("items".into(), node(v, false, formats));
        }
        Some(Value::Array(items)) => {
            let items = items.iter().map(|i| node(i, false, formats)).collect();
            out.insert("items".into(), Value::Array(items));
        }
        _ => {}
    }
    for keyword in ["allOf", "anyOf", "oneOf"] {
        if let Some(list) = map.get(keyword).and_then(Value::as_array) {
            let list = list.iter().map(|s| node(s, false, formats)).collect();
            out.insert(keyword.into(), Value::Array(list));
        }
    }
    if let Some(not) = map.get("not") {
        out.insert("not".into(), node(not, false, formats));
    }
    Value::Object(out)
}

/// The JSON Schema `type`: int-or-string is either, and nullable adds null.
fn types(map: &Map<String, Value>) -> Option<Value> {
    let mut types: Vec<&str> = if map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
    {
        vec!["integer", "string"]
    } else {
        match map.get("type").and_then(Value::as_str) {
            Some(ty) if !ty.is_empty() => vec![ty],
            _ => return None,
        }
    };
    if map.get("nullable") == Some(&Value::Bool(true)) {
        types.push("null");
    }
    Some(match types.as_slice() {
        [one] => Value::String(one.to_string()),
        many => Value::Array(many.iter().map(|t| Value::String(t.to_string())).collect()),
    })
}

/// OpenAPI v3.0's `maximum` with a boolean `exclusiveMaximum` as JSON Schema's two keywords.
fn bound(map: &Map<String, Value>, out: &mut Map<String, Value>, inclusive: &str, exclusive: &str) {
    let Some(limit) = map.get(inclusive).filter(|v| v.is_number()) else {
        return;
    };
    let keyword = if map.get(exclusive) == Some(&Value::Bool(true)) {
        exclusive
    } else {
        inclusive
    };
    out.insert(keyword.into(), limit.clone());
}

/// metadata at a resource root: only what it says about name and generateName.
fn metadata(schema: &Value, formats: &mut Formats) -> Value {
    let mut props = Map::new();
    if let Some(given) = schema.get("properties").and_then(Value::as_object) {
        for name in ["name", "generateName"] {
            if let Some(prop) = given.get(name) {
                props.insert(name.into(), node(prop, false, formats));
            }
        }
    }
    json!({ "properties": props })
}
