//! The audit policy (upstream's audit.k8s.io/v1 Policy, its validation and its checker): the
//! first rule a request matches sets the level it is recorded at and the stages left out; a
//! request no rule matches is not recorded.

use std::fmt;
use std::path::Path;

use registry::auth::Attributes;
use serde::{Deserialize, Deserializer, Serialize};

/// How much of a request an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Level {
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    const ALL: [Level; 4] = [
        Level::None,
        Level::Metadata,
        Level::Request,
        Level::RequestResponse,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// When in a request's handling an event is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Stage {
    RequestReceived,
    /// Long-running requests only: the response headers are sent, the body streams.
    ResponseStarted,
    ResponseComplete,
    Panic,
}

impl Stage {
    const ALL: [Stage; 4] = [
        Stage::RequestReceived,
        Stage::ResponseStarted,
        Stage::ResponseComplete,
        Stage::Panic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of stages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stages(u8);

impl Stages {
    pub fn contains(self, stage: Stage) -> bool {
        self.0 & stage.bit() != 0
    }

    fn union(self, other: Stages) -> Stages {
        Stages(self.0 | other.0)
    }
}

impl FromIterator<Stage> for Stages {
    fn from_iter<I: IntoIterator<Item = Stage>>(stages: I) -> Self {
        Stages(stages.into_iter().fold(0, |bits, s| bits | s.bit()))
    }
}

/// What the policy asks of one request (upstream's RequestAuditConfig).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestAuditConfig {
    pub level: Level,
    pub omit_stages: Stages,
    pub omit_managed_fields: bool,
}

/// Resources of one API group a rule names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupResources {
    #[serde(default, deserialize_with = "nullable")]
    pub group: String,
    /// `pods`, `pods/log`, `*` (every resource and subresource), `pods/*`, `*/scale`.
    #[serde(default, deserialize_with = "nullable")]
    pub resources: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub resource_names: Vec<String>,
}

/// One rule; every field it sets must match (empty lists match everything).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub level: Level,
    pub users: Vec<String>,
    pub user_groups: Vec<String>,
    pub verbs: Vec<String>,
    pub resources: Vec<GroupResources>,
    /// `""` matches cluster-scoped resources.
    pub namespaces: Vec<String>,
    /// Paths, `*`, or prefixes ending in `*`.
    pub non_resource_urls: Vec<String>,
    /// The rule's own stages and the policy's.
    pub omit_stages: Stages,
    /// The rule's own setting, else the policy's.
    pub omit_managed_fields: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub rules: Vec<Rule>,
    pub omit_stages: Stages,
    pub omit_managed_fields: bool,
}

/// Why a policy file is refused, worded as upstream's loader words it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PolicyError(String);

const API_VERSION: &str = "audit.k8s.io/v1";

impl Policy {
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let bytes = std::fs::read(path).map_err(|e| {
            PolicyError(format!(
                "failed to read file path {:?}: {e}",
                path.display()
            ))
        })?;
        Policy::parse(&bytes)
            .map_err(|PolicyError(e)| PolicyError(format!("{e}: from file {}", path.display())))
    }

    /// A Policy document, YAML or JSON.
    pub fn parse(bytes: &[u8]) -> Result<Policy, PolicyError> {
        let decoding = |e: &dyn fmt::Display| PolicyError(format!("failed decoding: {e}"));
        let value: serde_yaml_ng::Value =
            serde_yaml_ng::from_slice(bytes).map_err(|e| decoding(&e))?;
        let value = match value {
            serde_yaml_ng::Value::Null => serde_yaml_ng::Value::Mapping(Default::default()),
            v => v,
        };
        let field = |name: &str| {
            value
                .get(name)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string()
        };
        let (kind, api_version) = (field("kind"), field("apiVersion"));
        if kind.is_empty() {
            return Err(decoding(&"Object 'Kind' is missing"));
        }
        if api_version.is_empty() {
            return Err(decoding(&"Object 'apiVersion' is missing"));
        }
        if kind != "Policy" || api_version != API_VERSION {
            return Err(decoding(&format!(
                "no kind {kind:?} is registered for version {api_version:?}"
            )));
        }
        let raw: RawPolicy = serde_yaml_ng::from_value(value).map_err(|e| decoding(&e))?;
        raw.validate()
    }

    /// The level, and the stages left out, of a request: the first matching rule's, else
    /// None.
    pub fn evaluate(&self, attributes: &Attributes) -> RequestAuditConfig {
        match self.rules.iter().find(|r| r.matches(attributes)) {
            Some(rule) => RequestAuditConfig {
                level: rule.level,
                omit_stages: rule.omit_stages,
                omit_managed_fields: rule.omit_managed_fields,
            },
            None => RequestAuditConfig {
                level: Level::None,
                omit_stages: self.omit_stages,
                omit_managed_fields: self.omit_managed_fields,
            },
        }
    }
}

impl Rule {
    fn matches(&self, a: &Attributes) -> bool {
        if !self.users.is_empty() && !self.users.contains(&a.user.name) {
            return false;
        }
        if !self.user_groups.is_empty()
            && !a.user.groups.iter().any(|g| self.user_groups.contains(g))
        {
            return false;
        }
        if !self.verbs.is_empty() && !self.verbs.contains(&a.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(a);
        }
        if !self.non_resource_urls.is_empty() {
            return !a.resource_request
                && self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(&a.path, spec));
        }
        true
    }

    fn matches_resource(&self, a: &Attributes) -> bool {
        if !a.resource_request {
            return false;
        }
        if !self.namespaces.is_empty() && !self.namespaces.contains(&a.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let sub = a.subresource.as_str();
        let combined = if sub.is_empty() {
            a.resource.clone()
        } else {
            format!("{}/{sub}", a.resource)
        };
        self.resources
            .iter()
            .filter(|gr| gr.group == a.api_group)
            .any(|gr| {
                if gr.resources.is_empty() {
                    return true;
                }
                if !gr.resource_names.is_empty() && !gr.resource_names.contains(&a.name) {
                    return false;
                }
                gr.resources.iter().any(|res| {
                    res == &combined
                        || res == "*"
                        || (!sub.is_empty() && res.strip_prefix("*/") == Some(sub))
                        || res.strip_suffix("/*") == Some(a.resource.as_str())
                })
            })
    }
}

fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|_| path.starts_with(spec.trim_end_matches('*')))
}

/// `null` reads as the empty value, as Go's decoding leaves a nil slice.
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPolicy {
    #[serde(default, deserialize_with = "nullable")]
    rules: Vec<RawRule>,
    #[serde(default, deserialize_with = "nullable")]
    omit_stages: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    omit_managed_fields: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRule {
    #[serde(default, deserialize_with = "nullable")]
    level: String,
    #[serde(default, deserialize_with = "nullable")]
    users: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    user_groups: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    verbs: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    resources: Vec<GroupResources>,
    #[serde(default, deserialize_with = "nullable")]
    namespaces: Vec<String>,
    #[serde(rename = "nonResourceURLs", default, deserialize_with = "nullable")]
    non_resource_urls: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: Option<bool>,
}

/// Field errors, as upstream's field.ErrorList prints them.
#[derive(Default)]
struct Errors(Vec<String>);

impl Errors {
    fn invalid(&mut self, field: &str, value: impl fmt::Debug, detail: &str) {
        self.0
            .push(format!("{field}: Invalid value: {value:?}: {detail}"));
    }
}

impl RawPolicy {
    fn validate(self) -> Result<Policy, PolicyError> {
        let mut errors = Errors::default();
        let omit_stages = stages(&self.omit_stages, "omitStages", &mut errors);
        let mut rules = Vec::with_capacity(self.rules.len());
        for (i, raw) in self.rules.into_iter().enumerate() {
            let path = format!("rules[{i}]");
            let level = match Level::ALL.iter().find(|l| l.as_str() == raw.level) {
                Some(level) => *level,
                None if raw.level.is_empty() => {
                    errors.0.push(format!("{path}.level: Required value"));
                    Level::None
                }
                None => {
                    let supported: Vec<String> = Level::ALL
                        .iter()
                        .map(|l| format!("{:?}", l.as_str()))
                        .collect();
                    errors.0.push(format!(
                        "{path}.level: Unsupported value: {:?}: supported values: {}",
                        raw.level,
                        supported.join(", ")
                    ));
                    Level::None
                }
            };
            for (j, url) in raw.non_resource_urls.iter().enumerate() {
                let field = format!("{path}.nonResourceURLs[{j}]");
                if url == "*" {
                    continue;
                }
                if !url.starts_with('/') {
                    errors.invalid(
                        &field,
                        url,
                        "non-resource URL rules must begin with a '/' character",
                    );
                }
                // By position, not by slicing: the URL may end in a multi-byte character.
                if url.find('*').is_some_and(|at| at + 1 < url.len()) {
                    errors.invalid(
                        &field,
                        url,
                        "non-resource URL wildcards '*' must be the final character of the rule",
                    );
                }
            }
            for gr in &raw.resources {
                let group_errors = match gr.group.as_str() {
                    "" => Vec::new(),
                    group => registry::validation::names::is_dns1123_subdomain(group),
                };
                if !group_errors.is_empty() {
                    errors.invalid(
                        &format!("{path}.resources.group"),
                        &gr.group,
                        &group_errors.join(","),
                    );
                }
                if !gr.resource_names.is_empty() && gr.resources.is_empty() {
                    errors.invalid(
                        &format!("{path}.resources.resourceNames"),
                        &gr.resource_names,
                        "using resourceNames requires at least one resource",
                    );
                }
            }
            let rule_stages = stages(&raw.omit_stages, &format!("{path}.omitStages"), &mut errors);
            if !raw.non_resource_urls.is_empty()
                && (!raw.resources.is_empty() || !raw.namespaces.is_empty())
            {
                errors.invalid(
                    &format!("{path}.nonResourceURLs"),
                    &raw.non_resource_urls,
                    "rules cannot apply to both regular resources and non-resource URLs",
                );
            }
            rules.push(Rule {
                level,
                users: raw.users,
                user_groups: raw.user_groups,
                verbs: raw.verbs,
                resources: raw.resources,
                namespaces: raw.namespaces,
                non_resource_urls: raw.non_resource_urls,
                omit_stages: rule_stages.union(omit_stages),
                omit_managed_fields: raw.omit_managed_fields.unwrap_or(self.omit_managed_fields),
            });
        }
        match errors.0.len() {
            0 if rules.is_empty() => Err(PolicyError("loaded illegal policy with 0 rules".into())),
            0 => Ok(Policy {
                rules,
                omit_stages,
                omit_managed_fields: self.omit_managed_fields,
            }),
            1 => Err(PolicyError(errors.0.remove(0))),
            _ => Err(PolicyError(format!("[{}]", errors.0.join(", ")))),
        }
    }
}

fn stages(names: &[String], path: &str, errors: &mut Errors) -> Stages {
    let mut valid = Vec::new();
    for (i, name) in names.iter().enumerate() {
        match Stage::ALL.iter().find(|s| s.as_str() == name) {
            Some(stage) => valid.push(*stage),
            None => {
                let allowed: Vec<&str> = Stage::ALL.iter().map(|s| s.as_str()).collect();
                errors.invalid(
                    &format!("{path}[{i}]"),
                    name,
                    &format!("allowed stages are {}", allowed.join(",")),
                );
            }
        }
    }
    valid.into_iter().collect()
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
