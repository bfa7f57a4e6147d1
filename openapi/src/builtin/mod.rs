//! The definitions of every built-in kind, generated once per process from k8s-openapi's
//! schemas and completed with what they lack: the x-kubernetes-* extensions, group-version-kind
//! tags and the List kinds.

mod kinds;
mod lists;
mod markers;

use std::collections::BTreeMap;
use std::sync::LazyLock;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, Patch, WatchEvent};
use schemars::generate::SchemaSettings;
use serde_json::{json, Value};

use crate::gvk::Gvk;

pub(crate) const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
pub(crate) const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
pub(crate) const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub(crate) const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
pub(crate) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
pub(crate) const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub(crate) const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
pub(crate) const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

pub(crate) struct Builtin {
    /// Every definition by upstream's name, in the canonical reference form (see refs).
    pub definitions: BTreeMap<String, Value>,
    /// The definition of each kind and list kind.
    pub kinds: BTreeMap<Gvk, String>,
}

/// Built on first use (a few tens of milliseconds), then shared by every document.
pub(crate) fn builtin() -> &'static Builtin {
    static BUILTIN: LazyLock<Builtin> = LazyLock::new(build);
    &BUILTIN
}

fn build() -> Builtin {
    let mut generator = SchemaSettings::draft07()
        .with(|settings| {
            // Keep k8s-openapi's schemas as they are: descriptions next to references
            // included, which the v3 rendering turns into allOf as upstream does.
            settings.transforms.clear();
            settings.meta_schema = None;
        })
        .into_generator();
    let mut kinds = BTreeMap::new();
    for kind in kinds::KINDS {
        (kind.generate)(&mut generator);
        kinds.insert(
            Gvk::new(kind.group, kind.version, kind.kind),
            (kind.name)().into_owned(),
        );
    }
    // What operations take and return besides the kinds.
    generator.subschema_for::<DeleteOptions>();
    generator.subschema_for::<Patch>();
    generator.subschema_for::<WatchEvent<Pod>>();
    let mut definitions: BTreeMap<String, Value> =
        generator.take_definitions(false).into_iter().collect();

    markers::apply(&mut definitions);
    for (gvk, name) in &kinds {
        if let Some(schema) = definitions.get_mut(name).and_then(Value::as_object_mut) {
            schema.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([gvk.to_value()]),
            );
            optional_metadata(schema);
        }
    }
    for kind in kinds::KINDS {
        let Some(list_kind) = kind.list_kind else {
            continue;
        };
        let item = (kind.name)();
        let (name, mut schema) = lists::list_definition(&definitions, &item, list_kind);
        let gvk = Gvk::new(kind.group, kind.version, list_kind);
        schema["x-kubernetes-group-version-kind"] = json!([gvk.to_value()]);
        definitions.insert(name.clone(), schema);
        kinds.insert(gvk, name);
    }
    fix_scalars(&mut definitions);
    Builtin { definitions, kinds }
}

/// k8s-openapi requires every kind's metadata (its Rust field is not optional); upstream's
/// schemas do not, and validating against them must accept what upstream accepts.
fn optional_metadata(schema: &mut serde_json::Map<String, Value>) {
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
