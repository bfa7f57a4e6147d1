//! Schemas of the List kinds (PodList, DeploymentList, ...), which k8s-openapi models as one
//! generic type without a schema of its own.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::markers::list_docs;
use super::LIST_META;
use crate::refs::definition_ref;

/// The definition of `list_kind`, listing items of the definition `item`; named as upstream
/// names it: the item's package and the list kind ("io.k8s.api.core.v1.PodList").
pub(crate) fn list_definition(
    definitions: &BTreeMap<String, Value>,
    item: &str,
    list_kind: &str,
) -> (String, Value) {
    let package = item.rsplit_once('.').map_or("", |(package, _)| package);
    let name = format!("{package}.{list_kind}");
    let item_kind = item.rsplit('.').next().unwrap_or(item);
    let (description, items_description) = match list_docs(&name) {
        Some((doc, items)) => (doc.to_string(), items.to_string()),
        None => (
            format!("{list_kind} is a list of {item_kind}."),
            format!("List of {item_kind}."),
        ),
    };
    // apiVersion and kind read the same on every kind: reuse the item's wording.
    let type_meta = |field: &str| {
        definitions
            .get(item)
            .and_then(|schema| schema.pointer(&format!("/properties/{field}")))
            .cloned()
            .unwrap_or_else(|| json!({"type": "string"}))
    };
    let schema = json!({
        "description": description,
        "type": "object",
        "properties": {
            "apiVersion": type_meta("apiVersion"),
            "items": {
                "description": items_description,
                "type": "array",
                "items": definition_ref(item),
            },
            "kind": type_meta("kind"),
            "metadata": {
                "$ref": definition_ref(LIST_META)["$ref"],
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
            },
        },
        "required": ["items"],
    });
    (name, schema)
}
