//! The definitions of every built-in kind, from k8s-openapi's schemas, completed with what
//! they lack: the x-kubernetes-* extensions, group-version-kind tags and the List kinds.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, Patch, WatchEvent};
use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};

use crate::kinds::KINDS;
use crate::protos::Tables;
use crate::{lists, markers};

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";

/// `{"definitions": {name: schema}, "kinds": [[group, version, kind, name], ...]}`, references
/// written `#/definitions/<name>`.
pub fn generate(tables: &Tables) -> Value {
    let mut generator = SchemaSettings::draft07()
        .with(|settings| {
            // Keep k8s-openapi's schemas as they are: descriptions next to references
            // included, which the v3 rendering turns into allOf as upstream does.
            settings.transforms.clear();
            settings.meta_schema = None;
        })
        .into_generator();
    let mut kinds = Vec::new();
    for kind in KINDS {
        (kind.generate)(&mut generator);
        kinds.push((
            kind.group,
            kind.version,
            kind.kind,
            (kind.name)().into_owned(),
        ));
    }
    // What operations take and return besides the kinds.
    generator.subschema_for::<DeleteOptions>();
    generator.subschema_for::<Patch>();
    generator.subschema_for::<WatchEvent<Pod>>();
    let mut definitions: BTreeMap<String, Value> =
        generator.take_definitions(false).into_iter().collect();

    markers::apply(&mut definitions, &tables.markers);
    for (group, version, kind, name) in &kinds {
        if let Some(schema) = definitions.get_mut(name).and_then(Value::as_object_mut) {
            schema.insert(
                "x-kubernetes-group-version-kind".into(),
                gvk(group, version, kind),
            );
            optional_metadata(schema);
        }
    }
    for kind in KINDS {
        let Some(list_kind) = kind.list_kind else {
            continue;
        };
        let item = (kind.name)();
        let (name, mut schema) = lists::list_definition(tables, &definitions, &item, list_kind);
        schema["x-kubernetes-group-version-kind"] = gvk(kind.group, kind.version, list_kind);
        definitions.insert(name.clone(), schema);
        kinds.push((kind.group, kind.version, list_kind, name));
    }
    fix_scalars(&mut definitions);
    json!({"definitions": definitions, "kinds": kinds})
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!([{"group": group, "kind": kind, "version": version}])
}

/// k8s-openapi requires every kind's metadata (its Rust field is not optional); upstream's
/// schemas do not, and validating against them must accept what upstream accepts.
fn optional_metadata(schema: &mut Map<String, Value>) {
    let Some(Value::Array(required)) = schema.get_mut("required") else {
        return;
    };
    required.retain(|field| field != "metadata");
    if required.is_empty() {
        schema.remove("required");
    }
}

/// Quantity and IntOrString take one of two JSON types; upstream's v3 documents say so with
/// `oneOf` (the v2 rendering narrows them to strings, as upstream's v2 does).
fn fix_scalars(definitions: &mut BTreeMap<String, Value>) {
    if let Some(Value::Object(quantity)) = definitions.get_mut(QUANTITY) {
        quantity.remove("x-kubernetes-int-or-string");
        quantity.insert(
            "oneOf".into(),
            json!([{"type": "string"}, {"type": "number"}]),
        );
    }
    if let Some(Value::Object(int_or_string)) = definitions.get_mut(INT_OR_STRING) {
        int_or_string.insert("format".into(), json!("int-or-string"));
        int_or_string.insert(
            "oneOf".into(),
            json!([{"type": "integer"}, {"type": "string"}]),
        );
    }
}
