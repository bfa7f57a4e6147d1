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

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use axum::routing::any;
use axum::{Extension, Router};
use registry::auth::UserInfo;
use registry::{RegistryError, ResourceInfo};
use serde::Serialize;
use serde_json::{json, Value};

use super::authz::Authorization;
use crate::api::response;
use crate::api::MAX_BODY;
use types::{AccessSpec, AccessStatus, Review, RulesSpec, RulesStatus};
pub use types::{GROUP, VERSION};

const SUBJECT: &str = "SubjectAccessReview";
const LOCAL: &str = "LocalSubjectAccessReview";
const SELF: &str = "SelfSubjectAccessReview";
const RULES: &str = "SelfSubjectRulesReview";

/// The reviews' routes (every method: the others are 405, as upstream answers them).
pub fn router(authorization: Authorization) -> Router {
    let base = format!("/apis/{GROUP}/{VERSION}");
    Router::new()
        .route(&format!("{base}/subjectaccessreviews"), any(subject))
        .route(
            &format!("{base}/selfsubjectaccessreviews"),
            any(self_access),
        )
        .route(&format!("{base}/selfsubjectrulesreviews"), any(self_rules))
        .route(
            &format!("{base}/namespaces/{{namespace}}/localsubjectaccessreviews"),
            any(local),
        )
        .with_state(authorization)
}

/// The reviews as discovery lists them: create only.
pub fn resource_infos() -> Vec<Arc<ResourceInfo>> {
    static INFOS: OnceLock<Vec<Arc<ResourceInfo>>> = OnceLock::new();
    INFOS
        .get_or_init(|| {
            [
                (LOCAL, true),
                (SELF, false),
                (RULES, false),
                (SUBJECT, false),
            ]
            .into_iter()
            .map(|(kind, namespaced)| Arc::new(resource_info(kind, namespaced)))
            .collect()
        })
        .clone()
}

fn resource_info(kind: &str, namespaced: bool) -> ResourceInfo {
    super::review::create_only(GROUP, VERSION, kind, namespaced)
}

/// The body of a POST as an object; any other method is 405.
async fn read(method: &Method, headers: &HeaderMap, body: Body) -> Result<Value, RegistryError> {
    if method != Method::POST {
        return Err(RegistryError::MethodNotAllowed(
            "the server does not allow this method on the requested resource".into(),
        ));
    }
    let body = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| RegistryError::RequestEntityTooLarge(format!("limit is {MAX_BODY} bytes")))?;
    crate::api::body::check_body_type(headers, &body)?;
    if body.is_empty() {
        return Err(RegistryError::BadRequest(
            "the body of the request is empty".into(),
        ));
    }
    Ok(crate::api::body::parse(headers, &body)?.value)
}

fn created<S: Serialize, T: Serialize>(review: &Review<S, T>) -> Response {
    response::json(
        StatusCode::CREATED,
        &serde_json::to_value(review).unwrap_or_default(),
    )
}

fn answer(result: Result<Response, RegistryError>) -> Response {
    result.unwrap_or_else(response::error)
}

/// Metadata as upstream's answers carry it: nothing set but the namespace of a local review.
fn metadata(namespace: Option<&str>) -> Value {
    match namespace {
        Some(ns) => json!({"namespace": ns, "creationTimestamp": null}),
        None => json!({"creationTimestamp": null}),
    }
}

async fn subject(
    State(authorization): State<Authorization>,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    answer(
        async {
            let value = read(&method, &headers, body).await?;
            let body = types::decode::<AccessSpec>(value, SUBJECT)?;
            let mut causes = types::subject_causes(&body.spec);
            causes.extend(types::metadata_causes(
                &body.metadata,
                &["namespace"],
                "must be empty",
            ));
            types::invalid(SUBJECT, causes)?;
            let user = Arc::new(types::subject(&body.spec));
            let verdict = authorization
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
        .await,
    )
}

async fn local(
    State(authorization): State<Authorization>,
    Path(namespace): Path<String>,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    answer(
        async {
            let value = read(&method, &headers, body).await?;
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
            causes.extend(types::local_causes(&body.spec, &namespace));
            types::invalid(LOCAL, causes)?;
            let user = Arc::new(types::subject(&body.spec));
            let verdict = authorization
                .authorizer
                .authorize(&types::attributes(&body.spec, user));
            Ok(created(&Review {
                kind: LOCAL,
                api_version: types::API_VERSION,
                metadata: metadata(Some(&namespace)),
                spec: body.spec,
                status: AccessStatus::from(verdict),
            }))
        }
        .await,
    )
}

async fn self_access(
    State(authorization): State<Authorization>,
    user: Option<Extension<UserInfo>>,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    answer(
        async {
            let value = read(&method, &headers, body).await?;
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
            let Some(Extension(user)) = user else {
                return Err(RegistryError::BadRequest(
                    "no user present on request".into(),
                ));
            };
            let verdict = authorization
                .authorizer
                .authorize(&types::attributes(&spec, Arc::new(user)));
            Ok(created(&Review {
                kind: SELF,
                api_version: types::API_VERSION,
                metadata: metadata(None),
                spec,
                status: AccessStatus::from(verdict),
            }))
        }
        .await,
    )
}

async fn self_rules(
    State(authorization): State<Authorization>,
    user: Option<Extension<UserInfo>>,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    answer(
        async {
            let value = read(&method, &headers, body).await?;
            let body = types::decode::<RulesSpec>(value, RULES)?;
            let Some(Extension(user)) = user else {
                return Err(RegistryError::BadRequest(
                    "no user present on request".into(),
                ));
            };
            if body.spec.namespace.is_empty() {
                return Err(RegistryError::BadRequest("no namespace on request".into()));
            }
            let rules = authorization.rules.rules_for(&user, &body.spec.namespace);
            // As upstream, the answer carries the status alone.
            Ok(created(&Review {
                kind: RULES,
                api_version: types::API_VERSION,
                metadata: metadata(None),
                spec: RulesSpec::default(),
                status: RulesStatus::from(rules),
            }))
        }
        .await,
    )
}

#[cfg(test)]
mod tests;
