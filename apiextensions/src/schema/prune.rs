//! Upstream's structural pruning: fields the schema does not specify are dropped, except under
//! x-kubernetes-preserve-unknown-fields and the apiVersion, kind and metadata of resources.

use super::node::{Additional, Node};
use serde_json::Value;

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Prunes `x` against `node`; `resource_root` makes the top a resource whatever its schema says.
pub(super) fn prune(x: &mut Value, node: Option<&Node>, resource_root: bool) {
    prune_at(x, node, resource_root);
}

fn prune_at(x: &mut Value, node: Option<&Node>, resource: bool) {
    if let Some(n) = node {
        if n.preserve_unknown {
            keep_unknown(x, n, resource || n.embedded);
            return;
        }
    }
    match x {
        Value::Object(map) => {
            let Some(n) = node else {
                map.clear();
                return;
            };
            let resource = resource || n.embedded;
            map.retain(|name, v| {
                if resource && META_FIELDS.contains(&name.as_str()) {
                    return true;
                }
                if let Some(prop) = n.property(name) {
                    prune_at(v, Some(prop), false);
                    return true;
                }
                match &n.additional {
                    Additional::Absent => false,
                    Additional::Allows => {
                        prune_at(v, None, false);
                        true
                    }
                    Additional::Schema(schema) => {
                        prune_at(v, Some(schema), false);
                        true
                    }
                }
            });
        }
        Value::Array(items) => {
            let item_node = node.and_then(|n| n.items.as_deref());
            for item in items {
                prune_at(item, item_node, false);
            }
        }
        _ => {}
    }
}

/// Inside x-kubernetes-preserve-unknown-fields: unknown fields stay, specified ones are pruned.
fn keep_unknown(x: &mut Value, node: &Node, resource: bool) {
    match x {
        Value::Object(map) => {
            for (name, v) in map.iter_mut() {
                if resource && META_FIELDS.contains(&name.as_str()) {
                    continue;
                }
                if let Some(prop) = node.property(name) {
                    prune_at(v, Some(prop), false);
                } else {
                    match &node.additional {
                        Additional::Absent => {}
                        Additional::Allows => prune_at(v, None, false),
                        Additional::Schema(schema) => prune_at(v, Some(schema), false),
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_node) = &node.items {
                for item in items {
                    keep_unknown(item, item_node, false);
                }
            }
        }
        _ => {}
    }
}

/// Drops null fields whose schema allows no null and has no default to fill them with
/// (upstream's PruneNonNullableNullsWithoutDefaults, run with pruning).
pub(super) fn prune_nulls(x: &mut Value, node: Option<&Node>) {
    match x {
        Value::Object(map) => {
            map.retain(|name, v| {
                let field = node.and_then(|n| n.property(name).or_else(|| n.additional_schema()));
                if v.is_null() {
                    return !field.is_some_and(|f| !f.nullable && f.default.is_none());
                }
                prune_nulls(v, field);
                true
            });
        }
        Value::Array(items) => {
            let item_node = node.and_then(|n| n.items.as_deref());
            for item in items {
                prune_nulls(item, item_node);
            }
        }
        _ => {}
    }
}
