//! Defaulting (upstream's structural defaulting) and the CRD-time checks of the defaults a
//! schema declares (upstream's ValidateDefaults).

use super::extensions;
use super::node::Node;
use super::prune;
use super::validate::Compiled;
use super::{child, key};
use registry::error::Cause;
use serde_json::Value;

/// Fills absent fields, and null ones the schema does not allow null, with their defaults;
/// follows properties, additionalProperties and items only, so nothing under a schema-less
/// x-kubernetes-preserve-unknown-fields part is touched.
pub(super) fn apply(x: &mut Value, node: &Node) {
    if !node.defaults_below {
        return;
    }
    match x {
        Value::Object(map) => {
            for (name, prop) in &node.properties {
                let Some(default) = &prop.default else {
                    continue;
                };
                match map.get_mut(name) {
                    None => {
                        map.insert(name.clone(), default.clone());
                    }
                    Some(v) if v.is_null() && !prop.nullable => *v = default.clone(),
                    Some(_) => {}
                }
            }
            for (name, v) in map.iter_mut() {
                if let Some(prop) = node.property(name) {
                    apply(v, prop);
                } else if let Some(additional) = node.additional_schema() {
                    fill_null(v, additional);
                    apply(v, additional);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_node) = &node.items {
                for item in items.iter_mut() {
                    fill_null(item, item_node);
                    apply(item, item_node);
                }
            }
        }
        _ => {}
    }
}

fn fill_null(v: &mut Value, node: &Node) {
    if let (true, false, Some(default)) = (v.is_null(), node.nullable, &node.default) {
        *v = default.clone();
    }
}

/// Upstream's ValidateDefaults over the structural part of a schema at `path`: every default
/// must be pruned (no fields the schema would drop), make valid embedded resources, and
/// validate against the schema of its node. The root is a resource root, so defaults of its
/// apiVersion, kind and metadata are judged as metadata (and refused elsewhere).
pub(super) fn check(schema: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    walk(schema, &Node::parse(schema), path, true, false, &mut causes);
    causes
}

fn walk(
    schema: &Value,
    node: &Node,
    path: &str,
    resource_root: bool,
    inside_meta: bool,
    causes: &mut Vec<Cause>,
) {
    let Some(map) = schema.as_object() else {
        return;
    };
    let embedded = node.embedded || resource_root;
    if let Some(default) = map.get("default") {
        check_one(
            schema,
            node,
            default,
            &child(path, "default"),
            inside_meta,
            causes,
        );
    }
    // Defaults under additionalProperties are refused by the CRD checks, so not followed.
    if let (Some(items), Some(item_node)) = (map.get("items"), &node.items) {
        walk(
            items,
            item_node,
            &child(path, "items"),
            false,
            inside_meta,
            causes,
        );
    }
    if let Some(props) = map.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            let Some(prop_node) = node.property(name) else {
                continue;
            };
            let meta = embedded && matches!(name.as_str(), "metadata" | "apiVersion" | "kind");
            let sub_path = key(&child(path, "properties"), name);
            // An embedded resource starts a new surrounding object.
            let inside = if prop_node.embedded {
                false
            } else {
                inside_meta || meta
            };
            walk(prop, prop_node, &sub_path, false, inside, causes);
        }
    }
}

fn check_one(
    schema: &Value,
    node: &Node,
    default: &Value,
    path: &str,
    inside_meta: bool,
    causes: &mut Vec<Cause>,
) {
    if !inside_meta {
        let mut pruned = default.clone();
        prune::prune(&mut pruned, Some(node), node.embedded);
        if &pruned != default {
            causes.push(Cause::invalid(
                path,
                registry::go_fmt::error_value(default),
                "must not have unknown fields",
            ));
        }
        let embedded = extensions::embedded_errors(default, node, path);
        if !embedded.is_empty() {
            causes.extend(embedded);
            return;
        }
    }
    match Compiled::new(schema, false) {
        Ok(compiled) => causes.extend(compiled.errors(default, path)),
        Err(message) => causes.push(Cause::invalid(path, "\"\"", &message)),
    }
}
