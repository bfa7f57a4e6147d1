//! Authorization of every request (upstream's WithAuthorization filter and the modes of
//! `--authorization-mode`): the request's [`Requested`] reading, made by the user
//! authentication (or impersonation) put into it, is judged by the chain; anything not allowed
//! is answered 403 with upstream's Forbidden Status.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use registry::auth::{
    AlwaysAllow, AlwaysDeny, Attributes, Authorizer, Chain, PrivilegedGroups, UserInfo,
};
use registry::error::Details;
use registry::{RegistryError, Status};

use crate::api::response;

/// One mode of `--authorization-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Rbac,
    AlwaysAllow,
    AlwaysDeny,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModeError {
    #[error("at least one authorization-mode must be passed")]
    Empty,
    #[error(
        "authorization-mode {0:?} is not a valid mode (valid modes: RBAC, AlwaysAllow, AlwaysDeny)"
    )]
    Unknown(String),
    #[error("authorization-mode {0:?} is not supported by this server (supported: RBAC, AlwaysAllow, AlwaysDeny)")]
    Unsupported(String),
    #[error("authorization-mode {0:?} has mode specified more than once")]
    Repeated(String),
}

impl Mode {
    /// The modes of the flag, in order, as upstream validates them: each known and given once.
    pub fn parse_list(modes: &[String]) -> Result<Vec<Mode>, ModeError> {
        if modes.is_empty() || modes.iter().all(|m| m.trim().is_empty()) {
            return Err(ModeError::Empty);
        }
        let mut parsed = Vec::new();
        for mode in modes {
            let mode = match mode.trim() {
                "RBAC" => Mode::Rbac,
                "AlwaysAllow" => Mode::AlwaysAllow,
                "AlwaysDeny" => Mode::AlwaysDeny,
                // Upstream's other modes: valid there, not served here.
                other @ ("Node" | "ABAC" | "Webhook") => {
                    return Err(ModeError::Unsupported(other.into()))
                }
                other => return Err(ModeError::Unknown(other.into())),
            };
            if parsed.contains(&mode) {
                return Err(ModeError::Repeated(modes.join(",")));
            }
            parsed.push(mode);
        }
        Ok(parsed)
    }
}

/// What requests are judged by.
#[derive(Clone)]
pub struct Authorization {
    /// The privileged groups, then the configured modes.
    pub authorizer: Arc<dyn Authorizer>,
    /// The configured modes only, as upstream's rule resolvers (SelfSubjectRulesReview lists
    /// what they grant; the privileged group authorizer lists nothing).
    pub rules: Arc<dyn Authorizer>,
}

impl Authorization {
    /// The chain for `modes`; `rbac` is the RBAC authorizer when [`Mode::Rbac`] is among them.
    pub fn new(modes: &[Mode], rbac: Option<Arc<dyn Authorizer>>) -> Self {
        let configured: Vec<Arc<dyn Authorizer>> = modes
            .iter()
            .filter_map(|mode| match mode {
                Mode::Rbac => rbac.clone(),
                Mode::AlwaysAllow => Some(Arc::new(AlwaysAllow) as Arc<dyn Authorizer>),
                Mode::AlwaysDeny => Some(Arc::new(AlwaysDeny) as Arc<dyn Authorizer>),
            })
            .collect();
        let mut all: Vec<Arc<dyn Authorizer>> = vec![Arc::new(PrivilegedGroups)];
        all.extend(configured.iter().cloned());
        Self {
            authorizer: Arc::new(Chain::new(all)),
            rules: Arc::new(Chain::new(configured)),
        }
    }

    /// Everything allowed (tests and benchmarks of the bare router).
    pub fn always_allow() -> Self {
        Self::new(&[Mode::AlwaysAllow], None)
    }
}

/// The audit annotations of upstream's authorization filter.
const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// Judges each request; only an allowed one reaches the handlers.
pub async fn authorize(
    State(authorization): State<Authorization>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(user) = request.extensions().get::<UserInfo>().cloned() else {
        return response::error(RegistryError::Internal("no user found for request".into()));
    };
    let path = request.uri().path().to_string();
    let attributes = crate::api::attributes::ensure(&mut request).attributes(Arc::new(user), &path);
    let verdict = authorization.authorizer.authorize(&attributes);
    let decision = if verdict.allowed() { "allow" } else { "forbid" };
    crate::audit::annotate(request.extensions(), DECISION_ANNOTATION, decision);
    crate::audit::annotate(request.extensions(), REASON_ANNOTATION, &verdict.reason);
    if verdict.allowed() {
        return next.run(request).await;
    }
    tracing::debug!(
        user = %attributes.user.name,
        verb = %attributes.verb,
        path = %request.uri().path(),
        reason = %verdict.reason,
        "forbidden"
    );
    let pretty = response::is_pretty_request(request.uri().query(), request.headers());
    forbidden_in(&attributes, &verdict.reason, pretty)
}

/// upstream's responsewriters.Forbidden: 403 with a Forbidden Status naming what was refused.
pub fn forbidden(attributes: &Attributes, reason: &str) -> Response {
    forbidden_in(attributes, reason, false)
}

/// [`forbidden`], indented when the request asked for pretty answers (curl does).
pub fn forbidden_in(attributes: &Attributes, reason: &str, pretty: bool) -> Response {
    let style = if pretty {
        registry::wire::Style::Pretty
    } else {
        registry::wire::Style::Compact
    };
    // A Status always encodes; should it not, the answer is still a 403.
    let status =
        registry::wire::body_of(&forbidden_status(attributes, reason), style).unwrap_or_default();
    let mut response = response::raw_json(StatusCode::FORBIDDEN, status.into());
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// The Status upstream's apierrors.NewForbidden makes of a refused request.
pub fn forbidden_status(attributes: &Attributes, reason: &str) -> Status {
    let mut message = sanitize(&forbidden_message(attributes));
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    let qualified = match (&attributes.resource, &attributes.api_group) {
        (resource, _) if resource.is_empty() => String::new(),
        (resource, group) if group.is_empty() => resource.clone(),
        (resource, group) => format!("{resource}.{group}"),
    };
    let message = match (qualified.is_empty(), attributes.name.is_empty()) {
        (true, _) => format!("forbidden: {message}"),
        (false, true) => format!("{qualified} is forbidden: {message}"),
        (false, false) => format!(
            "{qualified} {} is forbidden: {message}",
            quote(&attributes.name)
        ),
    };
    let non_empty = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
    Status {
        kind: "Status",
        api_version: "v1",
        metadata: serde_json::Map::new(),
        status: "Failure",
        message,
        reason: "Forbidden",
        details: Some(Details {
            name: non_empty(&attributes.name),
            group: non_empty(&attributes.api_group),
            kind: non_empty(&attributes.resource),
            ..Default::default()
        }),
        code: 403,
    }
}

/// upstream's forbiddenMessage: who cannot do what, where.
pub fn forbidden_message(attributes: &Attributes) -> String {
    let user = &attributes.user.name;
    let verb = &attributes.verb;
    if !attributes.resource_request {
        return format!(
            "User {} cannot {verb} path {}",
            quote(user),
            quote(&attributes.path)
        );
    }
    let mut resource = attributes.resource.clone();
    if !attributes.subresource.is_empty() {
        resource = format!("{resource}/{}", attributes.subresource);
    }
    let scope = if attributes.namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace {}", quote(&attributes.namespace))
    };
    format!(
        "User {} cannot {verb} resource {} in API group {} {scope}",
        quote(user),
        quote(&resource),
        quote(&attributes.api_group)
    )
}

/// Go's %q of a string.
fn quote(s: &str) -> String {
    registry::validation::quote(s)
}

/// Upstream keeps refusals from looking like HTML.
fn sanitize(message: &str) -> String {
    message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests;
