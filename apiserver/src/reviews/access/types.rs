//! The authorization.k8s.io/v1 review objects as they travel (upstream's JSON names and
//! omitempty fields), and upstream's validation of them.

use std::collections::BTreeMap;
use std::sync::Arc;

use registry::auth::{Attributes, NonResourceRule, ResourceRule, Rules, UserInfo, Verdict};
use registry::{Cause, Qualified, RegistryError};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

pub const GROUP: &str = "authorization.k8s.io";
pub const VERSION: &str = "v1";
pub const API_VERSION: &str = "authorization.k8s.io/v1";

/// Go's JSON decoding leaves a string, list or map at its zero value for `null`.
fn nullable<'de, D, T>(de: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(de)?.unwrap_or_default())
}

/// An ExtraValue is a list of strings in JSON, and a message of `items` decoded from
/// protobuf.
#[derive(Deserialize)]
#[serde(untagged)]
enum ExtraValue {
    List(Vec<String>),
    Items {
        #[serde(default)]
        items: Vec<String>,
    },
    Null(()),
}

fn extra<'de, D: Deserializer<'de>>(de: D) -> Result<BTreeMap<String, Vec<String>>, D::Error> {
    let map: Option<BTreeMap<String, ExtraValue>> = Option::deserialize(de)?;
    Ok(map
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| {
            let values = match value {
                ExtraValue::List(items) | ExtraValue::Items { items } => items,
                ExtraValue::Null(()) => Vec::new(),
            };
            (key, values)
        })
        .collect())
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceAttributes {
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub namespace: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub verb: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub group: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub version: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub resource: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub subresource: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    /// Carried back as sent; no authorizer here judges selectors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NonResourceAttributes {
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub path: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub verb: String,
}

impl NonResourceAttributes {
    /// Go's %#v of upstream's internal type, as its validation messages print it.
    fn go_syntax(&self) -> String {
        format!(
            "authorization.NonResourceAttributes{{Path:{}, Verb:{}}}",
            quote(&self.path),
            quote(&self.verb)
        )
    }
}

/// SubjectAccessReviewSpec; SelfSubjectAccessReviewSpec is its first two fields.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_attributes: Option<ResourceAttributes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub non_resource_attributes: Option<NonResourceAttributes>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub user: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub groups: Vec<String>,
    #[serde(
        default,
        deserialize_with = "extra",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub extra: BTreeMap<String, Vec<String>>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub uid: String,
}

/// SelfSubjectRulesReviewSpec.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RulesSpec {
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub namespace: String,
}

/// SubjectAccessReviewStatus.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessStatus {
    pub allowed: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub denied: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub evaluation_error: String,
}

impl From<Verdict> for AccessStatus {
    fn from(verdict: Verdict) -> Self {
        Self {
            allowed: verdict.decision == registry::auth::Decision::Allow,
            denied: verdict.decision == registry::auth::Decision::Deny,
            reason: verdict.reason,
            evaluation_error: String::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WireResourceRule {
    pub verbs: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WireNonResourceRule {
    pub verbs: Vec<String>,
    #[serde(rename = "nonResourceURLs", skip_serializing_if = "Vec::is_empty")]
    pub non_resource_urls: Vec<String>,
}

/// SubjectRulesReviewStatus.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RulesStatus {
    pub resource_rules: Vec<WireResourceRule>,
    pub non_resource_rules: Vec<WireNonResourceRule>,
    pub incomplete: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub evaluation_error: String,
}

impl From<Rules> for RulesStatus {
    fn from(rules: Rules) -> Self {
        Self {
            resource_rules: rules
                .resource_rules
                .into_iter()
                .map(|r: ResourceRule| WireResourceRule {
                    verbs: r.verbs,
                    api_groups: r.api_groups,
                    resources: r.resources,
                    resource_names: r.resource_names,
                })
                .collect(),
            non_resource_rules: rules
                .non_resource_rules
                .into_iter()
                .map(|r: NonResourceRule| WireNonResourceRule {
                    verbs: r.verbs,
                    non_resource_urls: r.non_resource_urls,
                })
                .collect(),
            incomplete: rules.incomplete,
            evaluation_error: rules.evaluation_error,
        }
    }
}

/// A review as answered: the object sent, its status filled in.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Review<S, T> {
    pub kind: &'static str,
    pub api_version: &'static str,
    pub metadata: Value,
    pub spec: S,
    pub status: T,
}

/// A review body as sent.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Sent<S> {
    #[serde(default, deserialize_with = "nullable")]
    kind: String,
    #[serde(default, deserialize_with = "nullable")]
    api_version: String,
    #[serde(default, deserialize_with = "nullable")]
    metadata: serde_json::Map<String, Value>,
    #[serde(default)]
    spec: Option<S>,
}

/// The parts of a decoded review body the handlers use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Body<S> {
    pub metadata: serde_json::Map<String, Value>,
    pub spec: S,
}

/// The body as `kind`, refused as upstream's decoder refuses other kinds and bad fields.
pub fn decode<S>(value: Value, kind: &str) -> Result<Body<S>, RegistryError>
where
    S: for<'de> Deserialize<'de> + Default,
{
    let body: Sent<S> = serde_json::from_value(value).map_err(|e| {
        RegistryError::BadRequest(format!(
            "{kind} in version \"{VERSION}\" cannot be handled as a {kind}: {e}"
        ))
    })?;
    if !body.kind.is_empty() && body.kind != kind {
        return Err(RegistryError::BadRequest(format!(
            "the body of the request is a {}, not a {kind}",
            body.kind
        )));
    }
    if !body.api_version.is_empty() && body.api_version != API_VERSION {
        return Err(RegistryError::BadRequest(format!(
            "the body of the request is of apiVersion {}, not {API_VERSION}",
            body.api_version
        )));
    }
    Ok(Body {
        metadata: body.metadata,
        spec: body.spec.unwrap_or_default(),
    })
}

/// Go's %q.
fn quote(s: &str) -> String {
    registry::validation::quote(s)
}

/// A metadata field Go would decode to its zero value (so an ObjectMeta equal to empty).
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// upstream's check that a review's metadata is empty but for `allowed` fields.
pub fn metadata_causes(
    metadata: &serde_json::Map<String, Value>,
    allowed: &[&str],
    why: &str,
) -> Vec<Cause> {
    let set = metadata
        .iter()
        .any(|(k, v)| k != "managedFields" && !allowed.contains(&k.as_str()) && !is_zero(v));
    if set {
        vec![Cause::invalid(
            "metadata",
            Value::Object(metadata.clone()),
            why,
        )]
    } else {
        Vec::new()
    }
}

/// upstream's ValidateSelfSubjectAccessReviewSpec: exactly one kind of attributes.
pub fn attributes_causes(spec: &AccessSpec) -> Vec<Cause> {
    match (&spec.resource_attributes, &spec.non_resource_attributes) {
        (Some(_), Some(non_resource)) => vec![Cause::invalid(
            "spec.nonResourceAttributes",
            non_resource.go_syntax(),
            "cannot be specified in combination with resourceAttributes",
        )],
        (None, None) => vec![Cause::invalid(
            "spec.resourceAttributes",
            quote("null"),
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )],
        _ => Vec::new(),
    }
}

/// upstream's ValidateSubjectAccessReviewSpec: the attributes, and someone to judge.
pub fn subject_causes(spec: &AccessSpec) -> Vec<Cause> {
    let mut causes = attributes_causes(spec);
    if spec.user.is_empty() && spec.groups.is_empty() {
        causes.push(Cause::invalid(
            "spec.user",
            quote(&spec.user),
            "at least one of user or group must be specified",
        ));
    }
    causes
}

/// The additional checks of a LocalSubjectAccessReview in `namespace`.
pub fn local_causes(spec: &AccessSpec, namespace: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(resource) = &spec.resource_attributes {
        if resource.namespace != namespace {
            causes.push(Cause::invalid(
                "spec.resourceAttributes.namespace",
                quote(&resource.namespace),
                "must match metadata.namespace",
            ));
        }
    }
    if let Some(non_resource) = &spec.non_resource_attributes {
        causes.push(Cause::invalid(
            "spec.nonResourceAttributes",
            non_resource.go_syntax(),
            "disallowed on this kind of request",
        ));
    }
    causes
}

pub fn invalid(kind: &str, causes: Vec<Cause>) -> Result<(), RegistryError> {
    if causes.is_empty() {
        Ok(())
    } else {
        Err(RegistryError::invalid(
            &Qualified::new(GROUP, kind),
            "",
            causes,
        ))
    }
}

/// The user a SubjectAccessReview asks about.
pub fn subject(spec: &AccessSpec) -> UserInfo {
    UserInfo {
        name: spec.user.clone(),
        uid: spec.uid.clone(),
        groups: spec.groups.clone(),
        extra: spec.extra.clone(),
    }
}

/// The attributes the review asks about, for `user` (upstream's ResourceAttributesFrom and
/// NonResourceAttributesFrom: an empty version matches every version).
pub fn attributes(spec: &AccessSpec, user: Arc<UserInfo>) -> Attributes {
    match (&spec.resource_attributes, &spec.non_resource_attributes) {
        (Some(r), _) => Attributes {
            user,
            verb: r.verb.clone(),
            resource_request: true,
            namespace: r.namespace.clone(),
            api_group: r.group.clone(),
            api_version: if r.version.is_empty() {
                "*".into()
            } else {
                r.version.clone()
            },
            resource: r.resource.clone(),
            subresource: r.subresource.clone(),
            name: r.name.clone(),
            path: String::new(),
        },
        (None, Some(n)) => Attributes {
            user,
            verb: n.verb.clone(),
            resource_request: false,
            path: n.path.clone(),
            ..Default::default()
        },
        (None, None) => Attributes {
            user,
            ..Default::default()
        },
    }
}
