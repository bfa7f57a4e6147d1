//! What JSON Schema cannot say about a custom resource: embedded resources
//! (x-kubernetes-embedded-resource: apiVersion and kind, valid metadata) and the uniqueness of
//! x-kubernetes-list-type `set` items and `map` keys. Paths are field.Path style: properties as
//! children, additionalProperties keys and indices in brackets.

use super::node::Node;
use super::{child, key};
use registry::error::Cause;
use registry::go_fmt::{error_value, sharp};
use registry::object::canonical_json;
use registry::validation::{
    is_dns1035_label, name_is_dns_label, path_segment_name, validate_annotations, validate_labels,
};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// A field path built only when a cause needs it: the walkers pass through every field of a
/// resource, and most resources are valid.
#[derive(Clone, Copy)]
enum Path<'a> {
    Base(&'a str),
    Child(&'a Path<'a>, &'a str),
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    fn render(&self) -> String {
        match self {
            Path::Base(base) => base.to_string(),
            Path::Child(parent, name) => child(&parent.render(), name),
            Path::Key(parent, name) => key(&parent.render(), name),
            Path::Index(parent, i) => key(&parent.render(), i),
        }
    }
}

/// Upstream's objectmeta.Validate: every embedded resource in `x` (including `x` itself when its
/// node is one) has an apiVersion and a kind and valid metadata.
pub(super) fn embedded_errors(x: &Value, node: &Node, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    embedded(x, node, &Path::Base(path), &mut causes);
    causes
}

fn embedded(x: &Value, node: &Node, path: &Path, causes: &mut Vec<Cause>) {
    if !node.embedded_below {
        return;
    }
    match x {
        Value::Object(map) => {
            if node.embedded {
                check_embedded(map, &path.render(), causes);
            }
            for (name, v) in map {
                if let Some(prop) = node.property(name) {
                    embedded(v, prop, &Path::Child(path, name), causes);
                } else if let Some(additional) = node.additional_schema() {
                    embedded(v, additional, &Path::Key(path, name), causes);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_node) = &node.items {
                for (i, item) in items.iter().enumerate() {
                    embedded(item, item_node, &Path::Index(path, i), causes);
                }
            }
        }
        _ => {}
    }
}

fn check_embedded(map: &Map<String, Value>, path: &str, causes: &mut Vec<Cause>) {
    for field in ["apiVersion", "kind"] {
        if !map.contains_key(field) {
            causes.push(Cause::required(&child(path, field)));
        }
    }
    if let Some(v) = map.get("apiVersion") {
        let field = child(path, "apiVersion");
        match v.as_str() {
            None => causes.push(Cause::invalid(&field, error_value(v), "must be a string")),
            Some("") => causes.push(Cause::invalid(&field, "\"\"", "must not be empty")),
            // A group version has at most one slash.
            Some(s) if s != "/" && s.matches('/').count() > 1 => causes.push(Cause::invalid(
                &field,
                error_value(v),
                &format!("unexpected GroupVersion string: {s}"),
            )),
            Some(_) => {}
        }
    }
    if let Some(v) = map.get("kind") {
        let field = child(path, "kind");
        match v.as_str() {
            None => causes.push(Cause::invalid(&field, error_value(v), "must be a string")),
            Some("") => causes.push(Cause::invalid(&field, "\"\"", "must not be empty")),
            Some(s) => {
                let errs = is_dns1035_label(&s.to_lowercase());
                if !errs.is_empty() {
                    let why = format!(
                        "may have mixed case, but should otherwise match: {}",
                        errs.join(",")
                    );
                    causes.push(Cause::invalid(&field, error_value(v), &why));
                }
            }
        }
    }
    if let Some(meta) = map.get("metadata") {
        check_metadata(meta, &child(path, "metadata"), causes);
    }
}

/// The ObjectMeta checks upstream applies to embedded metadata: it must decode as ObjectMeta,
/// and name, generateName, namespace, labels and annotations must be valid.
fn check_metadata(meta: &Value, path: &str, causes: &mut Vec<Cause>) {
    let map = match meta {
        Value::Null => return,
        Value::Object(map) => map,
        other => {
            let why = format!(
                "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
                go_json_kind(other)
            );
            causes.push(Cause::invalid(path, error_value(meta), &why));
            return;
        }
    };
    for field in ["name", "generateName", "namespace"] {
        if let Some(v) = map.get(field).filter(|v| !v.is_string() && !v.is_null()) {
            let why = format!(
                "json: cannot unmarshal {} into Go struct field ObjectMeta.{field} of type string",
                go_json_kind(v)
            );
            causes.push(Cause::invalid(path, error_value(meta), &why));
            return;
        }
    }
    let text = |field: &str| map.get(field).and_then(Value::as_str).unwrap_or_default();
    // Upstream stands in a name when there is none; empty fields are not checked.
    type Rule = fn(&str) -> Vec<String>;
    let rules: [(&str, Rule); 3] = [
        ("name", |name| path_segment_name(name, false)),
        ("generateName", |prefix| path_segment_name(prefix, true)),
        ("namespace", |namespace| name_is_dns_label(namespace, false)),
    ];
    for (field, rule) in rules {
        let value = text(field);
        if value.is_empty() {
            continue;
        }
        for message in rule(value) {
            let shown = error_value(&Value::String(value.to_string()));
            causes.push(Cause::invalid(&child(path, field), shown, &message));
        }
    }
    if let Some(labels) = map.get("labels") {
        causes.extend(validate_labels(labels, &child(path, "labels")));
    }
    if let Some(annotations) = map.get("annotations") {
        causes.extend(validate_annotations(
            annotations,
            &child(path, "annotations"),
        ));
    }
}

fn go_json_kind(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    }
}

/// Upstream's ValidateListSetsAndMaps: items of `set` lists are unique, and so are the keys of
/// `map` lists' items. Reports the second appearance of each duplicate.
pub(super) fn list_errors(x: &Value, node: &Node, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    lists(x, node, &Path::Base(path), &mut causes);
    causes
}

fn lists(x: &Value, node: &Node, path: &Path, causes: &mut Vec<Cause>) {
    if !node.lists_below {
        return;
    }
    match x {
        Value::Object(map) => {
            for (name, v) in map {
                if let Some(prop) = node.property(name) {
                    lists(v, prop, &Path::Child(path, name), causes);
                } else if let Some(additional) = node.additional_schema() {
                    lists(v, additional, &Path::Key(path, name), causes);
                }
            }
        }
        Value::Array(items) => {
            match node.list_type.as_deref() {
                Some("set") => {
                    for i in second_appearances(items, canonical_json) {
                        let field = Path::Index(path, i).render();
                        causes.push(Cause::duplicate(&field, error_value(&items[i])));
                    }
                }
                Some("map") => map_list(items, node, path, causes),
                _ => {}
            }
            if let Some(item_node) = &node.items {
                for (i, item) in items.iter().enumerate() {
                    lists(item, item_node, &Path::Index(path, i), causes);
                }
            }
        }
        _ => {}
    }
}

fn map_list(items: &[Value], node: &Node, path: &Path, causes: &mut Vec<Cause>) {
    if let Some((i, item)) = items
        .iter()
        .enumerate()
        .find(|(_, item)| !item.is_object() && !item.is_null())
    {
        let why = "must be an object for an array of list-type map";
        causes.push(Cause::invalid(
            &Path::Index(path, i).render(),
            error_value(item),
            why,
        ));
        return;
    }
    // An item's key is the key fields it has: a missing field and a null one differ, as
    // upstream tells them apart.
    let keys: Vec<Vec<Option<&Value>>> = items
        .iter()
        .map(|item| node.list_map_keys.iter().map(|k| item.get(k)).collect())
        .collect();
    for i in second_appearances(&keys, |k| key_identity(k)) {
        let shown: Map<String, Value> = node
            .list_map_keys
            .iter()
            .zip(&keys[i])
            .filter_map(|(k, v)| v.map(|v| (k.clone(), v.clone())))
            .collect();
        let field = Path::Index(path, i).render();
        causes.push(Cause::duplicate(&field, sharp(&Value::Object(shown))));
    }
}

/// Indices where an item appears for the second time. Short lists (the usual) compare each item
/// with the ones before it; long ones hash an identity text instead.
fn second_appearances<T: PartialEq>(items: &[T], identity: impl Fn(&T) -> String) -> Vec<usize> {
    const SHORT: usize = 32;
    let mut out = Vec::new();
    if items.len() <= SHORT {
        for (i, item) in items.iter().enumerate() {
            if items[..i].iter().filter(|earlier| *earlier == item).count() == 1 {
                out.push(i);
            }
        }
        return out;
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let count = seen.entry(identity(item)).or_default();
        *count += 1;
        if *count == 2 {
            out.push(i);
        }
    }
    out
}

fn key_identity(key: &[Option<&Value>]) -> String {
    let parts: Vec<String> = key
        .iter()
        .map(|v| v.map_or_else(String::new, canonical_json))
        .collect();
    parts.join("\u{0}")
}
