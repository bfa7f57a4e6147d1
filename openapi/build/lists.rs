//! Schemas of the List kinds (PodList, DeploymentList, ...), which k8s-openapi models as one
//! generic type without a schema of its own.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::protos::Tables;

const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

/// The definition of `list_kind`, listing items of the definition `item`; named as upstream
/// names it: the item's package and the list kind ("io.k8s.api.core.v1.PodList").
pub fn list_definition(
    tables: &Tables,
    definitions: &BTreeMap<String, Value>,
    item: &str,
    list_kind: &str,
) -> (String, Value) {
    let package = item.rsplit_once('.').map_or("", |(package, _)| package);
    let name = format!("{package}.{list_kind}");
    let item_kind = item.rsplit('.').next().unwrap_or(item);
    let (description, items_description) = match tables.lists.get(&name) {
        Some((doc, items)) => (doc.clone(), items.clone()),
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
                "items": {"$ref": format!("#/definitions/{item}")},
            },
            "kind": type_meta("kind"),
            "metadata": {
                "$ref": format!("#/definitions/{LIST_META}"),
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
            },
        },
        "required": ["items"],
    });
    (name, schema)
}
