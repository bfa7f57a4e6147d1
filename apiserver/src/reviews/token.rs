//! `authentication.k8s.io/v1` TokenReview: create-only, nothing stored; the answer says
//! whether the token authenticates, as whom and for which audiences (upstream's
//! pkg/registry/authentication/tokenreview). Webhook token authenticators of other
//! components call it.

use std::sync::Arc;

use registry::RegistryError;
use serde_json::{json, Map, Value};

use crate::api::create_only::{Creater, Creation};
use crate::authn::review::TokenOutcome;
use crate::authn::Authenticator;

pub const GROUP: &str = "authentication.k8s.io";
pub const KIND: &str = "TokenReview";

pub struct TokenReview(pub Arc<Authenticator>);

#[async_trait::async_trait]
impl Creater for TokenReview {
    async fn create(&self, request: Creation<'_>) -> Result<Value, RegistryError> {
        let review = parse(request.headers, request.body)?;
        let spec = &review["spec"];
        let token = spec["token"].as_str().unwrap_or_default();
        if token.is_empty() {
            return Err(RegistryError::BadRequest(
                "token is required for TokenReview in authentication".into(),
            ));
        }
        let audiences: Vec<String> = spec["audiences"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect();
        let status = match self.0.review_token(token, &audiences).await {
            TokenOutcome::User { user, audiences } => {
                let mut info = Map::new();
                info.insert("username".into(), json!(user.name));
                if !user.uid.is_empty() {
                    info.insert("uid".into(), json!(user.uid));
                }
                if !user.groups.is_empty() {
                    info.insert("groups".into(), json!(user.groups));
                }
                if !user.extra.is_empty() {
                    info.insert("extra".into(), json!(user.extra));
                }
                let mut status = json!({"authenticated": true, "user": info});
                if !audiences.is_empty() {
                    status["audiences"] = json!(audiences);
                }
                status
            }
            TokenOutcome::Refused(why) => json!({"user": {}, "error": why}),
        };
        // The request comes back with its status, as upstream echoes the object.
        Ok(json!({
            "kind": KIND,
            "apiVersion": format!("{GROUP}/v1"),
            "metadata": {"creationTimestamp": null},
            "spec": spec,
            "status": status,
        }))
    }
}

/// The body as a TokenReview, in any of the encodings a body may have (client-go's typed
/// clients send protobuf).
fn parse(headers: &axum::http::HeaderMap, body: &[u8]) -> Result<Value, RegistryError> {
    crate::api::body::check_body_type(headers, body)?;
    let value = crate::api::body::parse(headers, body, KIND)?.value;
    let kind = value["kind"].as_str().unwrap_or_default();
    if !value.is_object() || (!kind.is_empty() && kind != KIND) {
        return Err(RegistryError::BadRequest(format!(
            "the object provided is unrecognized (must be of type {KIND})"
        )));
    }
    Ok(value)
}
