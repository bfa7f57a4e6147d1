//! Upstream's ValidateCustomResourceDefinitionOpenAPISchema for v1 CRDs: keywords a CRD schema
//! may not use, defaults where they may not be, and the rules of the x-kubernetes-list-type,
//! x-kubernetes-list-map-keys and x-kubernetes-map-type extensions.

use super::node::{bool_of, str_of, strings_of};
use super::{cause, child, key};
use registry::error::Cause;
use registry::go_fmt::{error_value, string_slice_of};
use registry::validation::quote;
use serde_json::{Map, Value};

/// Where in the schema a node is, as far as defaults and embedded resources care.
#[derive(Clone, Default)]
struct Place {
    /// Why defaults are refused here, if they are.
    no_defaults: Option<String>,
    /// Inside the apiVersion, kind or metadata of a resource.
    inside_meta: bool,
}

pub(super) fn check(schema: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    node(schema, path, &Place::default(), true, &mut errs);
    errs
}

fn node(schema: &Value, path: &str, place: &Place, root: bool, errs: &mut Vec<Cause>) {
    // Anything but an object was refused with the decoding errors.
    let Some(s) = schema.as_object() else {
        return;
    };
    standard(s, path, place, errs);
    if bool_of(s, "uniqueItems") {
        let why =
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic";
        errs.push(Cause::forbidden(&child(path, "uniqueItems"), why));
    }
    let properties = s.get("properties").and_then(Value::as_object);
    if let Some(additional) = s.get("additionalProperties") {
        let restricts = additional == &Value::Bool(false) || additional.is_object();
        if properties.is_some_and(|p| !p.is_empty()) && restricts {
            let why = "additionalProperties and properties are mutual exclusive";
            errs.push(Cause::forbidden(&child(path, "additionalProperties"), why));
        }
        let mut sub = place.clone();
        if place.inside_meta {
            // Pruning cannot tell which keys a default would apply to.
            sub.no_defaults =
                Some("inside additionalProperties applying to object metadata".into());
        }
        if additional.is_object() {
            node(
                additional,
                &child(path, "additionalProperties"),
                &sub,
                false,
                errs,
            );
        }
    }
    let embedded = bool_of(s, "x-kubernetes-embedded-resource");
    for (name, prop) in properties.into_iter().flatten() {
        let mut sub = place.clone();
        if (root || embedded) && matches!(name.as_str(), "metadata" | "kind" | "apiVersion") {
            sub.inside_meta = true;
            if root {
                sub.no_defaults = Some(format!("in top-level {name}"));
            }
        }
        node(
            prop,
            &key(&child(path, "properties"), name),
            &sub,
            false,
            errs,
        );
    }
    if let Some(not) = s.get("not") {
        node(not, &child(path, "not"), place, false, errs);
    }
    for junctor in ["allOf", "oneOf", "anyOf"] {
        for (i, sub) in s
            .get(junctor)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            node(sub, &key(&child(path, junctor), i), place, false, errs);
        }
    }
    for (name, sub) in s
        .get("definitions")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        node(
            sub,
            &key(&child(path, "definitions"), name),
            place,
            false,
            errs,
        );
    }
    match s.get("items") {
        Some(items @ Value::Object(_)) => node(items, &child(path, "items"), place, false, errs),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                node(item, &key(&child(path, "items"), i), place, false, errs);
            }
        }
        _ => {}
    }
    for (name, dep) in s
        .get("dependencies")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if dep.is_object() {
            node(
                dep,
                &key(&child(path, "dependencies"), name),
                place,
                false,
                errs,
            );
        }
    }
    if s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        let field = child(path, "x-kubernetes-preserve-unknown-fields");
        errs.push(Cause::invalid(&field, "false", "must be true or undefined"));
    }
    extensions(s, path, errs);
}

/// specStandardValidatorV3.validate: keywords v1 CRD schemas do not support.
fn standard(s: &Map<String, Value>, path: &str, place: &Place, errs: &mut Vec<Cause>) {
    let ty = str_of(s, "type");
    const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
    if !ty.is_empty() && !TYPES.contains(&ty) {
        errs.push(not_supported(&child(path, "type"), ty, &TYPES));
    }
    if let (Some(_), Some(reason)) = (s.get("default"), &place.no_defaults) {
        errs.push(Cause::forbidden(
            &child(path, "default"),
            &format!("must not be set {reason}"),
        ));
    }
    if !str_of(s, "id").is_empty() {
        errs.push(Cause::forbidden(&child(path, "id"), "id is not supported"));
    }
    let refused = [
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
        ("$ref", "$ref is not supported"),
    ];
    for (keyword, why) in refused {
        let set = match s.get(keyword) {
            None | Some(Value::Null) => false,
            // Empty maps count as unset for these two, as upstream checks their length.
            Some(Value::Object(m)) if matches!(keyword, "patternProperties" | "definitions") => {
                !m.is_empty()
            }
            Some(_) => true,
        };
        if set {
            errs.push(Cause::forbidden(&child(path, keyword), why));
        }
    }
    if ty == "null" {
        let why = "type cannot be set to null, use nullable as an alternative";
        errs.push(Cause::forbidden(&child(path, "type"), why));
    }
    if s.get("items")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        let why = "items must be a schema object and not an array";
        errs.push(Cause::forbidden(&child(path, "items"), why));
    }
    if place.inside_meta && bool_of(s, "x-kubernetes-embedded-resource") {
        let field = child(path, "x-kubernetes-embedded-resource");
        errs.push(Cause::forbidden(
            &field,
            "must not be used inside of resource meta",
        ));
    }
}

/// The list-type, list-map-keys and map-type rules.
fn extensions(s: &Map<String, Value>, path: &str, errs: &mut Vec<Cause>) {
    let ty = str_of(s, "type");
    let type_path = child(path, "type");
    let type_rule = |errs: &mut Vec<Cause>, why: &str| {
        errs.push(if ty.is_empty() {
            cause(
                "FieldValueRequired",
                &type_path,
                format!("Required value: {why}"),
            )
        } else {
            Cause::invalid(&type_path, quote(ty), why)
        });
    };
    let map_type = s.get("x-kubernetes-map-type").and_then(Value::as_str);
    if let Some(map_type) = map_type {
        if ty != "object" {
            type_rule(errs, "must be object if x-kubernetes-map-type is specified");
        }
        if !matches!(map_type, "atomic" | "granular") {
            let field = child(path, "x-kubernetes-map-type");
            errs.push(not_supported(&field, map_type, &["atomic", "granular"]));
        }
    }
    let list_type = s.get("x-kubernetes-list-type").and_then(Value::as_str);
    let items = s.get("items").and_then(Value::as_object);
    let items_path = child(path, "items");
    if list_type.is_some() && ty != "array" {
        type_rule(errs, "must be array if x-kubernetes-list-type is specified");
    } else if let (Some("set"), Some(items)) = (list_type, items) {
        let why = "must be atomic as item of a list with x-kubernetes-list-type=set";
        let item_list_type = items.get("x-kubernetes-list-type");
        match str_of(items, "type") {
            "array" if item_list_type.is_some_and(|t| t != "atomic") => {
                let field = child(&items_path, "x-kubernetes-list-type");
                errs.push(Cause::invalid(&field, shown(item_list_type), why));
            }
            // Upstream shows the items' list type here, which is usually unset.
            "object" if str_of(items, "x-kubernetes-map-type") != "atomic" => {
                let field = child(&items_path, "x-kubernetes-map-type");
                errs.push(Cause::invalid(&field, shown(item_list_type), why));
            }
            _ => {}
        }
    }
    let list_type_path = child(path, "x-kubernetes-list-type");
    if let Some(lt) = list_type.filter(|lt| !matches!(*lt, "atomic" | "set" | "map")) {
        errs.push(not_supported(
            &list_type_path,
            lt,
            &["atomic", "set", "map"],
        ));
    }
    let keys = strings_of(s, "x-kubernetes-list-map-keys");
    let keys_path = child(path, "x-kubernetes-list-map-keys");
    if !keys.is_empty() {
        let why = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => errs.push(cause(
                "FieldValueRequired",
                &list_type_path,
                format!("Required value: {why}"),
            )),
            Some("map") => {}
            Some(lt) => errs.push(Cause::invalid(&list_type_path, quote(lt), why)),
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            let why = "must not be empty if x-kubernetes-list-type is map";
            errs.push(cause(
                "FieldValueRequired",
                &keys_path,
                format!("Required value: {why}"),
            ));
        }
        match s.get("items") {
            None | Some(Value::Null) => {
                let why = "must have a schema if x-kubernetes-list-type is map";
                errs.push(cause(
                    "FieldValueRequired",
                    &items_path,
                    format!("Required value: {why}"),
                ));
            }
            Some(v @ Value::Array(_)) => {
                let why = "must only have a single schema if x-kubernetes-list-type is map";
                errs.push(Cause::invalid(&items_path, error_value(v), why));
            }
            _ => {}
        }
        if let Some(items) = items {
            map_list_keys(items, &keys, &items_path, &keys_path, errs);
        }
    }
    if let (Some(lt @ ("set" | "map")), Some(items)) = (list_type, items) {
        if bool_of(items, "nullable") {
            let why = format!("cannot be nullable when x-kubernetes-list-type is {lt}");
            errs.push(Cause::forbidden(&child(&items_path, "nullable"), &why));
        }
        if lt == "map" {
            map_keys_present(items, &keys, &items_path, errs);
        }
    }
}

/// The items of a map list are objects whose key properties exist, are scalars and are named
/// once.
fn map_list_keys(
    items: &Map<String, Value>,
    keys: &[String],
    items_path: &str,
    keys_path: &str,
    errs: &mut Vec<Cause>,
) {
    let items_ty = str_of(items, "type");
    if items_ty != "object" {
        let why = "must be object if parent array's x-kubernetes-list-type is map";
        errs.push(Cause::invalid(
            &child(items_path, "type"),
            quote(items_ty),
            why,
        ));
        return;
    }
    let props = items.get("properties").and_then(Value::as_object);
    for (i, k) in keys.iter().enumerate() {
        match props.and_then(|p| p.get(k)) {
            Some(prop) => {
                if matches!(
                    prop.get("type").and_then(Value::as_str),
                    Some("array" | "object")
                ) {
                    let field = child(&key(&child(items_path, "properties"), k), "type");
                    let why =
                        "must be a scalar type if parent array's x-kubernetes-list-type is map";
                    // Upstream shows the items' type here.
                    errs.push(Cause::invalid(&field, quote(items_ty), why));
                }
            }
            None => {
                let why = "entries must all be names of item properties";
                errs.push(Cause::invalid(keys_path, string_slice_of(keys), why));
            }
        }
        if keys[..i].contains(k) {
            let why = "must not contain duplicate entries";
            errs.push(Cause::invalid(keys_path, string_slice_of(keys), why));
        }
    }
}

/// Every key property of a map list is required or defaulted, and never null.
fn map_keys_present(
    items: &Map<String, Value>,
    keys: &[String],
    items_path: &str,
    errs: &mut Vec<Cause>,
) {
    let required = strings_of(items, "required");
    let props = items.get("properties").and_then(Value::as_object);
    for k in keys {
        let Some(prop) = props.and_then(|p| p.get(k)).and_then(Value::as_object) else {
            continue;
        };
        let prop_path = key(&child(items_path, "properties"), k);
        if !required.contains(k) && !prop.contains_key("default") {
            let why = "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property";
            errs.push(cause(
                "FieldValueRequired",
                &child(&prop_path, "default"),
                format!("Required value: {why}"),
            ));
        }
        if bool_of(prop, "nullable") {
            let why = "this property is in x-kubernetes-list-map-keys, so it cannot be nullable";
            errs.push(Cause::forbidden(&child(&prop_path, "nullable"), why));
        }
    }
}

/// A *string as upstream's field error shows it: null when unset.
fn shown(v: Option<&Value>) -> String {
    v.map_or_else(|| "null".to_string(), error_value)
}

fn not_supported(field: &str, value: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| quote(s)).collect();
    let message = format!(
        "Unsupported value: {}: supported values: {}",
        quote(value),
        list.join(", ")
    );
    cause("FieldValueNotSupported", field, message)
}

/// Keywords whose value has the wrong JSON type anywhere in the schema: upstream's decoding
/// refuses such a CRD before any rule is checked.
pub(super) fn decode_errors(schema: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    decode(schema, path, &mut errs);
    errs
}

fn decode(schema: &Value, path: &str, errs: &mut Vec<Cause>) {
    let Some(s) = schema.as_object() else {
        // null decodes as an empty schema.
        if !schema.is_null() {
            errs.push(Cause::invalid(
                path,
                error_value(schema),
                "must be an object",
            ));
        }
        return;
    };
    if !keyword_types(s, path, errs) {
        return;
    }
    for keyword in ["additionalProperties", "additionalItems", "not", "items"] {
        match s.get(keyword) {
            Some(Value::Array(list)) => {
                for (i, sub) in list.iter().enumerate() {
                    decode(sub, &key(&child(path, keyword), i), errs);
                }
            }
            Some(sub @ Value::Object(_)) => decode(sub, &child(path, keyword), errs),
            _ => {}
        }
    }
    for keyword in ["allOf", "anyOf", "oneOf"] {
        for (i, sub) in s
            .get(keyword)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            decode(sub, &key(&child(path, keyword), i), errs);
        }
    }
    for keyword in [
        "properties",
        "patternProperties",
        "definitions",
        "dependencies",
    ] {
        for (name, sub) in s
            .get(keyword)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if keyword != "dependencies" || sub.is_object() {
                decode(sub, &key(&child(path, keyword), name), errs);
            }
        }
    }
}

/// Checks the JSON types of a node's own keywords; whether they were all right.
fn keyword_types(s: &Map<String, Value>, path: &str, errs: &mut Vec<Cause>) -> bool {
    const STRINGS: [&str; 9] = [
        "type",
        "format",
        "pattern",
        "title",
        "description",
        "id",
        "$ref",
        "x-kubernetes-list-type",
        "x-kubernetes-map-type",
    ];
    const BOOLS: [&str; 7] = [
        "nullable",
        "uniqueItems",
        "exclusiveMaximum",
        "exclusiveMinimum",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ];
    const COUNTS: [&str; 6] = [
        "maxLength",
        "minLength",
        "maxItems",
        "minItems",
        "maxProperties",
        "minProperties",
    ];
    const NUMBERS: [&str; 3] = ["maximum", "minimum", "multipleOf"];
    const OBJECTS: [&str; 4] = ["properties", "definitions", "patternProperties", "not"];
    const ARRAYS: [&str; 6] = [
        "required",
        "enum",
        "allOf",
        "anyOf",
        "oneOf",
        "x-kubernetes-list-map-keys",
    ];
    let mut ok = true;
    let mut refuse = |keyword: &str, v: &Value, what: &str| {
        let why = format!("must be {what}");
        errs.push(Cause::invalid(&child(path, keyword), error_value(v), &why));
        ok = false;
    };
    for (keyword, v) in s {
        let k = keyword.as_str();
        if v.is_null() {
            continue;
        }
        if STRINGS.contains(&k) && !v.is_string() {
            refuse(k, v, "a string");
        } else if BOOLS.contains(&k) && !v.is_boolean() {
            refuse(k, v, "a boolean");
        } else if COUNTS.contains(&k) && !v.is_u64() {
            refuse(k, v, "a non-negative integer");
        } else if NUMBERS.contains(&k) && !v.is_number() {
            refuse(k, v, "a number");
        } else if OBJECTS.contains(&k) && !v.is_object() {
            refuse(k, v, "an object");
        } else if ARRAYS.contains(&k) && !v.is_array() {
            refuse(k, v, "an array");
        } else if matches!(k, "items" | "additionalProperties" | "additionalItems")
            && !(v.is_object() || v.is_array() && k == "items" || v.is_boolean() && k != "items")
        {
            refuse(k, v, "a schema");
        }
    }
    ok
}
