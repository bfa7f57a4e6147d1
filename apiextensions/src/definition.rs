//! The parts of an apiextensions.k8s.io/v1 CustomResourceDefinition this server acts on, read
//! leniently from the stored JSON: a definition that got past validation always parses, and
//! anything else a client put there is kept in the object untouched.

use serde::Deserialize;
use serde_json::Value;

/// The finalizer that holds a deleting definition until its custom resources are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Definition {
    pub metadata: Metadata,
    pub spec: Spec,
    pub status: Status,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Metadata {
    pub name: String,
    pub uid: String,
    pub deletion_timestamp: Option<String>,
    pub finalizers: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Spec {
    pub group: String,
    pub names: Names,
    pub scope: String,
    pub versions: Vec<Version>,
    pub conversion: Option<Conversion>,
    pub preserve_unknown_fields: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct Names {
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub kind: String,
    pub list_kind: String,
    pub categories: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Version {
    pub name: String,
    pub served: bool,
    pub storage: bool,
    pub deprecated: bool,
    pub deprecation_warning: Option<String>,
    pub schema: Option<VersionSchema>,
    pub subresources: Option<Subresources>,
    pub additional_printer_columns: Vec<PrinterColumn>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct VersionSchema {
    #[serde(rename = "openAPIV3Schema")]
    pub open_api_v3_schema: Option<Value>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Subresources {
    pub status: Option<Value>,
    pub scale: Option<Scale>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct Scale {
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
    pub label_selector_path: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct PrinterColumn {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub format: String,
    pub description: String,
    pub priority: i32,
    #[serde(rename = "jsonPath")]
    pub json_path: String,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct Conversion {
    pub strategy: String,
    pub webhook: Option<WebhookConversion>,
}

/// `spec.conversion.webhook` (upstream's internal type names its two fields
/// `webhookClientConfig` and `conversionReviewVersions`, as its messages show them).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct WebhookConversion {
    /// `url` or `service`, and `caBundle`: the webhook transport reads it as it is.
    pub client_config: Option<Value>,
    pub conversion_review_versions: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Status {
    pub conditions: Vec<Condition>,
    pub accepted_names: Names,
    pub stored_versions: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct Condition {
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

impl Definition {
    /// Reads a stored or submitted definition; fields of the wrong JSON type count as absent
    /// here (validation reports them).
    pub fn parse(obj: &Value) -> Definition {
        Definition::deserialize(obj).unwrap_or_else(|_| lenient(obj))
    }

    pub fn condition(&self, kind: &str) -> bool {
        self.status
            .conditions
            .iter()
            .any(|c| c.kind == kind && c.status == "True")
    }

    /// Served once its names are accepted and it is established, as upstream's handler.
    pub fn established(&self) -> bool {
        self.condition("Established")
    }

    pub fn terminating(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    pub fn namespaced(&self) -> bool {
        self.spec.scope == "Namespaced"
    }

    pub fn storage_version(&self) -> Option<&Version> {
        self.spec.versions.iter().find(|v| v.storage)
    }
}

/// Part by part, so one malformed part leaves the rest readable.
fn lenient(obj: &Value) -> Definition {
    fn part<'a, T: Deserialize<'a> + Default>(v: Option<&'a Value>) -> T {
        v.and_then(|v| T::deserialize(v).ok()).unwrap_or_default()
    }
    let spec = obj.get("spec");
    Definition {
        metadata: part(obj.get("metadata")),
        spec: Spec {
            group: part(spec.and_then(|s| s.get("group"))),
            names: part(spec.and_then(|s| s.get("names"))),
            scope: part(spec.and_then(|s| s.get("scope"))),
            versions: spec
                .and_then(|s| s.get("versions"))
                .and_then(Value::as_array)
                .map(|vs| vs.iter().map(|v| part(Some(v))).collect())
                .unwrap_or_default(),
            conversion: part(spec.and_then(|s| s.get("conversion"))),
            preserve_unknown_fields: part(spec.and_then(|s| s.get("preserveUnknownFields"))),
        },
        status: part(obj.get("status")),
    }
}
