//! Builds a `Schema` from OpenAPI v3 (`components.schemas`) or v2 (`definitions`) JSON, the
//! way upstream's schema conversion reads Kubernetes' extensions.

use crate::error::Error;
use crate::schema::{
    Atom, ListKind, ListType, MapType, Relationship, Schema, StructType, TypeRef, Untyped,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Types whose values the published schemas describe too loosely (a string that is also a
/// number, an embedded object of any kind); upstream treats them as atomic untyped values.
const ATOMIC_UNTYPED_DEFINITIONS: [&str; 2] = [
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
];

/// Converts a whole document, taking its definitions from `components.schemas` (v3) or
/// `definitions` (v2).
pub fn from_document(doc: &Value) -> Result<Schema, Error> {
    let defs = doc
        .pointer("/components/schemas")
        .or_else(|| doc.get("definitions"))
        .and_then(Value::as_object)
        .ok_or_else(|| {
            Error::Schema("document has neither components.schemas nor definitions".into())
        })?;
    from_definitions(defs)
}

/// Converts named definitions; a definition that is only a `$ref` is an alias and is skipped,
/// as upstream does.
pub fn from_definitions(defs: &Map<String, Value>) -> Result<Schema, Error> {
    let mut schema = Schema::new();
    for (name, def) in defs {
        if def.get("$ref").is_some() {
            continue;
        }
        let atom = if ATOMIC_UNTYPED_DEFINITIONS.contains(&name.as_str()) {
            Atom::Untyped(Untyped::Atomic)
        } else {
            convert(def, false, name)?
        };
        schema.insert(name.clone(), atom);
    }
    Ok(schema)
}

/// Converts one self-contained schema (a CRD version's `openAPIV3Schema`) into a type called
/// `name`.
pub fn from_root_schema(root: &Value, name: &str) -> Result<Schema, Error> {
    let mut schema = Schema::new();
    schema.insert(name, convert(root, false, name)?);
    Ok(schema)
}

fn object<'a>(v: &'a Value, at: &str) -> Result<&'a Map<String, Value>, Error> {
    v.as_object()
        .ok_or_else(|| Error::Schema(format!("{at}: a schema must be an object")))
}

fn ext_str<'a>(s: &'a Map<String, Value>, key: &str, at: &str) -> Result<Option<&'a str>, Error> {
    match s.get(key) {
        None => Ok(None),
        Some(Value::String(v)) => Ok(Some(v)),
        Some(_) => Err(Error::Schema(format!("{at}: {key} must be a string"))),
    }
}

fn flag(s: &Map<String, Value>, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn schema_type(s: &Map<String, Value>) -> Option<&str> {
    match s.get("type")? {
        Value::String(t) => Some(t),
        // Swagger 2 allows a list of types; Kubernetes only ever publishes one.
        Value::Array(ts) => ts.first().and_then(Value::as_str),
        _ => None,
    }
}

/// `preserve` is inherited: below `x-kubernetes-preserve-unknown-fields: true` every object
/// keeps fields it does not declare.
fn convert(v: &Value, preserve: bool, at: &str) -> Result<Atom, Error> {
    let s = object(v, at)?;
    let preserve = preserve || flag(s, "x-kubernetes-preserve-unknown-fields");
    if flag(s, "x-kubernetes-int-or-string") {
        return Ok(Atom::Untyped(Untyped::Atomic));
    }
    match schema_type(s) {
        Some("object") => convert_object(s, preserve, at),
        Some("array") => convert_list(s, preserve, at),
        Some("string") if s.get("format").and_then(Value::as_str) == Some("int-or-string") => {
            Ok(Atom::Untyped(Untyped::Atomic))
        }
        Some("string" | "integer" | "number" | "boolean") => Ok(Atom::Scalar),
        Some(other) => Err(Error::Schema(format!("{at}: unrecognized type {other:?}"))),
        None if s.contains_key("properties") || s.contains_key("additionalProperties") => {
            convert_object(s, preserve, at)
        }
        None if s.contains_key("items") => convert_list(s, preserve, at),
        None => Ok(Atom::Untyped(Untyped::Deduced)),
    }
}

/// A property or item: a `$ref` (bare or as the single entry of `allOf`, as v3 documents
/// write references that carry a default) becomes a named reference, anything else inline.
fn type_ref(v: &Value, preserve: bool, at: &str) -> Result<TypeRef, Error> {
    let s = object(v, at)?;
    let reference = s.get("$ref").or_else(|| match s.get("allOf") {
        Some(Value::Array(all)) if all.len() == 1 => all[0].get("$ref"),
        _ => None,
    });
    match reference {
        Some(Value::String(r)) => {
            let name = r.rsplit('/').next().unwrap_or(r.as_str());
            if name.is_empty() {
                return Err(Error::Schema(format!("{at}: empty $ref {r:?}")));
            }
            Ok(TypeRef::Named {
                name: name.to_string(),
                relationship: map_relationship(s, at)?,
            })
        }
        Some(_) => Err(Error::Schema(format!("{at}: $ref must be a string"))),
        None => Ok(TypeRef::inline(convert(v, preserve, at)?)),
    }
}

fn map_relationship(s: &Map<String, Value>, at: &str) -> Result<Option<Relationship>, Error> {
    match ext_str(s, "x-kubernetes-map-type", at)? {
        None => Ok(None),
        Some("atomic") => Ok(Some(Relationship::Atomic)),
        Some("granular") => Ok(Some(Relationship::Separable)),
        Some(other) => Err(Error::Schema(format!(
            "{at}: unknown x-kubernetes-map-type {other:?}"
        ))),
    }
}

fn deduced() -> TypeRef {
    TypeRef::inline(Atom::Untyped(Untyped::Deduced))
}

fn convert_object(s: &Map<String, Value>, preserve: bool, at: &str) -> Result<Atom, Error> {
    let relationship = map_relationship(s, at)?.unwrap_or(Relationship::Separable);
    let mut fields = BTreeMap::new();
    let mut defaults = BTreeMap::new();
    let required = match s.get("required") {
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Default::default(),
    };
    if let Some(props) = s.get("properties") {
        let props = object(props, at)?;
        for (name, prop) in props {
            let tr = type_ref(prop, preserve, &format!("{at}.{name}"))?;
            fields.insert(name.clone(), tr);
            if let Some(default) = prop.get("default") {
                defaults.insert(name.clone(), default.clone());
            }
        }
    }
    // Entries that are not declared properties: typed by additionalProperties; with none
    // given, an object without properties is free-form, one with properties is closed unless
    // unknown fields are preserved.
    let rest = match s.get("additionalProperties") {
        None if preserve || fields.is_empty() => Some(deduced()),
        None | Some(Value::Bool(false)) => None,
        Some(Value::Bool(true)) => Some(deduced()),
        Some(sub @ Value::Object(_)) => Some(type_ref(sub, preserve, &format!("{at}.*"))?),
        Some(_) => {
            return Err(Error::Schema(format!(
                "{at}: additionalProperties must be a boolean or a schema"
            )))
        }
    };
    Ok(match rest {
        Some(value) if fields.is_empty() => Atom::Map(MapType {
            value,
            relationship,
        }),
        rest => Atom::Struct(StructType {
            fields,
            rest,
            relationship,
            defaults,
            required,
        }),
    })
}

fn list_kind(s: &Map<String, Value>, at: &str) -> Result<ListKind, Error> {
    if let Some(kind) = ext_str(s, "x-kubernetes-list-type", at)? {
        return match kind {
            "atomic" => Ok(ListKind::Atomic),
            "set" => Ok(ListKind::Set),
            "map" => {
                let keys: Vec<String> = match s.get("x-kubernetes-list-map-keys") {
                    Some(Value::Array(keys)) => keys
                        .iter()
                        .map(|k| k.as_str().map(str::to_string))
                        .collect::<Option<_>>()
                        .ok_or_else(|| {
                            Error::Schema(format!("{at}: list map keys must be strings"))
                        })?,
                    _ => Vec::new(),
                };
                if keys.is_empty() {
                    return Err(Error::Schema(format!(
                        "{at}: x-kubernetes-list-type map needs x-kubernetes-list-map-keys"
                    )));
                }
                Ok(ListKind::Map { keys })
            }
            other => Err(Error::Schema(format!(
                "{at}: unknown x-kubernetes-list-type {other:?}"
            ))),
        };
    }
    // Built-in types predate list-type and say it with their strategic merge patch tags.
    let strategy = ext_str(s, "x-kubernetes-patch-strategy", at)?.unwrap_or("");
    if !strategy.split(',').any(|part| part.trim() == "merge") {
        return Ok(ListKind::Atomic);
    }
    Ok(match ext_str(s, "x-kubernetes-patch-merge-key", at)? {
        Some(key) => ListKind::Map {
            keys: vec![key.to_string()],
        },
        None => ListKind::Set,
    })
}

fn convert_list(s: &Map<String, Value>, preserve: bool, at: &str) -> Result<Atom, Error> {
    let kind = list_kind(s, at)?;
    let element = match s.get("items") {
        Some(items @ Value::Object(_)) => type_ref(items, preserve, &format!("{at}[]"))?,
        Some(_) => {
            return Err(Error::Schema(format!(
                "{at}: items must be exactly one schema"
            )))
        }
        None => TypeRef::inline(Atom::Untyped(Untyped::Atomic)),
    };
    Ok(Atom::List(ListType { element, kind }))
}

#[cfg(test)]
#[path = "from_openapi_tests.rs"]
mod tests;
