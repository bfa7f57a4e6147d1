//! Upstream's structural-schema rules (apiextensions-apiserver schema.ValidateStructural): a
//! type everywhere outside value validations, nothing but value validations inside allOf,
//! anyOf, oneOf and not, every field they mention also specified outside them, metadata at the
//! root restricted to name and generateName, and the embedded-resource and int-or-string
//! invariants.

use super::node::{bool_of, str_of};
use super::validate::pattern_error;
use super::{child, key};
use registry::error::Cause;
use registry::go_fmt::error_value;
use serde_json::{Map, Value};

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The structural violations of `schema`, sorted by their text as upstream sorts them.
pub(super) fn check(schema: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    if let Some(root) = schema.as_object() {
        invariants(root, Level::Root, path, &mut errs);
        completeness(root, Some(root), path, path, &mut errs);
    }
    errs.sort_by_key(Cause::full_message);
    errs
}

/// Why upstream cannot even read `schema` as a structural schema (its NewStructural error),
/// for keywords the CRD checks also refuse.
pub(super) fn unreadable(schema: &Value) -> Option<String> {
    let s = schema.as_object()?;
    let unsupported = [
        ("id", "id"),
        ("$schema", "schema"),
        ("$ref", "$ref"),
        ("patternProperties", "patternProperties"),
        ("dependencies", "dependencies"),
        ("additionalItems", "additionalItems"),
        ("definitions", "definitions"),
    ];
    for (keyword, name) in unsupported {
        if s.get(keyword).is_some_and(|v| !is_zero(v)) {
            return Some(format!("OpenAPIV3Schema '{name}' is not supported"));
        }
    }
    if s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        return Some(
            "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
                .to_string(),
        );
    }
    match s.get("items") {
        Some(Value::Array(_)) => {
            return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".to_string())
        }
        Some(items) => {
            if let Some(why) = unreadable(items) {
                return Some(why);
            }
        }
        None => {}
    }
    let singles = ["additionalProperties", "not"]
        .into_iter()
        .filter_map(|k| s.get(k));
    let lists = ["allOf", "anyOf", "oneOf"]
        .into_iter()
        .filter_map(|k| s.get(k).and_then(Value::as_array))
        .flatten();
    let props = s
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(Map::values);
    singles.chain(lists).chain(props).find_map(unreadable)
}

/// validateStructuralInvariants.
fn invariants(s: &Map<String, Value>, level: Level, path: &str, errs: &mut Vec<Cause>) {
    let ty = str_of(s, "type");
    let items = s.get("items").and_then(Value::as_object);
    let properties = s.get("properties").and_then(Value::as_object);
    let additional = s.get("additionalProperties").filter(|v| !v.is_null());
    let int_or_string = bool_of(s, "x-kubernetes-int-or-string");
    let preserve = bool_of(s, "x-kubernetes-preserve-unknown-fields");
    let embedded = bool_of(s, "x-kubernetes-embedded-resource");

    if ty == "array" && items.is_none() {
        errs.push(required(&child(path, "items"), "must be specified"));
    }
    if let Some(items) = items {
        invariants(items, Level::Item, &child(path, "items"), errs);
    }
    for (name, prop) in properties.into_iter().flatten() {
        if let Some(prop) = prop.as_object() {
            invariants(
                prop,
                Level::Field,
                &key(&child(path, "properties"), name),
                errs,
            );
        }
    }
    if let Some(additional) = additional {
        if level == Level::Root {
            let field = child(path, "additionalProperties");
            errs.push(Cause::forbidden(&field, "must not be used at the root"));
        }
        if let Some(additional) = additional.as_object() {
            invariants(
                additional,
                Level::Field,
                &child(path, "additionalProperties"),
                errs,
            );
        }
    }
    if int_or_string {
        let why = "must be false if x-kubernetes-int-or-string is true";
        for (flag, set) in [
            ("x-kubernetes-preserve-unknown-fields", preserve),
            ("x-kubernetes-embedded-resource", embedded),
        ] {
            if set {
                errs.push(Cause::invalid(&child(path, flag), "true", why));
            }
        }
    }
    let skip_any_of = is_int_or_string_any_of(s.get("anyOf"));
    let skip_first_all_of_any_of = s
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|all| all.first())
        .is_some_and(|first| is_int_or_string_any_of(first.get("anyOf")));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, path, errs);

    let type_path = child(path, "type");
    if embedded && ty != "object" {
        let why = "must be object if x-kubernetes-embedded-resource is true";
        errs.push(if ty.is_empty() {
            required(&type_path, why)
        } else {
            Cause::invalid(&type_path, error_value(&ty.into()), why)
        });
    } else if ty.is_empty() && !int_or_string && !preserve {
        let why = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(required(&type_path, why));
    }
    if embedded && additional.is_some() {
        let field = child(path, "additionalProperties");
        let why = "must not be used if x-kubernetes-embedded-resource is set";
        errs.push(Cause::forbidden(&field, why));
    }
    if level == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(Cause::invalid(
            &type_path,
            error_value(&ty.into()),
            "must be object at the root",
        ));
    }
    let check_metadata = level == Level::Root || embedded;
    let props_path = child(path, "properties");
    if let Some(props) = properties {
        for name in ["kind", "apiVersion"] {
            let Some(prop) = props.get(name).filter(|_| check_metadata) else {
                continue;
            };
            let prop_ty = prop.get("type").and_then(Value::as_str).unwrap_or_default();
            if prop_ty != "string" {
                let field = child(&key(&props_path, name), "type");
                errs.push(Cause::invalid(
                    &field,
                    error_value(&prop_ty.into()),
                    "must be string",
                ));
            }
        }
        if let Some(metadata) = props.get("metadata").and_then(Value::as_object) {
            let field = key(&props_path, "metadata");
            metadata_invariants(metadata, check_metadata, level, &field, errs);
        }
    }
    if embedded && !preserve && properties.is_none_or(Map::is_empty) {
        let why = "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields";
        errs.push(required(&props_path, why));
    }
}

/// metadata may only restrict name and generateName at the root; elsewhere (embedded
/// resources) only its type is checked.
fn metadata_invariants(
    m: &Map<String, Value>,
    check_metadata: bool,
    level: Level,
    path: &str,
    errs: &mut Vec<Cause>,
) {
    let ty = str_of(m, "type");
    if check_metadata && ty != "object" {
        let field = child(path, "type");
        errs.push(Cause::invalid(
            &field,
            error_value(&ty.into()),
            "must be object",
        ));
    }
    if level != Level::Root {
        return;
    }
    let props = m.get("properties").and_then(Value::as_object);
    let names_only = props.is_some_and(|p| {
        let name = p.contains_key("name");
        let generate = p.contains_key("generateName");
        (name && generate && p.len() == 2) || ((name || generate) && p.len() == 1)
    });
    // What upstream's Structural keeps of metadata, beyond its type and default, must be empty.
    let ignored = ["type", "default", "example", "externalDocs"];
    let specified = m.iter().any(|(k, v)| {
        let kept = match k.as_str() {
            k if ignored.contains(&k) => false,
            "properties" => !names_only && !is_zero(v),
            // An empty required list is still a list, unlike an empty enum.
            "required" => true,
            _ => !is_zero(v),
        };
        kept
    });
    if specified {
        let why = "must not specify anything other than name and generateName, but metadata is implicitly specified";
        errs.push(Cause::forbidden(path, why));
    }
}

/// validateValueValidation: the junctors' contents, and a compilable pattern.
fn value_validation(
    v: &Map<String, Value>,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &str,
    errs: &mut Vec<Cause>,
) {
    let list = |name: &str| v.get(name).and_then(Value::as_array).into_iter().flatten();
    if !skip_any_of {
        for (i, s) in list("anyOf").enumerate() {
            nested(s, false, false, &key(&child(path, "anyOf"), i), errs);
        }
    }
    for (i, s) in list("allOf").enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested(s, skip, false, &key(&child(path, "allOf"), i), errs);
    }
    for (i, s) in list("oneOf").enumerate() {
        nested(s, false, false, &key(&child(path, "oneOf"), i), errs);
    }
    if let Some(not) = v.get("not") {
        nested(not, false, false, &child(path, "not"), errs);
    }
    let pattern = str_of(v, "pattern");
    if !pattern.is_empty() {
        if let Some(err) = pattern_error(pattern) {
            let why = format!("must be a valid regular expression, but isn't: {err}");
            errs.push(Cause::invalid(
                &child(path, "pattern"),
                error_value(&pattern.into()),
                &why,
            ));
        }
    }
}

/// validateNestedValueValidation: inside a junctor only value validations may appear.
fn nested(
    v: &Value,
    skip_any_of: bool,
    skip_all_of_any_of: bool,
    path: &str,
    errs: &mut Vec<Cause>,
) {
    let Some(v) = v.as_object() else {
        return;
    };
    value_validation(v, skip_any_of, skip_all_of_any_of, path, errs);
    if let Some(items) = v.get("items").filter(|i| i.is_object()) {
        nested(items, false, false, &child(path, "items"), errs);
    }
    if let Some(props) = v.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            nested(
                prop,
                false,
                false,
                &key(&child(path, "properties"), name),
                errs,
            );
        }
    }
    let forbidden = [
        ("type", "must be empty to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        ("nullable", "must be false to be structural"),
        (
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        ),
        (
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        ),
        (
            "x-kubernetes-map-type",
            "must be undefined to be structural",
        ),
        ("x-kubernetes-validations", "must be empty to be structural"),
    ];
    for (keyword, why) in forbidden {
        // Pointers upstream: set at all counts, even to false or "".
        let pointer = matches!(
            keyword,
            "additionalProperties" | "default" | "x-kubernetes-list-type" | "x-kubernetes-map-type"
        );
        let present = match v.get(keyword) {
            None | Some(Value::Null) => false,
            Some(value) => pointer || !is_zero(value),
        };
        if present {
            errs.push(Cause::forbidden(&child(path, keyword), why));
        }
    }
    let has_metadata = v
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.contains_key("metadata"));
    if has_metadata {
        let field = key(&child(path, "properties"), "metadata");
        errs.push(Cause::forbidden(
            &field,
            "must not be specified in a nested context",
        ));
    }
}

/// validateStructuralCompleteness: every property and items a junctor mentions is specified in
/// the structural schema at the same place. Upstream starts from the root's junctors only.
fn completeness(
    v: &Map<String, Value>,
    s: Option<&Map<String, Value>>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<Cause>,
) {
    let Some(s) = s else {
        errs.push(required(
            s_path,
            &format!("because it is defined in {v_path}"),
        ));
        return;
    };
    if let Some(not) = v.get("not").and_then(Value::as_object) {
        nested_completeness(not, Some(s), s_path, &child(v_path, "not"), errs);
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        let list = v
            .get(junctor)
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for (i, x) in list.enumerate() {
            if let Some(x) = x.as_object() {
                let x_path = key(&child(v_path, junctor), i);
                nested_completeness(x, Some(s), s_path, &x_path, errs);
            }
        }
    }
}

fn nested_completeness(
    v: &Map<String, Value>,
    s: Option<&Map<String, Value>>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<Cause>,
) {
    completeness(v, s, s_path, v_path, errs);
    let Some(s) = s else {
        return;
    };
    if let Some(items) = v.get("items").and_then(Value::as_object) {
        let s_items = s.get("items").and_then(Value::as_object);
        nested_completeness(
            items,
            s_items,
            &child(s_path, "items"),
            &child(v_path, "items"),
            errs,
        );
    }
    let s_props = s.get("properties").and_then(Value::as_object);
    for (name, v_prop) in v
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let Some(v_prop) = v_prop.as_object() else {
            continue;
        };
        let sp = key(&child(s_path, "properties"), name);
        let vp = key(&child(v_path, "properties"), name);
        match s_props.and_then(|p| p.get(name)).and_then(Value::as_object) {
            Some(s_prop) => nested_completeness(v_prop, Some(s_prop), &sp, &vp, errs),
            None => errs.push(required(&sp, &format!("because it is defined in {vp}"))),
        }
    }
}

/// A Go zero value as upstream's decoding would leave it: null, false, "", an empty list or
/// map (a number, even 0, is set).
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    }
}

/// anyOf exactly `[{type: integer}, {type: string}]`, the form int-or-string may take.
fn is_int_or_string_any_of(any_of: Option<&Value>) -> bool {
    let Some([first, second]) = any_of.and_then(Value::as_array).map(Vec::as_slice) else {
        return false;
    };
    let only_type = |v: &Value, ty: &str| {
        v.as_object().is_some_and(|m| {
            m.get("type") == Some(&Value::String(ty.to_string()))
                && m.iter().all(|(k, v)| k == "type" || is_zero(v))
        })
    };
    only_type(first, "integer") && only_type(second, "string")
}

/// field.Required with a detail.
fn required(field: &str, detail: &str) -> Cause {
    super::cause(
        "FieldValueRequired",
        field,
        format!("Required value: {detail}"),
    )
}
