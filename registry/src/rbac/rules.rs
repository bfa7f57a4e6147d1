//! rbac/v1 PolicyRule and how one grants a request (upstream's RuleAllows and the rbac/v1
//! helpers VerbMatches, APIGroupMatches, ResourceMatches, ResourceNameMatches,
//! NonResourceURLMatches, CompactString).

use serde::{Deserialize, Deserializer, Serialize};

use crate::auth::Attributes;

/// Matches every verb, group or resource; as a non-resource URL, every path.
pub const ALL: &str = "*";

/// One rbac/v1 PolicyRule, in its wire form.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    #[serde(default, deserialize_with = "null_as_empty")]
    pub verbs: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub api_groups: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resources: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resource_names: Vec<String>,
    #[serde(
        default,
        rename = "nonResourceURLs",
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

/// Go's encoding leaves an empty list as `null`; it means the same as none.
fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(d)?.unwrap_or_default())
}

impl PolicyRule {
    /// Whether this rule grants the request `a` (upstream's RuleAllows).
    pub fn allows(&self, a: &Attributes) -> bool {
        if !self.verb_matches(&a.verb) {
            return false;
        }
        if !a.resource_request {
            return self.non_resource_url_matches(&a.path);
        }
        self.api_group_matches(&a.api_group)
            && self.resource_matches(&a.resource, &a.subresource)
            && self.resource_name_matches(&a.name)
    }

    pub fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == ALL || v == verb)
    }

    pub fn api_group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == ALL || g == group)
    }

    /// `resource` with `subresource` (if any) is matched as `resource/subresource`, by `*`, by
    /// the exact combination, or by `*/subresource`. As upstream, `pods/*` names no
    /// wildcard: it only matches a subresource literally called `*`.
    pub fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            r == ALL
                || is_combined(r, resource, subresource)
                || (!subresource.is_empty()
                    && r.len() == subresource.len() + 2
                    && r.starts_with("*/")
                    && r.ends_with(subresource))
        })
    }

    /// A rule without resourceNames matches every name (and requests naming none).
    pub fn resource_name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }

    /// `*` matches every path; a URL ending in `*` matches every path it prefixes.
    pub fn non_resource_url_matches(&self, path: &str) -> bool {
        self.non_resource_urls
            .iter()
            .any(|u| u == ALL || url_covers(u, path))
    }

    /// Upstream's CompactString, as escalation errors list missing rules:
    /// `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`.
    pub fn compact_string(&self) -> String {
        let parts = [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ];
        let shown: Vec<String> = parts
            .iter()
            .filter(|(_, values)| !values.is_empty())
            .map(|(label, values)| format!("{label}:{}", go_quote_list(values)))
            .collect();
        format!("{{{}}}", shown.join(", "))
    }
}

/// `rule == resource + "/" + subresource` (or `resource` without one), without building it.
fn is_combined(rule: &str, resource: &str, subresource: &str) -> bool {
    if subresource.is_empty() {
        return rule == resource;
    }
    rule.len() == resource.len() + 1 + subresource.len()
        && rule.starts_with(resource)
        && rule.as_bytes()[resource.len()] == b'/'
        && rule.ends_with(subresource)
}

/// An exact URL, or a trailing-`*` prefix of it.
pub(crate) fn url_covers(owner: &str, path: &str) -> bool {
    owner == path || (owner.ends_with('*') && path.starts_with(owner.trim_end_matches('*')))
}

pub(crate) use crate::validation::{quote as go_quote, quote_into as push_go_quoted};

/// A list of strings as Go's `%q` prints a []string: `["a" "b"]`.
pub fn go_quote_list(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[{}]", quoted.join(" "))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::auth::UserInfo;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: strings(verbs),
            api_groups: strings(groups),
            resources: strings(resources),
            ..Default::default()
        }
    }

    fn request(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            user: Arc::new(UserInfo::default()),
            verb: verb.into(),
            resource_request: true,
            namespace: "default".into(),
            api_group: group.into(),
            api_version: "v1".into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            path: String::new(),
        }
    }

    fn non_resource(verb: &str, path: &str) -> Attributes {
        Attributes {
            user: Arc::new(UserInfo::default()),
            verb: verb.into(),
            path: path.into(),
            ..Default::default()
        }
    }

    #[test]
    fn verbs_groups_and_resources_match_exactly_or_by_wildcard() {
        let pods = rule(&["get", "list"], &[""], &["pods"]);
        assert!(pods.allows(&request("get", "", "pods", "", "web")));
        assert!(pods.allows(&request("list", "", "pods", "", "")));
        assert!(!pods.allows(&request("delete", "", "pods", "", "web")));
        assert!(!pods.allows(&request("get", "apps", "pods", "", "web")));
        assert!(!pods.allows(&request("get", "", "services", "", "web")));
        let everything = rule(&["*"], &["*"], &["*"]);
        assert!(everything.allows(&request(
            "escalate",
            "rbac.authorization.k8s.io",
            "roles",
            "",
            "x"
        )));
        assert!(everything.allows(&request("get", "", "pods", "log", "web")));
        // A rule without groups matches no resource request.
        assert!(!rule(&["*"], &[], &["*"]).allows(&request("get", "", "pods", "", "")));
    }

    #[test]
    fn subresources_need_their_own_rule_or_a_star_prefix() {
        let pods = rule(&["get"], &[""], &["pods"]);
        assert!(!pods.allows(&request("get", "", "pods", "log", "web")));
        let log = rule(&["get"], &[""], &["pods/log"]);
        assert!(log.allows(&request("get", "", "pods", "log", "web")));
        assert!(!log.allows(&request("get", "", "pods", "", "web")));
        assert!(!log.allows(&request("get", "", "pods", "exec", "web")));
        let scale = rule(&["update"], &["*"], &["*/scale"]);
        assert!(scale.allows(&request("update", "apps", "deployments", "scale", "web")));
        assert!(!scale.allows(&request("update", "apps", "deployments", "", "web")));
        assert!(!scale.allows(&request("update", "apps", "deployments", "status", "web")));
        // As upstream, `pods/*` is no wildcard over pods' subresources.
        let pods_star = rule(&["get"], &[""], &["pods/*"]);
        assert!(!pods_star.allows(&request("get", "", "pods", "log", "web")));
        assert!(!pods_star.allows(&request("get", "", "pods", "", "web")));
    }

    #[test]
    fn resource_names_restrict_to_those_objects() {
        let named = PolicyRule {
            resource_names: strings(&["app-config"]),
            ..rule(&["get", "update"], &[""], &["configmaps"])
        };
        assert!(named.allows(&request("get", "", "configmaps", "", "app-config")));
        assert!(!named.allows(&request("get", "", "configmaps", "", "other")));
        // A list or create names no object: a named rule does not grant it.
        assert!(!named.allows(&request("get", "", "configmaps", "", "")));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_trailing_star() {
        let health = PolicyRule {
            verbs: strings(&["get"]),
            non_resource_urls: strings(&["/healthz", "/healthz/*", "/version"]),
            ..Default::default()
        };
        assert!(health.allows(&non_resource("get", "/healthz")));
        assert!(health.allows(&non_resource("get", "/healthz/etcd")));
        assert!(health.allows(&non_resource("get", "/version")));
        assert!(!health.allows(&non_resource("get", "/version/extra")));
        assert!(!health.allows(&non_resource("post", "/healthz")));
        assert!(!health.allows(&non_resource("get", "/metrics")));
        let all = PolicyRule {
            verbs: strings(&["*"]),
            non_resource_urls: strings(&["*"]),
            ..Default::default()
        };
        assert!(all.allows(&non_resource("delete", "/anything/at/all")));
        // A non-resource rule grants no resource request, and the other way round.
        assert!(!all.allows(&request("get", "", "pods", "", "")));
        assert!(!rule(&["*"], &["*"], &["*"]).allows(&non_resource("get", "/healthz")));
    }

    #[test]
    fn compact_string_is_upstreams() {
        let r = PolicyRule {
            resource_names: strings(&["a"]),
            ..rule(&["get", "list"], &[""], &["pods"])
        };
        assert_eq!(
            r.compact_string(),
            r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get" "list"]}"#
        );
        let urls = PolicyRule {
            verbs: strings(&["get"]),
            non_resource_urls: strings(&["/metrics"]),
            ..Default::default()
        };
        assert_eq!(
            urls.compact_string(),
            r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#
        );
        assert_eq!(go_quote("a\"b\\c\n"), r#""a\"b\\c\n""#);
    }

    #[test]
    fn wire_form_reads_nulls_as_empty() {
        let r: PolicyRule = serde_json::from_value(serde_json::json!({
            "verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": null
        }))
        .expect("rule");
        assert!(r.resource_names.is_empty());
        assert_eq!(
            serde_json::to_value(&r).expect("json"),
            serde_json::json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]})
        );
    }
}
