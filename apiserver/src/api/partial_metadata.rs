//! `as=PartialObjectMetadata` and `as=PartialObjectMetadataList` (meta.k8s.io v1 and
//! v1beta1): an answer cut down to its objects' metadata, as upstream's handlers transform it
//! (handlers/response.go) before writing it in the negotiated serializer, protobuf included
//! (kube-controller-manager's metadata informers ask for that). A Status is never transformed;
//! asking for the wrong one of the two is 406 naming the Go type upstream would have had.

use futures::TryStreamExt;
use registry::store::ListStream;
use registry::RegistryError;
use serde_json::{Map, Value};

use super::response::Metadata;

/// The members of a list's ListMeta that a PartialObjectMetadataList keeps.
const LIST_META: [&str; 3] = ["resourceVersion", "continue", "remainingItemCount"];

/// One object's PartialObjectMetadata: its metadata whole.
pub fn object(obj: &Value, api_version: &str) -> Value {
    let mut out = Map::with_capacity(3);
    out.insert("kind".into(), Value::from("PartialObjectMetadata"));
    out.insert("apiVersion".into(), Value::from(api_version));
    let metadata = obj.get("metadata").cloned().unwrap_or_default();
    out.insert("metadata".into(), metadata);
    Value::Object(out)
}

fn list_metadata(metadata: &Map<String, Value>) -> Map<String, Value> {
    LIST_META
        .iter()
        .filter_map(|name| Some((name.to_string(), metadata.get(*name)?.clone())))
        .collect()
}

fn is_list(obj: &Value) -> bool {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    kind.ends_with("List") && obj.get("items").is_some_and(Value::is_array)
}

/// The Go type upstream names in its 406s: the internal type of a built-in kind
/// (`*core.Pod`, `*apps.DeploymentList`), the unstructured one of a custom resource.
fn go_type(obj: &Value) -> String {
    let text = |name: &str| obj.get(name).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let list = is_list(obj);
    let item_kind = match list {
        true => kind.strip_suffix("List").unwrap_or(kind),
        false => kind,
    };
    if registry::wire::kind(api_version, item_kind).is_none() {
        let suffix = if list { "List" } else { "" };
        return format!("*unstructured.Unstructured{suffix}");
    }
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    // The internal packages are named for the group's first label, but for the groups
    // whose kinds live elsewhere (events.k8s.io's Event is core's).
    let package = match group {
        "" | "events.k8s.io" => "core",
        "internal.apiserver.k8s.io" => "apiserverinternal",
        group => group.split('.').next().unwrap_or(group),
    };
    format!("*{package}.{kind}")
}

/// An answer (one object, a whole list or a Status) as `meta` asks for it.
pub fn transform(obj: &Value, meta: Metadata) -> Result<Value, RegistryError> {
    if obj.get("kind").and_then(Value::as_str) == Some("Status") {
        return Ok(obj.clone());
    }
    let api_version = meta.api_version();
    match (meta.list, is_list(obj)) {
        (false, false) => Ok(object(obj, api_version)),
        (true, true) => {
            let metadata = obj
                .get("metadata")
                .and_then(Value::as_object)
                .map(list_metadata)
                .unwrap_or_default();
            let items = obj["items"]
                .as_array()
                .map(|items| items.iter().map(|i| object(i, api_version)).collect())
                .unwrap_or_default();
            let mut out = Map::with_capacity(4);
            out.insert("kind".into(), Value::from("PartialObjectMetadataList"));
            out.insert("apiVersion".into(), Value::from(api_version));
            out.insert("metadata".into(), Value::Object(metadata));
            out.insert("items".into(), Value::Array(items));
            Ok(Value::Object(out))
        }
        (false, true) => Err(RegistryError::NotAcceptable(format!(
            "you requested PartialObjectMetadata, but the requested object is a list ({})",
            go_type(obj)
        ))),
        (true, false) => Err(RegistryError::NotAcceptable(format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
            go_type(obj)
        ))),
    }
}

/// A streamed list as `meta` asks for it: its items' metadata as they come.
pub fn list(list: ListStream, meta: Metadata) -> Result<ListStream, RegistryError> {
    if !meta.list {
        let shape = Value::Object(Map::from_iter([
            ("apiVersion".to_string(), Value::from(list.api_version)),
            ("kind".to_string(), Value::from(list.kind)),
            ("items".to_string(), Value::Array(Vec::new())),
        ]));
        return Err(RegistryError::NotAcceptable(format!(
            "you requested PartialObjectMetadata, but the requested object is a list ({})",
            go_type(&shape)
        )));
    }
    let api_version = meta.api_version();
    Ok(ListStream {
        api_version: api_version.to_string(),
        kind: "PartialObjectMetadataList".to_string(),
        metadata: list_metadata(&list.metadata),
        items: Box::pin(list.items.map_ok(move |item| object(&item, api_version))),
    })
}

#[cfg(test)]
mod tests;
