//! The Strategies of custom resources and of CustomResourceDefinitions themselves.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use super::cel::Rules;
use super::conditions::set_condition;
use super::definition::{Definition, CLEANUP_FINALIZER};
use super::schema::CustomSchema;
use super::validate_definition;
use registry::catalogue::ResourceInfo;
use registry::error::Cause;
use registry::strategy::conversion::ApiVersion;
use registry::strategy::{default_at, Conversion, Converter, Strategy};

/// A served version of a custom resource: its schema's defaults and validation, and its CEL
/// rules. Objects are otherwise plain: the generic Store does the rest.
pub struct CustomResourceStrategy {
    pub(super) schema: Option<Arc<CustomSchema>>,
    pub(super) rules: Option<Arc<Rules>>,
    /// Set while the definition is being deleted: no new objects (upstream answers
    /// MethodNotAllowed to creates then).
    pub(super) terminating: Arc<AtomicBool>,
    /// Other versions share the storage.
    pub(super) multi_version: bool,
    /// The definition's conversion webhook (strategy Webhook), shared by its versions.
    pub(super) converter: Option<Arc<dyn Converter>>,
}

impl Strategy for CustomResourceStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(schema) = &self.schema {
            schema.apply_defaults(obj);
        }
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        if let Some(schema) = &self.schema {
            schema.apply_defaults(new);
        }
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        self.check(obj, None)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        self.check(new, Some(old))
    }

    fn conversion(&self, info: &ResourceInfo) -> Option<Arc<dyn Conversion>> {
        self.multi_version
            .then(|| Arc::new(ApiVersion(info.api_version())) as Arc<dyn Conversion>)
    }

    fn converter(&self, _info: &ResourceInfo) -> Option<Arc<dyn Converter>> {
        self.converter.clone()
    }

    fn refuses_create(&self) -> Option<String> {
        self.terminating
            .load(Ordering::Acquire)
            .then(|| "create not allowed while custom resource definition is terminating".into())
    }
}

impl CustomResourceStrategy {
    fn check(&self, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        let mut causes = match &self.schema {
            Some(schema) => schema.validate(obj),
            None => Vec::new(),
        };
        // Rules see only values that passed the schema, as upstream runs them after it.
        if let Some(rules) = self.rules.as_ref().filter(|_| causes.is_empty()) {
            causes.extend(rules.validate(obj, old));
        }
        causes
    }
}

/// CustomResourceDefinitions: v1 defaults, the cleanup finalizer, stored versions, and
/// validation of the definition and its schemas.
pub struct DefinitionStrategy;

impl Strategy for DefinitionStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        defaults(obj);
        let stored: Vec<String> = Definition::parse(obj)
            .storage_version()
            .map(|v| v.name.clone())
            .into_iter()
            .collect();
        if let Some(map) = obj.as_object_mut() {
            map.insert(
                "status".into(),
                json!({"conditions": [], "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": stored}),
            );
        }
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        defaults(new);
        // A new storage version joins the versions objects may be stored in.
        let storage = Definition::parse(new)
            .storage_version()
            .map(|v| v.name.clone());
        if let (Some(storage), Some(status)) = (
            storage,
            new.get_mut("status").and_then(Value::as_object_mut),
        ) {
            let stored = status.entry("storedVersions").or_insert_with(|| json!([]));
            if let Some(list) = stored.as_array_mut() {
                if !list.iter().any(|v| v == storage.as_str()) {
                    list.push(json!(storage));
                }
            }
        }
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        validate_definition::validate(obj)
    }

    /// As upstream, the cleanup finalizer arrives with the first delete, not before.
    fn deletion_finalizer(&self) -> Option<&'static str> {
        Some(CLEANUP_FINALIZER)
    }

    fn mark_deleting(&self, obj: &mut Value) {
        let Some(map) = obj.as_object_mut() else {
            return;
        };
        let status = map.entry("status").or_insert_with(|| json!({}));
        set_condition(
            status,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        );
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        validate_definition::validate_update(new, old)
    }
}

/// apiextensions.k8s.io/v1 defaults (upstream's SetDefaults_CustomResourceDefinition).
fn defaults(obj: &mut Value) {
    let kind = obj
        .pointer("/spec/names/kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if !kind.is_empty() {
        default_at(
            obj,
            &["spec", "names", "singular"],
            json!(kind.to_lowercase()),
        );
        default_at(
            obj,
            &["spec", "names", "listKind"],
            json!(format!("{kind}List")),
        );
    }
    default_at(obj, &["spec", "conversion", "strategy"], json!("None"));
    // A conversion webhook's Service is reached on 443 unless it says otherwise.
    if obj
        .pointer("/spec/conversion/webhook/clientConfig/service")
        .is_some_and(Value::is_object)
    {
        default_at(
            obj,
            &[
                "spec",
                "conversion",
                "webhook",
                "clientConfig",
                "service",
                "port",
            ],
            json!(443),
        );
    }
}
