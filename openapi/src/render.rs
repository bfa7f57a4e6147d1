//! What the v2 and v3 renderings share: which definitions a set of paths needs, and the
//! finishing touches upstream puts on shared meta types.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use crate::builtin::{DELETE_OPTIONS, PATCH, WATCH_EVENT};
use crate::gvk::Gvk;
use crate::operations::{Body, PathItem, Payload};
use crate::refs::{closure, Lookup};

pub(crate) const TITLE: &str = "Kubernetes";

/// Every definition the operations of `paths` name, with all they reference.
pub(crate) fn needed(paths: &[PathItem], definitions: &impl Lookup) -> BTreeSet<String> {
    let mut roots: BTreeSet<&str> = BTreeSet::new();
    for op in paths.iter().flat_map(|p| &p.operations) {
        match &op.body {
            Some(Body::Object(name)) => {
                roots.insert(name);
            }
            Some(Body::Patch { .. }) => {
                roots.insert(PATCH);
            }
            None => {}
        }
        for response in &op.responses {
            if let Payload::Object(name) = &response.payload {
                roots.insert(name);
            }
        }
    }
    closure(roots, definitions)
}

/// What a document holds, in its own dialect: each path rendered by `path_item`, and every
/// definition the paths use, finished, then converted by `schema`.
pub(crate) fn parts(
    paths: &[PathItem],
    definitions: &impl Lookup,
    group_versions: &BTreeSet<(String, String)>,
    path_item: impl Fn(&PathItem) -> Value,
    schema: impl Fn(&str, Value) -> Value,
) -> (Map<String, Value>, Map<String, Value>) {
    let rendered = paths
        .iter()
        .map(|item| (item.path.clone(), path_item(item)))
        .collect();
    let schemas = needed(paths, definitions)
        .into_iter()
        .filter_map(|name| {
            let finished = finish(&name, definitions.lookup(&name)?, group_versions);
            let converted = schema(&name, finished);
            Some((name, converted))
        })
        .collect();
    (rendered, schemas)
}

/// A definition as served: DeleteOptions and WatchEvent belong to every group-version, and
/// upstream tags them with each one served.
pub(crate) fn finish(
    name: &str,
    schema: &Value,
    group_versions: &BTreeSet<(String, String)>,
) -> Value {
    let kind = match name {
        DELETE_OPTIONS => "DeleteOptions",
        WATCH_EVENT => "WatchEvent",
        _ => return schema.clone(),
    };
    let mut schema = schema.clone();
    let gvks: Vec<Value> = group_versions
        .iter()
        .map(|(group, version)| Gvk::new(group, version, kind).to_value())
        .collect();
    if let Value::Object(map) = &mut schema {
        map.insert("x-kubernetes-group-version-kind".into(), json!(gvks));
    }
    schema
}
