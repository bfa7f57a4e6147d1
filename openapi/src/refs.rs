//! References between definitions: the one canonical form every schema is kept in
//! (`#/definitions/NAME`, Swagger 2.0's), and the walks over it: which definitions a document
//! needs, rewriting for OpenAPI v3, inlining for validation.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

const PREFIX: &str = "#/definitions/";

/// Where definitions are looked up: the built-in ones, the custom ones, or both.
pub(crate) trait Lookup {
    fn lookup(&self, name: &str) -> Option<&Value>;
}

impl Lookup for BTreeMap<String, Value> {
    fn lookup(&self, name: &str) -> Option<&Value> {
        self.get(name)
    }
}

/// Custom definitions over built-in ones (their names never meet: a custom resource's group
/// differs from every built-in group).
pub(crate) struct Layered<'a> {
    pub custom: &'a BTreeMap<String, Value>,
    pub builtin: &'a crate::builtin::Definitions,
}

impl Lookup for Layered<'_> {
    fn lookup(&self, name: &str) -> Option<&Value> {
        self.custom.get(name).or_else(|| self.builtin.get(name))
    }
}

pub(crate) fn definition_ref(name: &str) -> Value {
    json!({ "$ref": format!("{PREFIX}{name}") })
}

fn ref_name(schema: &Map<String, Value>) -> Option<&str> {
    schema.get("$ref")?.as_str()?.strip_prefix(PREFIX)
}

/// The named definitions and every definition they reach.
pub(crate) fn closure<'a>(
    roots: impl IntoIterator<Item = &'a str>,
    definitions: &impl Lookup,
) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut pending: Vec<String> = roots.into_iter().map(str::to_string).collect();
    while let Some(name) = pending.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(schema) = definitions.lookup(&name) {
            walk_refs(schema, &mut |target| {
                if !seen.contains(target) {
                    pending.push(target.to_string());
                }
            });
        }
    }
    seen
}

/// Calls `visit` with the name of every definition `schema` refers to.
pub(crate) fn walk_refs(schema: &Value, visit: &mut dyn FnMut(&str)) {
    match schema {
        Value::Object(map) => {
            if let Some(name) = ref_name(map) {
                visit(name);
            }
            for value in map.values() {
                walk_refs(value, visit);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| walk_refs(v, visit)),
        _ => {}
    }
}

/// The schema with its references pointing under `prefix` (`#/components/schemas/`). OpenAPI
/// v3 ignores the siblings of a `$ref`, so, as upstream does, a reference carrying its own
/// description (or extensions) becomes an `allOf` of the one reference.
pub(crate) fn to_v3(schema: &Value, prefix: &str) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            let mut target = None;
            for (key, value) in map {
                match (key.as_str(), value.as_str()) {
                    ("$ref", Some(r)) => {
                        let name = r.strip_prefix(PREFIX).unwrap_or(r);
                        target = Some(format!("{prefix}{name}"));
                    }
                    _ => {
                        out.insert(key.clone(), to_v3(value, prefix));
                    }
                }
            }
            match target {
                Some(target) if out.is_empty() => json!({ "$ref": target }),
                Some(target) => {
                    out.insert("allOf".into(), json!([{ "$ref": target }]));
                    Value::Object(out)
                }
                None => Value::Object(out),
            }
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| to_v3(v, prefix)).collect()),
        other => other.clone(),
    }
}

/// The definition with every reference replaced by the schema it names, so a validator
/// needs nothing else. A reference back into a definition being inlined (JSONSchemaProps
/// holds itself) is cut to an object that keeps any field.
pub(crate) fn resolve(name: &str, definitions: &impl Lookup) -> Option<Value> {
    let schema = definitions.lookup(name)?;
    let mut stack = vec![name.to_string()];
    Some(inline(schema, definitions, &mut stack))
}

fn inline(schema: &Value, definitions: &impl Lookup, stack: &mut Vec<String>) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            if let Some(name) = ref_name(map) {
                let target = match definitions.lookup(name) {
                    Some(_) if stack.iter().any(|s| s == name) => recursive_cut(),
                    Some(target) => {
                        stack.push(name.to_string());
                        let resolved = inline(target, definitions, stack);
                        stack.pop();
                        resolved
                    }
                    None => recursive_cut(),
                };
                if let Value::Object(target) = target {
                    out = target;
                }
            }
            // The referring schema's own words (a field's description) win over the target's.
            for (key, value) in map {
                if key != "$ref" {
                    out.insert(key.clone(), inline(value, definitions, stack));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| inline(v, definitions, stack))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn recursive_cut() -> Value {
    json!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs() -> BTreeMap<String, Value> {
        BTreeMap::from([
            (
                "A".to_string(),
                json!({"properties": {"b": {"$ref": "#/definitions/B", "description": "the b"}}}),
            ),
            (
                "B".to_string(),
                json!({"type": "object", "description": "B", "properties": {"a": {"$ref": "#/definitions/A"}}}),
            ),
            ("C".to_string(), json!({"type": "string"})),
        ])
    }

    #[test]
    fn closure_follows_references_and_stops_on_cycles() {
        let names = closure(["A"], &defs());
        assert_eq!(names.into_iter().collect::<Vec<_>>(), ["A", "B"]);
    }

    #[test]
    fn v3_wraps_references_with_siblings() {
        let out = to_v3(&defs()["A"], "#/components/schemas/");
        assert_eq!(
            out["properties"]["b"],
            json!({"allOf": [{"$ref": "#/components/schemas/B"}], "description": "the b"})
        );
        let bare = to_v3(&defs()["B"], "#/components/schemas/");
        assert_eq!(
            bare["properties"]["a"],
            json!({"$ref": "#/components/schemas/A"})
        );
    }

    #[test]
    fn resolve_inlines_and_cuts_cycles() {
        let out = resolve("A", &defs()).expect("A exists");
        assert_eq!(out["properties"]["b"]["description"], "the b");
        assert_eq!(out["properties"]["b"]["type"], "object");
        assert_eq!(
            out["properties"]["b"]["properties"]["a"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
    }
}
