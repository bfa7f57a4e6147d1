//! `authentication.k8s.io/v1` SelfSubjectReview (`kubectl auth whoami`): create-only, nothing
//! stored; the answer's `status.userInfo` is the user the request authenticated as (upstream's
//! pkg/registry/authentication/selfsubjectreview). Its catalogue entry is create-only; the
//! API's create-only path serves it with [`SelfSubjectReview`].

use axum::http::{header, HeaderMap};
use registry::RegistryError;
use serde_json::{json, Map, Value};

use crate::api::create_only::{Creater, Creation};
use crate::api::response;
use crate::authn::UserInfo;

pub const GROUP: &str = "authentication.k8s.io";
pub const VERSION: &str = "v1";
pub const KIND: &str = "SelfSubjectReview";
pub const PLURAL: &str = "selfsubjectreviews";

/// Answers a SelfSubjectReview with the requester.
pub struct SelfSubjectReview;

#[async_trait::async_trait]
impl Creater for SelfSubjectReview {
    async fn create(&self, request: Creation<'_>) -> Result<Value, RegistryError> {
        check_body(request.headers, request.body).map_err(RegistryError::BadRequest)?;
        let Some(user) = request.user else {
            return Err(RegistryError::BadRequest(
                "no user present on request".into(),
            ));
        };
        Ok(review(user, chrono::Utc::now()))
    }
}

/// A JSON body must be a SelfSubjectReview (its kind and apiVersion, when given); other
/// encodings are not read, as nothing in the body matters.
fn check_body(headers: &HeaderMap, body: &[u8]) -> Result<(), String> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|t| t.trim_start().starts_with(response::JSON));
    if body.is_empty() || !json {
        return Ok(());
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| format!("the body of the request is not valid JSON: {e}"))?;
    let field = |name: &str| value.get(name).and_then(Value::as_str).unwrap_or_default();
    if !value.is_object() {
        return Err("the body of the request must be a SelfSubjectReview object".into());
    }
    if !field("kind").is_empty() && field("kind") != KIND {
        return Err(format!(
            "the body of the request is a {}, not a {KIND}",
            field("kind")
        ));
    }
    let api_version = format!("{GROUP}/{VERSION}");
    if !field("apiVersion").is_empty() && field("apiVersion") != api_version {
        return Err(format!(
            "the body of the request is of apiVersion {}, not {api_version}",
            field("apiVersion")
        ));
    }
    Ok(())
}

/// The answer: the user's name, uid, groups and extra (empty ones left out, as upstream's
/// omitempty does).
pub fn review(user: &UserInfo, now: chrono::DateTime<chrono::Utc>) -> Value {
    let mut info = Map::new();
    info.insert("username".into(), user.name.clone().into());
    if !user.uid.is_empty() {
        info.insert("uid".into(), user.uid.clone().into());
    }
    if !user.groups.is_empty() {
        info.insert("groups".into(), user.groups.clone().into());
    }
    if !user.extra.is_empty() {
        info.insert("extra".into(), json!(user.extra));
    }
    json!({
        "kind": KIND,
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "metadata": {
            "creationTimestamp": now.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        },
        "status": {"userInfo": Value::Object(info)},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_review_names_the_user() {
        let now = chrono::DateTime::parse_from_rfc3339("2025-01-02T03:04:05Z")
            .expect("time")
            .to_utc();
        let user = UserInfo {
            name: "alice".into(),
            uid: "uid-1".into(),
            groups: vec!["devs".into(), "system:authenticated".into()],
            extra: [("k".to_string(), vec!["v".to_string()])].into(),
        };
        assert_eq!(
            review(&user, now),
            json!({
                "kind": "SelfSubjectReview",
                "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"creationTimestamp": "2025-01-02T03:04:05Z"},
                "status": {"userInfo": {
                    "username": "alice",
                    "uid": "uid-1",
                    "groups": ["devs", "system:authenticated"],
                    "extra": {"k": ["v"]},
                }},
            })
        );
        let anonymous = review(&UserInfo::anonymous(), now);
        assert_eq!(
            anonymous["status"]["userInfo"],
            json!({"username": "system:anonymous", "groups": ["system:unauthenticated"]})
        );
    }

    #[test]
    fn bodies() {
        let json_type = HeaderMap::from_iter([(
            header::CONTENT_TYPE,
            "application/json".parse().expect("value"),
        )]);
        let ok = br#"{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","metadata":{"creationTimestamp":null},"status":{}}"#;
        assert!(check_body(&json_type, ok).is_ok());
        assert!(check_body(&json_type, b"").is_ok());
        assert!(check_body(&json_type, b"{}").is_ok());
        assert!(check_body(&json_type, b"not json").is_err());
        assert!(check_body(&json_type, b"[]").is_err());
        assert!(check_body(&json_type, br#"{"kind":"Pod"}"#).is_err());
        assert!(check_body(&json_type, br#"{"apiVersion":"v1"}"#).is_err());
        // Other encodings are not read.
        let protobuf = HeaderMap::from_iter([(
            header::CONTENT_TYPE,
            "application/vnd.kubernetes.protobuf"
                .parse()
                .expect("value"),
        )]);
        assert!(check_body(&protobuf, b"k8s\x00...").is_ok());
    }

    #[test]
    fn discovery_lists_the_review() {
        let resources = registry::Catalogue::builtin().all();
        let list = crate::discovery::resource_list(&resources, GROUP, VERSION).expect("listed");
        assert_eq!(list["resources"][0]["name"], PLURAL);
        assert_eq!(list["resources"][0]["verbs"], json!(["create"]));
        assert_eq!(list["resources"][0]["namespaced"], false);
        let groups = crate::discovery::api_groups(&resources);
        assert!(groups["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .any(|g| g["name"] == GROUP));
    }
}
