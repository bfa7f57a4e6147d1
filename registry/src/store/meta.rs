//! Generic metadata rules of create and update (upstream's BeforeCreate / BeforeUpdate and
//! ValidateObjectMeta): what clients may not set, what may not change, what must be valid.

use serde_json::{json, Value};

use super::Store;
use crate::error::{Cause, RegistryError, Result};
use crate::object::{self, Object};
use crate::validation::{self, names};

/// Fields a client may not choose on create.
const SERVER_SET_ON_CREATE: [&str; 6] = [
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "managedFields",
];

impl Store {
    /// The body must be an object of this resource's kind; missing apiVersion/kind are taken
    /// from the route, as upstream's decoder defaults them.
    pub(super) fn check_kind(&self, obj: &mut Object) -> Result<()> {
        let Some(map) = obj.as_object_mut() else {
            return Err(RegistryError::BadRequest(
                "the body of the request must be a JSON object".into(),
            ));
        };
        let expected_version = self.info.api_version();
        // Built-in kinds are decoded as upstream's scheme decodes them, which refuses another
        // kind before the apiVersion is compared (custom resources have no scheme).
        if self.wire_type.is_some() {
            let given = |field: &str| {
                map.get(field)
                    .and_then(Value::as_str)
                    .filter(|v| !v.is_empty())
                    .map(str::to_string)
            };
            let version = given("apiVersion").unwrap_or_else(|| expected_version.clone());
            let kind = given("kind").unwrap_or_else(|| self.info.kind.clone());
            if let Some(why) = super::scheme::decode_problem(&self.info, &version, &kind) {
                return Err(RegistryError::BadRequest(why));
            }
        }
        match map.get("apiVersion").and_then(Value::as_str) {
            None | Some("") => {
                map.insert("apiVersion".into(), json!(expected_version));
            }
            Some(v) if v == expected_version => {}
            Some(v) => {
                return Err(RegistryError::BadRequest(format!(
                    "the API version in the data ({v}) does not match the expected API version ({expected_version})"
                )))
            }
        }
        match map.get("kind").and_then(Value::as_str) {
            None | Some("") => {
                map.insert("kind".into(), json!(self.info.kind));
            }
            Some(k) if k == self.info.kind => {}
            Some(k) => {
                return Err(RegistryError::BadRequest(format!(
                    "the kind in the data ({k}) does not match the expected kind ({})",
                    self.info.kind
                )))
            }
        }
        Ok(())
    }

    /// Puts the object in the request's namespace (or none, for cluster-scoped resources).
    pub(super) fn check_namespace(&self, obj: &mut Object, namespace: Option<&str>) -> Result<()> {
        let meta = object::meta_mut(obj);
        match namespace {
            Some(ns) => {
                match meta.get("namespace").and_then(Value::as_str) {
                    None | Some("") => {}
                    Some(given) if given == ns => {}
                    Some(_) => {
                        return Err(RegistryError::BadRequest(
                            "the namespace of the provided object does not match the namespace sent on the request".into(),
                        ))
                    }
                }
                meta.insert("namespace".into(), json!(ns));
            }
            None => {
                meta.remove("namespace");
            }
        }
        Ok(())
    }

    /// Resets what clients may not set on create and sets what the server owns.
    pub(super) fn prepare_create_meta(&self, obj: &mut Object) {
        let has_generation = self.info.has_generation;
        let meta = object::meta_mut(obj);
        for field in SERVER_SET_ON_CREATE {
            meta.remove(field);
        }
        meta.remove("resourceVersion");
        meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        meta.insert("creationTimestamp".into(), json!(object::now()));
        if has_generation {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
        if self.info.status_subresource() && !self.strategy.keeps_status_on_create() {
            if let Some(map) = obj.as_object_mut() {
                map.remove("status");
            }
        }
    }

    /// Carries over from the stored object what an update may not change.
    pub(super) fn prepare_update_meta(&self, new: &mut Object, old: &Object) -> Vec<Cause> {
        let mut causes = Vec::new();
        let old_meta = old.get("metadata").cloned().unwrap_or(json!({}));
        let meta = object::meta_mut(new);
        let given_uid = meta.get("uid").and_then(Value::as_str).unwrap_or_default();
        let old_uid = old_meta
            .get("uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !given_uid.is_empty() && given_uid != old_uid {
            causes.push(Cause::invalid(
                "metadata.uid",
                format!("\"{given_uid}\""),
                "field is immutable",
            ));
        }
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ] {
            match old_meta.get(field) {
                Some(v) => meta.insert(field.into(), v.clone()),
                None => meta.remove(field),
            };
        }
        meta.remove("selfLink");
        meta.remove("managedFields");
        causes
    }

    /// ValidateObjectMeta: name, labels, annotations, finalizers, owner references.
    pub(super) fn validate_meta(&self, obj: &Object) -> Vec<Cause> {
        let mut causes = Vec::new();
        let name = object::name(obj);
        if name.is_empty() {
            causes.push(Cause::required("metadata.name"));
        } else {
            for why in self.strategy.name_problems(name) {
                causes.push(Cause::invalid("metadata.name", format!("\"{name}\""), &why));
            }
        }
        let meta = obj.get("metadata").cloned().unwrap_or(Value::Null);
        causes.extend(validation::validate_labels(
            meta.get("labels").unwrap_or(&Value::Null),
            "metadata.labels",
        ));
        causes.extend(validation::validate_annotations(
            meta.get("annotations").unwrap_or(&Value::Null),
            "metadata.annotations",
        ));
        for (i, f) in object::finalizers(obj).iter().enumerate() {
            let standard = matches!(
                f.as_str(),
                object::FINALIZER_ORPHAN | object::FINALIZER_FOREGROUND
            );
            if !standard {
                for why in names::is_qualified_name(f) {
                    causes.push(Cause::invalid(
                        &format!("metadata.finalizers[{i}]"),
                        format!("\"{f}\""),
                        &why,
                    ));
                }
            }
        }
        let finalizers = object::finalizers(obj);
        if finalizers.iter().any(|f| f == object::FINALIZER_ORPHAN)
            && finalizers.iter().any(|f| f == object::FINALIZER_FOREGROUND)
        {
            causes.push(Cause::invalid(
                "metadata.finalizers",
                format!("{finalizers:?}"),
                "finalizer orphan and foregroundDeletion cannot be both set",
            ));
        }
        if let Some(Value::Array(refs)) = meta.get("ownerReferences") {
            let mut controllers = 0;
            for (i, r) in refs.iter().enumerate() {
                for field in ["apiVersion", "kind", "name", "uid"] {
                    if r.get(field)
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                    {
                        causes.push(Cause::required(&format!(
                            "metadata.ownerReferences[{i}].{field}"
                        )));
                    }
                }
                if r.get("controller") == Some(&Value::Bool(true)) {
                    controllers += 1;
                }
            }
            if controllers > 1 {
                causes.push(Cause::invalid(
                    "metadata.ownerReferences",
                    "<references>",
                    "Only one reference can have Controller set to true",
                ));
            }
        }
        causes
    }

    /// The Invalid error for these causes, or Ok.
    pub(super) fn invalid_if_any(&self, name: &str, causes: Vec<Cause>) -> Result<()> {
        if causes.is_empty() {
            Ok(())
        } else {
            Err(RegistryError::invalid(
                &self.info.qualified_kind(),
                name,
                causes,
            ))
        }
    }
}
