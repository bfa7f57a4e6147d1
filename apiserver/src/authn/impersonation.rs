//! Impersonation (upstream's WithImpersonation filter): `Impersonate-User`,
//! `Impersonate-Group` (repeatable), `Impersonate-Uid` and `Impersonate-Extra-<key>` make the
//! request act as another user, each part authorized first with the verb `impersonate` for the
//! authenticated user. `kubectl --as --as-group --as-uid` send them.

use std::fmt;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use registry::auth::{Attributes, Authorizer, UserInfo, ANONYMOUS, AUTHENTICATED, UNAUTHENTICATED};
use registry::serviceaccount::claims::{self as service_account, USERNAME_PREFIX};
use registry::validation::names::{is_dns1123_label, is_dns1123_subdomain};
use registry::RegistryError;

use crate::api::response;
use crate::authz;

pub const USER: &str = "impersonate-user";
pub const GROUP: &str = "impersonate-group";
pub const UID: &str = "impersonate-uid";
pub const EXTRA_PREFIX: &str = "impersonate-extra-";

/// One thing a request asks to act as (upstream's ObjectReference per header value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    User(String),
    ServiceAccount { namespace: String, name: String },
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl Target {
    /// What the requestor must be allowed to do to act as this.
    fn attributes(&self, requestor: &Arc<UserInfo>) -> Attributes {
        let (group, version, resource, subresource, namespace, name) = match self {
            Target::User(name) => ("", "", "users", "", "", name.as_str()),
            Target::ServiceAccount { namespace, name } => (
                "",
                "",
                "serviceaccounts",
                "",
                namespace.as_str(),
                name.as_str(),
            ),
            Target::Group(name) => ("", "", "groups", "", "", name.as_str()),
            Target::Extra { key, value } => (
                "authentication.k8s.io",
                "v1",
                "userextras",
                key.as_str(),
                "",
                value.as_str(),
            ),
            Target::Uid(uid) => ("authentication.k8s.io", "v1", "uids", "", "", uid.as_str()),
        };
        Attributes {
            user: requestor.clone(),
            verb: "impersonate".into(),
            resource_request: true,
            namespace: namespace.into(),
            api_group: group.into(),
            api_version: version.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            name: name.into(),
            path: String::new(),
        }
    }
}

/// Printed as Go prints the ObjectReference upstream builds (its fields Kind, Namespace,
/// Name, UID, APIVersion, ResourceVersion, FieldPath, space separated), for the same message.
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const V1: &str = "authentication.k8s.io/v1";
        let (kind, namespace, name, api_version, field_path) = match self {
            Target::User(name) => ("User", "", name.as_str(), "", ""),
            Target::ServiceAccount { namespace, name } => {
                ("ServiceAccount", namespace.as_str(), name.as_str(), "", "")
            }
            Target::Group(name) => ("Group", "", name.as_str(), "", ""),
            Target::Extra { key, value } => ("UserExtra", "", value.as_str(), V1, key.as_str()),
            Target::Uid(uid) => ("UID", "", uid.as_str(), V1, ""),
        };
        write!(
            f,
            "{{{kind} {namespace} {name}  {api_version}  {field_path}}}"
        )
    }
}

/// Impersonation headers that ask for groups, extra or a uid but no user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WithoutUser(pub Vec<Target>);

impl fmt::Display for WithoutUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let targets: Vec<String> = self.0.iter().map(Target::to_string).collect();
        write!(
            f,
            "requested [{}] without impersonating a user",
            targets.join(" ")
        )
    }
}

fn value(v: &axum::http::HeaderValue) -> String {
    String::from_utf8_lossy(v.as_bytes()).into_owned()
}

/// What the headers ask to act as, in upstream's order: user, groups, extra, uid.
pub fn targets(headers: &HeaderMap) -> Result<Vec<Target>, WithoutUser> {
    let mut targets = Vec::new();
    let user = headers.get(USER).map(value).filter(|u| !u.is_empty());
    if let Some(user) = &user {
        targets.push(match service_account(user) {
            Some((namespace, name)) => Target::ServiceAccount { namespace, name },
            None => Target::User(user.clone()),
        });
    }
    let mut others = false;
    for group in headers.get_all(GROUP) {
        others = true;
        targets.push(Target::Group(value(group)));
    }
    for (name, v) in headers {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            others = true;
            targets.push(Target::Extra {
                key: extra_key(key),
                value: value(v),
            });
        }
    }
    if let Some(uid) = headers.get(UID).map(value).filter(|u| !u.is_empty()) {
        others = true;
        targets.push(Target::Uid(uid));
    }
    if others && user.is_none() {
        return Err(WithoutUser(targets));
    }
    Ok(targets)
}

/// A header's extra key: lower-cased, then percent-decoded (kept as sent when that fails).
fn extra_key(raw: &str) -> String {
    let lower = raw.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let well_formed = bytes.iter().enumerate().all(|(i, b)| {
        *b != b'%'
            || (bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    });
    if !well_formed {
        return lower;
    }
    match percent_encoding::percent_decode_str(&lower).decode_utf8() {
        Ok(key) => key.into_owned(),
        Err(_) => lower,
    }
}

/// `system:serviceaccount:<namespace>:<name>` with a valid namespace and name.
fn service_account(user: &str) -> Option<(String, String)> {
    let rest = user.strip_prefix(USERNAME_PREFIX)?;
    let (namespace, name) = rest.split_once(':')?;
    if name.contains(':')
        || !is_dns1123_label(namespace).is_empty()
        || !is_dns1123_subdomain(name).is_empty()
    {
        return None;
    }
    Some((namespace.into(), name.into()))
}

/// The user the request acts as once every target is allowed: upstream's rules for groups
/// (a service account's fixed groups when none are given; `system:authenticated` or
/// `system:unauthenticated` added unless given).
pub fn impersonated(targets: &[Target], groups_given: bool) -> UserInfo {
    let mut user = UserInfo::default();
    for target in targets {
        match target {
            Target::User(name) => user.name = name.clone(),
            Target::ServiceAccount { namespace, name } => {
                user.name = service_account::username(namespace, name);
                if !groups_given {
                    user.groups = service_account::group_names(namespace);
                }
            }
            Target::Group(group) => user.groups.push(group.clone()),
            Target::Extra { key, value } => user
                .extra
                .entry(key.clone())
                .or_default()
                .push(value.clone()),
            Target::Uid(uid) => user.uid = uid.clone(),
        }
    }
    let has = |g: &str| user.groups.iter().any(|x| x == g);
    if user.name != ANONYMOUS {
        if !has(AUTHENTICATED) && !has(UNAUTHENTICATED) {
            user.groups.push(AUTHENTICATED.into());
        }
    } else if !has(UNAUTHENTICATED) {
        user.groups.push(UNAUTHENTICATED.into());
    }
    user
}

/// Switches the request's user when its headers ask to, after authorizing every part.
pub async fn impersonate(
    State(authorizer): State<Arc<dyn Authorizer>>,
    mut request: Request,
    next: Next,
) -> Response {
    let targets = match targets(request.headers()) {
        Ok(targets) => targets,
        Err(without_user) => {
            // Upstream answers 500 here; a malformed set of headers is the client's error.
            return response::error(RegistryError::BadRequest(without_user.to_string()));
        }
    };
    if targets.is_empty() {
        return next.run(request).await;
    }
    let Some(requestor) = request.extensions().get::<UserInfo>().cloned() else {
        return response::error(RegistryError::Internal("no user found for request".into()));
    };
    let requestor = Arc::new(requestor);
    for target in &targets {
        let attributes = target.attributes(&requestor);
        let verdict = authorizer.authorize(&attributes);
        if !verdict.allowed() {
            tracing::debug!(user = %requestor.name, %target, reason = %verdict.reason, "impersonation forbidden");
            return authz::forbidden(&attributes, &verdict.reason);
        }
    }
    let groups_given = request.headers().contains_key(GROUP);
    let user = impersonated(&targets, groups_given);
    tracing::debug!(user = %requestor.name, impersonated = %user.name, "impersonating");
    let headers = request.headers_mut();
    headers.remove(USER);
    headers.remove(GROUP);
    headers.remove(UID);
    let extras: Vec<_> = headers
        .keys()
        .filter(|k| k.as_str().starts_with(EXTRA_PREFIX))
        .cloned()
        .collect();
    for key in extras {
        headers.remove(key);
    }
    // The audit event keeps the authenticated user and adds the impersonated one.
    crate::audit::record_impersonation(request.extensions(), &user);
    request.extensions_mut().insert(user);
    next.run(request).await
}

#[cfg(test)]
#[path = "impersonation_tests.rs"]
mod tests;
