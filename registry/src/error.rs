//! The registry's one error type, and the one place it becomes a metav1.Status with upstream's
//! reasons, codes, messages and details.

use serde::Serialize;
use storage::StorageError;
use thiserror::Error;

pub type Result<T, E = RegistryError> = std::result::Result<T, E>;

/// A group and resource (or kind), printed as upstream prints them: `pods`, `deployments.apps`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Qualified {
    pub group: String,
    pub name: String,
}

impl Qualified {
    pub fn new(group: &str, name: &str) -> Self {
        Self {
            group: group.to_string(),
            name: name.to_string(),
        }
    }
}

impl std::fmt::Display for Qualified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}", self.name)
        } else {
            write!(f, "{}.{}", self.name, self.group)
        }
    }
}

/// One field problem (metav1.StatusCause).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cause {
    /// Upstream's cause types: FieldValueRequired, FieldValueInvalid, FieldValueNotSupported,
    /// FieldValueForbidden, FieldValueDuplicate, FieldValueTooLong, ... (metav1.StatusCause
    /// calls the field `type` in Go and `reason` on the wire).
    #[serde(rename = "reason", skip_serializing_if = "String::is_empty")]
    pub kind: String,
    // Go's StatusCause leaves every empty field out (omitempty).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field: String,
}

impl Cause {
    /// The message with its field, as in a Status message (a cause's own message leaves the
    /// field out, as upstream's ErrorBody does, since clients print `field: message`).
    pub fn full_message(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }

    pub fn new(kind: &str, field: &str, message: String) -> Self {
        Self {
            kind: kind.into(),
            message,
            field: field.into(),
        }
    }

    pub fn required(field: &str) -> Self {
        Self::new("FieldValueRequired", field, "Required value".to_string())
    }

    /// A required value with upstream's explanation (`Required value: <why>`).
    pub fn required_because(field: &str, why: &str) -> Self {
        Self::new(
            "FieldValueRequired",
            field,
            format!("Required value: {why}"),
        )
    }

    pub fn invalid(field: &str, value: impl std::fmt::Display, why: &str) -> Self {
        Self::new(
            "FieldValueInvalid",
            field,
            format!("Invalid value: {value}: {why}"),
        )
    }

    /// A value of the wrong JSON type, worded as upstream's schema validation words it.
    pub fn type_invalid(field: &str, actual: &str, expected: &str) -> Self {
        Self::new(
            "FieldValueTypeInvalid",
            field,
            format!(
                "Invalid value: \"{actual}\": {field} in body must be of type {expected}: \"{actual}\""
            ),
        )
    }

    /// field.TooLong with a limit in bytes, as upstream words it since 1.32.
    pub fn too_long(field: &str, max_bytes: usize) -> Self {
        let unit = if max_bytes == 1 { "byte" } else { "bytes" };
        Self::new(
            "FieldValueTooLong",
            field,
            format!("Too long: may not be more than {max_bytes} {unit}"),
        )
    }

    pub fn forbidden(field: &str, why: &str) -> Self {
        Self::new("FieldValueForbidden", field, format!("Forbidden: {why}"))
    }

    /// field.TooMany of a list of `count` items where at most `max` may be.
    pub fn too_many(field: &str, count: usize, max: usize) -> Self {
        Self::new(
            "FieldValueTooMany",
            field,
            format!("Too many: {count}: must have at most {max} items"),
        )
    }

    pub fn not_supported(field: &str, value: &str, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
        Self::new(
            "FieldValueNotSupported",
            field,
            format!(
                "Unsupported value: \"{value}\": supported values: {}",
                list.join(", ")
            ),
        )
    }

    pub fn duplicate(field: &str, value: impl std::fmt::Display) -> Self {
        Self::new(
            "FieldValueDuplicate",
            field,
            format!("Duplicate value: {value}"),
        )
    }
}

#[derive(Debug, Error)]
pub enum RegistryError {
    #[error("{resource} \"{name}\" not found")]
    NotFound { resource: Qualified, name: String },

    #[error("{resource} \"{name}\" already exists")]
    AlreadyExists { resource: Qualified, name: String },

    #[error("Operation cannot be fulfilled on {resource} \"{name}\": {message}")]
    Conflict {
        resource: Qualified,
        name: String,
        message: String,
    },

    /// 409 from server-side apply: fields the configuration sets are owned by other
    /// managers (upstream's NewApplyConflict), one FieldManagerConflict cause per field.
    #[error("{message}")]
    ApplyConflict { message: String, causes: Vec<Cause> },

    /// 422: `kind` is the group-qualified kind, as upstream names it in Invalid errors.
    #[error("{kind} \"{name}\" is invalid: {}", summary(causes))]
    Invalid {
        kind: Qualified,
        name: String,
        causes: Vec<Cause>,
    },

    #[error("{0}")]
    BadRequest(String),

    #[error("{resource} \"{name}\" is forbidden: {message}")]
    Forbidden {
        resource: Qualified,
        name: String,
        message: String,
    },

    /// 410 with reason Expired (compacted resourceVersion or continue token).
    #[error("{message}")]
    Expired { message: String },

    #[error("{0}")]
    MethodNotAllowed(String),

    /// 504 Timeout with a ResourceVersionTooLarge cause.
    #[error("Too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion { requested: i64, current: i64 },

    #[error("{0}")]
    ServiceUnavailable(String),

    #[error("Internal error occurred: {0}")]
    Internal(String),

    /// 500 with no reason and the message as it is: an error that is none of the API's own,
    /// which upstream's ErrorToAPIStatus passes on that way (a failed dial to a kubelet).
    #[error("{0}")]
    Unclassified(String),

    /// 415: the body's media type is not one the endpoint accepts (the message lists them).
    #[error("{0}")]
    UnsupportedMediaType(String),

    /// 413.
    #[error("Request entity too large: {0}")]
    RequestEntityTooLarge(String),

    /// 404 for a path that names no served resource.
    #[error("the server could not find the requested resource")]
    NoSuchResource,

    /// 406: no media type the client accepts can be produced.
    #[error("{0}")]
    NotAcceptable(String),

    /// 422 with empty details, as upstream answers a patch it cannot apply (a failed JSON
    /// patch `test`, a missing path): clients match on this exact message.
    #[error("the server rejected our request due to an error in our request")]
    Unprocessable,

    /// 429 (upstream's NewTooManyRequests): try again later, after `retry_after_seconds`
    /// when it is not 0 (the HTTP layer sends it as `Retry-After` too).
    #[error("{message}")]
    TooManyRequests {
        message: String,
        retry_after_seconds: i64,
        causes: Vec<Cause>,
    },

    /// A refusal whose Status another party wrote (an admission webhook's): its code, its
    /// reason when it is one of metav1's, and its message as given.
    #[error("{message}")]
    Rejected {
        code: u16,
        reason: &'static str,
        message: String,
        /// Boxed: rarely there, and every Result of the crate carries the error's size.
        details: Option<Box<Details>>,
    },
}

/// metav1's StatusReasons: the ones a Status from elsewhere may carry through.
const STATUS_REASONS: &[&str] = &[
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "Gone",
    "Invalid",
    "ServerTimeout",
    "Timeout",
    "TooManyRequests",
    "BadRequest",
    "MethodNotAllowed",
    "NotAcceptable",
    "RequestEntityTooLarge",
    "UnsupportedMediaType",
    "InternalError",
    "Expired",
    "ServiceUnavailable",
];

/// `reason` as one of metav1's StatusReasons; "" (StatusReasonUnknown) for any other.
pub fn known_reason(reason: &str) -> &'static str {
    STATUS_REASONS
        .iter()
        .find(|r| **r == reason)
        .copied()
        .unwrap_or("")
}

/// The causes as upstream's aggregate prints them: `field: message`, bracketed when several
/// (ErrorList.ToAggregate drops repeats; the details keep them).
fn summary(causes: &[Cause]) -> String {
    let messages: Vec<String> = causes.iter().map(Cause::full_message).collect();
    aggregate(&messages)
}

/// Errors as upstream's utilerrors aggregate prints them: none is empty, one alone, several
/// as `[a, b]` with each message once (and alone, unbracketed, when all were the same).
pub fn aggregate(messages: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for m in messages {
        if !seen.contains(&m.as_str()) {
            seen.push(m);
        }
    }
    match (messages.len(), seen.len()) {
        (0, _) => String::new(),
        (1, _) | (_, 1) => seen.join(", "),
        _ => format!("[{}]", seen.join(", ")),
    }
}

impl RegistryError {
    pub fn not_found(resource: &Qualified, name: &str) -> Self {
        Self::NotFound {
            resource: resource.clone(),
            name: name.into(),
        }
    }

    pub fn invalid(kind: &Qualified, name: &str, causes: Vec<Cause>) -> Self {
        Self::Invalid {
            kind: kind.clone(),
            name: name.into(),
            causes,
        }
    }

    pub fn conflict(resource: &Qualified, name: &str, message: impl Into<String>) -> Self {
        Self::Conflict {
            resource: resource.clone(),
            name: name.into(),
            message: message.into(),
        }
    }

    pub fn forbidden(resource: &Qualified, name: &str, message: impl Into<String>) -> Self {
        Self::Forbidden {
            resource: resource.clone(),
            name: name.into(),
            message: message.into(),
        }
    }

    /// Maps a storage error for `name` of `resource` (upstream's storeerr.Interpret*Error).
    pub fn from_storage(err: StorageError, resource: &Qualified, name: &str) -> Self {
        match err {
            StorageError::NotFound { .. } => Self::not_found(resource, name),
            StorageError::AlreadyExists { .. } => Self::AlreadyExists {
                resource: resource.clone(),
                name: name.into(),
            },
            StorageError::Conflict { message, .. } => Self::conflict(resource, name, message),
            StorageError::TooOld { requested, .. } => Self::Expired {
                message: format!("too old resource version: {requested}"),
            },
            StorageError::Expired { fresh_continue } => Self::Expired {
                message: match fresh_continue {
                    Some(token) => format!(
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list. Continue token: {token}"
                    ),
                    None => "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.".into(),
                },
            },
            StorageError::TooLargeResourceVersion { requested, current } => {
                Self::TooLargeResourceVersion { requested, current }
            }
            StorageError::Invalid(message) => Self::BadRequest(message),
            StorageError::Unavailable(message) => Self::ServiceUnavailable(message),
            StorageError::Aborted(inner) => match inner.downcast::<RegistryError>() {
                Ok(registry) => *registry,
                Err(other) => Self::Internal(other.to_string()),
            },
            StorageError::Internal(message) => Self::Internal(message),
            StorageError::EncryptionConfig(message) => Self::Internal(message),
        }
    }

    /// Wraps this error to travel through a storage update function untouched.
    pub fn into_storage(self) -> StorageError {
        StorageError::Aborted(Box::new(self))
    }

    pub fn code(&self) -> u16 {
        self.status().code
    }

    pub fn reason(&self) -> &'static str {
        self.status().reason
    }

    /// The metav1.Status for this error.
    pub fn status(&self) -> Status {
        let (code, reason) = match self {
            Self::NotFound { .. } => (404, "NotFound"),
            Self::AlreadyExists { .. } => (409, "AlreadyExists"),
            Self::Conflict { .. } | Self::ApplyConflict { .. } => (409, "Conflict"),
            Self::Invalid { .. } => (422, "Invalid"),
            Self::BadRequest(_) => (400, "BadRequest"),
            Self::Forbidden { .. } => (403, "Forbidden"),
            Self::Expired { .. } => (410, "Expired"),
            Self::MethodNotAllowed(_) => (405, "MethodNotAllowed"),
            Self::TooLargeResourceVersion { .. } => (504, "Timeout"),
            Self::ServiceUnavailable(_) => (503, "ServiceUnavailable"),
            Self::Internal(_) => (500, "InternalError"),
            Self::Unclassified(_) => (500, ""),
            Self::UnsupportedMediaType(_) => (415, "UnsupportedMediaType"),
            Self::RequestEntityTooLarge(_) => (413, "RequestEntityTooLarge"),
            Self::NotAcceptable(_) => (406, "NotAcceptable"),
            Self::NoSuchResource => (404, "NotFound"),
            Self::Unprocessable => (422, "Invalid"),
            Self::TooManyRequests { .. } => (429, "TooManyRequests"),
            Self::Rejected { code, reason, .. } => (*code, *reason),
        };
        let details = match self {
            Self::NotFound { resource, name }
            | Self::AlreadyExists { resource, name }
            | Self::Conflict { resource, name, .. }
            | Self::Forbidden { resource, name, .. } => Some(Details {
                name: Some(name.clone()),
                group: Some(resource.group.clone()).filter(|g| !g.is_empty()),
                kind: Some(resource.name.clone()),
                ..Default::default()
            }),
            // Empty ones are left out, as Go's omitempty leaves them (a patch refused for
            // its strict decoding errors names no kind).
            Self::Invalid { kind, name, causes } => Some(Details {
                name: Some(name.clone()).filter(|n| !n.is_empty()),
                group: Some(kind.group.clone()).filter(|g| !g.is_empty()),
                kind: Some(kind.name.clone()).filter(|k| !k.is_empty()),
                causes: causes.clone(),
                ..Default::default()
            }),
            Self::TooLargeResourceVersion { .. } => Some(Details {
                causes: vec![Cause {
                    kind: "ResourceVersionTooLarge".into(),
                    message: "Too large resource version".into(),
                    field: String::new(),
                }],
                retry_after_seconds: Some(1),
                ..Default::default()
            }),
            Self::Unprocessable => Some(Details::default()),
            Self::ApplyConflict { causes, .. } => Some(Details {
                causes: causes.clone(),
                ..Default::default()
            }),
            Self::TooManyRequests {
                retry_after_seconds,
                causes,
                ..
            } => Some(Details {
                causes: causes.clone(),
                retry_after_seconds: Some(*retry_after_seconds).filter(|s| *s > 0),
                ..Default::default()
            }),
            Self::Rejected { details, .. } => details.as_deref().cloned(),
            Self::Internal(message) => Some(Details {
                causes: vec![Cause {
                    kind: String::new(),
                    message: message.clone(),
                    field: String::new(),
                }],
                ..Default::default()
            }),
            _ => None,
        };
        Status {
            kind: "Status",
            api_version: "v1",
            metadata: serde_json::Map::new(),
            status: "Failure",
            message: self.to_string(),
            reason,
            details,
            code,
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Details {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<Cause>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<i64>,
}

/// metav1.Status.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub kind: &'static str,
    pub api_version: &'static str,
    pub metadata: serde_json::Map<String, serde_json::Value>,
    pub status: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub reason: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Details>,
    pub code: u16,
}

impl Status {
    /// The Success status a delete returns once the object is gone.
    pub fn success(details: Details) -> Self {
        Self {
            kind: "Status",
            api_version: "v1",
            metadata: serde_json::Map::new(),
            status: "Success",
            message: String::new(),
            reason: "",
            details: Some(details),
            code: 200,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_matches_upstream() {
        let err = RegistryError::not_found(&Qualified::new("apps", "deployments"), "web");
        let status = serde_json::to_value(err.status()).expect("json");
        assert_eq!(status["message"], "deployments.apps \"web\" not found");
        assert_eq!(status["reason"], "NotFound");
        assert_eq!(status["code"], 404);
        assert_eq!(status["details"]["group"], "apps");
        assert_eq!(status["details"]["kind"], "deployments");
    }

    #[test]
    fn invalid_lists_causes() {
        let err = RegistryError::invalid(
            &Qualified::new("", "ConfigMap"),
            "Bad_Name",
            vec![Cause::invalid("metadata.name", "\"Bad_Name\"", "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'")],
        );
        let status = serde_json::to_value(err.status()).expect("json");
        assert_eq!(status["code"], 422);
        assert!(status["message"]
            .as_str()
            .is_some_and(|m| m
                .starts_with("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value")));
        assert_eq!(status["details"]["causes"][0]["field"], "metadata.name");
    }

    #[test]
    fn invalid_message_names_a_repeated_cause_once() {
        let verbs = Cause::required("rules[0].verbs");
        let name = Cause::required("roleRef.name");
        let err = RegistryError::invalid(
            &Qualified::new("rbac.authorization.k8s.io", "Role"),
            "r",
            vec![verbs.clone(), name, verbs],
        );
        let status = serde_json::to_value(err.status()).expect("json");
        assert_eq!(
            status["message"],
            "Role.rbac.authorization.k8s.io \"r\" is invalid: [rules[0].verbs: Required value, roleRef.name: Required value]"
        );
        assert_eq!(
            status["details"]["causes"].as_array().map(Vec::len),
            Some(3)
        );
    }

    #[test]
    fn registry_errors_survive_a_storage_round_trip() {
        let err = RegistryError::BadRequest("nope".into()).into_storage();
        let back = RegistryError::from_storage(err, &Qualified::new("", "pods"), "p");
        assert!(matches!(back, RegistryError::BadRequest(m) if m == "nope"));
    }
}
