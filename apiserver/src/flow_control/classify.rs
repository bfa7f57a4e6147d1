//! Classification (upstream's `flowcontrol/rule.go` and the FlowSchema part of the config
//! controller): the first FlowSchema, by matchingPrecedence then name, one of whose rules
//! matches the request's user and action; its distinguisher method names the request's flow,
//! hashed to deal the flow its queues.

use registry::auth::UserInfo;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// What a request is, as the rules see it.
#[derive(Clone, Debug)]
pub enum Action {
    Resource {
        verb: String,
        group: String,
        /// With the subresource: `pods/log`.
        resource: String,
        /// Empty for cluster-scoped requests.
        namespace: String,
    },
    NonResource {
        verb: String,
        path: String,
    },
}

impl Action {
    pub fn verb(&self) -> &str {
        match self {
            Self::Resource { verb, .. } | Self::NonResource { verb, .. } => verb,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distinguisher {
    None,
    ByUser,
    ByNamespace,
}

/// One FlowSchema as classification needs it.
#[derive(Clone, Debug)]
pub struct Schema {
    pub name: String,
    pub uid: String,
    pub level: String,
    pub precedence: i64,
    pub distinguisher: Distinguisher,
    rules: Vec<Rule>,
}

#[derive(Clone, Debug, Default)]
struct Rule {
    subjects: Vec<Subject>,
    resource_rules: Vec<ResourceRule>,
    non_resource_rules: Vec<NonResourceRule>,
}

#[derive(Clone, Debug)]
enum Subject {
    User(String),
    Group(String),
    ServiceAccount { namespace: String, name: String },
}

#[derive(Clone, Debug, Default)]
struct ResourceRule {
    verbs: Vec<String>,
    groups: Vec<String>,
    resources: Vec<String>,
    cluster_scope: bool,
    namespaces: Vec<String>,
}

#[derive(Clone, Debug, Default)]
struct NonResourceRule {
    verbs: Vec<String>,
    urls: Vec<String>,
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn text(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

impl Schema {
    /// From a stored FlowSchema (validated and defaulted by its strategy).
    pub fn from_object(object: &Value) -> Self {
        let spec = object.get("spec").cloned().unwrap_or(Value::Null);
        let distinguisher = match spec
            .pointer("/distinguisherMethod/type")
            .and_then(Value::as_str)
        {
            Some("ByUser") => Distinguisher::ByUser,
            Some("ByNamespace") => Distinguisher::ByNamespace,
            _ => Distinguisher::None,
        };
        let rules = spec
            .get("rules")
            .and_then(Value::as_array)
            .map(|rules| rules.iter().map(Rule::from_value).collect())
            .unwrap_or_default();
        Self {
            name: text(object, "/metadata/name"),
            uid: text(object, "/metadata/uid"),
            level: text(&spec, "/priorityLevelConfiguration/name"),
            precedence: spec
                .get("matchingPrecedence")
                .and_then(Value::as_i64)
                .unwrap_or(1000),
            distinguisher,
            rules,
        }
    }

    pub fn matches(&self, user: &UserInfo, action: &Action) -> bool {
        self.rules.iter().any(|rule| rule.matches(user, action))
    }

    /// The request's flow within this schema: its distinguisher and the hash that deals its
    /// hand (upstream's hashFlowID: SHA-256 of the schema name, a NUL and the distinguisher,
    /// the first 8 bytes little-endian).
    pub fn flow(&self, user: &UserInfo, action: &Action) -> (String, u64) {
        let distinguisher = match (self.distinguisher, action) {
            (Distinguisher::ByUser, _) => user.name.clone(),
            (Distinguisher::ByNamespace, Action::Resource { namespace, .. }) => namespace.clone(),
            _ => String::new(),
        };
        let mut hash = Sha256::new();
        hash.update(self.name.as_bytes());
        hash.update([0u8]);
        hash.update(distinguisher.as_bytes());
        let sum = hash.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&sum[..8]);
        (distinguisher, u64::from_le_bytes(first))
    }
}

/// Schemas in matching order: precedence, then name.
pub fn sort(schemas: &mut [Schema]) {
    schemas.sort_by(|a, b| {
        a.precedence
            .cmp(&b.precedence)
            .then_with(|| a.name.cmp(&b.name))
    });
}

impl Rule {
    fn from_value(value: &Value) -> Self {
        let subjects = value
            .get("subjects")
            .and_then(Value::as_array)
            .map(|subjects| subjects.iter().filter_map(Subject::from_value).collect())
            .unwrap_or_default();
        let resource_rules = value
            .get("resourceRules")
            .and_then(Value::as_array)
            .map(|rules| {
                rules
                    .iter()
                    .map(|r| ResourceRule {
                        verbs: strings(r.get("verbs")),
                        groups: strings(r.get("apiGroups")),
                        resources: strings(r.get("resources")),
                        cluster_scope: r
                            .get("clusterScope")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                        namespaces: strings(r.get("namespaces")),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let non_resource_rules = value
            .get("nonResourceRules")
            .and_then(Value::as_array)
            .map(|rules| {
                rules
                    .iter()
                    .map(|r| NonResourceRule {
                        verbs: strings(r.get("verbs")),
                        urls: strings(r.get("nonResourceURLs")),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            subjects,
            resource_rules,
            non_resource_rules,
        }
    }

    fn matches(&self, user: &UserInfo, action: &Action) -> bool {
        if !self.subjects.iter().any(|s| s.matches(user)) {
            return false;
        }
        match action {
            Action::Resource {
                verb,
                group,
                resource,
                namespace,
            } => self.resource_rules.iter().any(|r| {
                has(&r.verbs, verb)
                    && has(&r.groups, group)
                    && has(&r.resources, resource)
                    && if namespace.is_empty() {
                        r.cluster_scope
                    } else {
                        has(&r.namespaces, namespace)
                    }
            }),
            Action::NonResource { verb, path } => self
                .non_resource_rules
                .iter()
                .any(|r| has(&r.verbs, verb) && r.urls.iter().any(|u| url_matches(u, path))),
        }
    }
}

impl Subject {
    fn from_value(value: &Value) -> Option<Self> {
        match value.get("kind").and_then(Value::as_str)? {
            "User" => Some(Self::User(text(value, "/user/name"))),
            "Group" => Some(Self::Group(text(value, "/group/name"))),
            "ServiceAccount" => Some(Self::ServiceAccount {
                namespace: text(value, "/serviceAccount/namespace"),
                name: text(value, "/serviceAccount/name"),
            }),
            _ => None,
        }
    }

    fn matches(&self, user: &UserInfo) -> bool {
        match self {
            Self::User(name) => name == "*" || *name == user.name,
            Self::Group(name) => name == "*" || user.groups.iter().any(|g| g == name),
            Self::ServiceAccount { namespace, name } => {
                let Some(rest) = user.name.strip_prefix("system:serviceaccount:") else {
                    return false;
                };
                let Some((ns, sa)) = rest.split_once(':') else {
                    return false;
                };
                ns == namespace && (name == "*" || sa == name)
            }
        }
    }
}

/// `*` matches all; otherwise an exact member.
fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

/// A non-resource URL pattern: `*`, an exact path, or a prefix ending in `/*`.
fn url_matches(pattern: &str, path: &str) -> bool {
    if pattern == "*" || pattern == path {
        return true;
    }
    match pattern.strip_suffix('*') {
        Some(prefix) if prefix.ends_with('/') => path.starts_with(prefix),
        _ => false,
    }
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
