//! authorization.k8s.io/v1 access reviews (upstream's pkg/registry/authorization): create-only,
//! nothing stored; each answers with what the authorizer chain says.
//!
//! - SubjectAccessReview: may the user of `spec` do what its attributes name?
//! - LocalSubjectAccessReview: the same, within the namespace of its URL.
//! - SelfSubjectAccessReview: may the requester? (`kubectl auth can-i`)
//! - SelfSubjectRulesReview: what may the requester do in `spec.namespace`?
//!   (`kubectl auth can-i --list`)
//!
//! The requests themselves were authorized as creates of these resources before they got
//! here, like any other.

mod types;

use std::sync::Arc;

use axum::http::HeaderMap;
use registry::RegistryError;
use serde::Serialize;
use serde_json::{json, Value};

use crate::api::create_only::{Creater, Creation};
use crate::authz::Authorization;
use types::{AccessSpec, AccessStatus, Review, RulesSpec, RulesStatus};
pub use types::{GROUP, VERSION};

pub const SUBJECT: &str = "SubjectAccessReview";
pub const LOCAL: &str = "LocalSubjectAccessReview";
pub const SELF: &str = "SelfSubjectAccessReview";
pub const RULES: &str = "SelfSubjectRulesReview";

/// The body of a create as an object of `kind`.
fn read(headers: &HeaderMap, body: &[u8], kind: &str) -> Result<Value, RegistryError> {
    crate::api::body::check_body_type(headers, body)?;
    if body.is_empty() {
        return Err(RegistryError::BadRequest(
            "the body of the request is empty".into(),
        ));
    }
    Ok(crate::api::body::parse(headers, body, kind)?.value)
}

fn created<S: Serialize, T: Serialize>(review: &Review<S, T>) -> Value {
    serde_json::to_value(review).unwrap_or_default()
}

/// Metadata as upstream's answers carry it: nothing set but the namespace of a local review.
fn metadata(namespace: Option<&str>) -> Value {
    match namespace {
        Some(ns) => json!({"namespace": ns, "creationTimestamp": null}),
        None => json!({"creationTimestamp": null}),
    }
}

/// SubjectAccessReview: may the user of `spec` do what its attributes name?
pub struct SubjectAccess(pub Authorization);

#[async_trait::async_trait]
impl Creater for SubjectAccess {
    async fn create(&self, request: Creation<'_>) -> Result<Value, RegistryError> {
        let value = read(request.headers, request.body, SUBJECT)?;
        let body = types::decode::<AccessSpec>(value, SUBJECT)?;
        let mut causes = types::subject_causes(&body.spec);
        causes.extend(types::metadata_causes(
            &body.metadata,
            &["namespace"],
            "must be empty",
        ));
        types::invalid(SUBJECT, causes)?;
        let user = Arc::new(types::subject(&body.spec));
        let verdict = self
            .0
            .authorizer
            .authorize(&types::attributes(&body.spec, user));
        Ok(created(&Review {
            kind: SUBJECT,
            api_version: types::API_VERSION,
            metadata: metadata(None),
            spec: body.spec,
            status: AccessStatus::from(verdict),
        }))
    }
}

/// LocalSubjectAccessReview: a SubjectAccessReview within the namespace of its URL.
pub struct LocalSubjectAccess(pub Authorization);

#[async_trait::async_trait]
impl Creater for LocalSubjectAccess {
    async fn create(&self, request: Creation<'_>) -> Result<Value, RegistryError> {
        let namespace = request.namespace.unwrap_or_default();
        let value = read(request.headers, request.body, LOCAL)?;
        let body = types::decode::<AccessSpec>(value, LOCAL)?;
        // upstream's EnsureObjectNamespaceMatchesRequestNamespace.
        let sent = body
            .metadata
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !sent.is_empty() && sent != namespace {
            return Err(RegistryError::BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request".into(),
            ));
        }
        let mut causes = types::subject_causes(&body.spec);
        causes.extend(types::metadata_causes(
            &body.metadata,
            &["namespace"],
            "must be empty except for namespace",
        ));
        causes.extend(types::local_causes(&body.spec, namespace));
        types::invalid(LOCAL, causes)?;
        let user = Arc::new(types::subject(&body.spec));
        let verdict = self
            .0
            .authorizer
            .authorize(&types::attributes(&body.spec, user));
        Ok(created(&Review {
            kind: LOCAL,
            api_version: types::API_VERSION,
            metadata: metadata(Some(namespace)),
            spec: body.spec,
            status: AccessStatus::from(verdict),
        }))
    }
}

/// SelfSubjectAccessReview: may the requester? (`kubectl auth can-i`)
pub struct SelfSubjectAccess(pub Authorization);

#[async_trait::async_trait]
impl Creater for SelfSubjectAccess {
    async fn create(&self, request: Creation<'_>) -> Result<Value, RegistryError> {
        let value = read(request.headers, request.body, SELF)?;
        let body = types::decode::<AccessSpec>(value, SELF)?;
        // A SelfSubjectAccessReviewSpec has only the attributes.
        let spec = AccessSpec {
            resource_attributes: body.spec.resource_attributes,
            non_resource_attributes: body.spec.non_resource_attributes,
            ..Default::default()
        };
        let mut causes = types::attributes_causes(&spec);
        causes.extend(types::metadata_causes(
            &body.metadata,
            &["namespace"],
            "must be empty",
        ));
        types::invalid(SELF, causes)?;
        let Some(user) = request.user else {
            return Err(RegistryError::BadRequest(
                "no user present on request".into(),
            ));
        };
        let verdict = self
            .0
            .authorizer
            .authorize(&types::attributes(&spec, Arc::new(user.clone())));
        Ok(created(&Review {
            kind: SELF,
            api_version: types::API_VERSION,
            metadata: metadata(None),
            spec,
            status: AccessStatus::from(verdict),
        }))
    }
}

/// SelfSubjectRulesReview: what may the requester do in `spec.namespace`?
/// (`kubectl auth can-i --list`)
pub struct SelfSubjectRules(pub Authorization);

#[async_trait::async_trait]
impl Creater for SelfSubjectRules {
    async fn create(&self, request: Creation<'_>) -> Result<Value, RegistryError> {
        let value = read(request.headers, request.body, RULES)?;
        let body = types::decode::<RulesSpec>(value, RULES)?;
        let Some(user) = request.user else {
            return Err(RegistryError::BadRequest(
                "no user present on request".into(),
            ));
        };
        if body.spec.namespace.is_empty() {
            return Err(RegistryError::BadRequest("no namespace on request".into()));
        }
        let rules = self.0.rules.rules_for(user, &body.spec.namespace);
        // As upstream, the answer carries the status alone.
        Ok(created(&Review {
            kind: RULES,
            api_version: types::API_VERSION,
            metadata: metadata(None),
            spec: RulesSpec::default(),
            status: RulesStatus::from(rules),
        }))
    }
}

#[cfg(test)]
mod tests;
