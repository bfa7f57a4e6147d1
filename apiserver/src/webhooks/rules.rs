//! Which webhooks a request is for (upstream's webhook/predicates): a webhook's rules
//! (operations, groups, versions, resources with their `*` and `/` forms, scope), its
//! namespaceSelector (the labels of the request's namespace; of the object itself for a
//! Namespace; ignored for other cluster-scoped objects) and its objectSelector (the new or
//! the old object's labels).

use std::sync::Arc;

use registry::admission::{Attributes, Operation};
use registry::catalogue::{Catalogue, ResourceInfo};
use registry::object::Object;
use registry::options::ListOptions;
use registry::selector::labels::LabelSelector;
use registry::Registry;
use serde_json::Value;

/// What a request is, as rules see it.
pub struct Request<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub plural: &'a str,
    pub subresource: &'a str,
    pub namespaced: bool,
    pub operation: Operation,
}

impl<'a> Request<'a> {
    pub fn of(info: &'a ResourceInfo, operation: Operation, subresource: &'a str) -> Self {
        Self {
            group: &info.group,
            version: &info.version,
            plural: &info.plural,
            subresource,
            namespaced: info.namespaced,
            operation,
        }
    }
}

/// Whether any rule of a list takes the request in.
pub fn any_rule_matches(rules: &Value, request: &Request<'_>) -> bool {
    rules
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| rule_matches(r, request))
}

/// How a set of rules takes a request in.
#[derive(Clone)]
pub enum Taken {
    /// As it is: the rules name its own group-version.
    AsIs,
    /// Through another version of the same resource (one storage), as upstream's
    /// `matchPolicy: Equivalent` takes it: the webhook or policy sees the object in that
    /// version.
    As(Arc<ResourceInfo>),
}

/// Whether and how `rules` take the request in: as it is, or, unless `match_policy` is
/// `Exact`, through the first other version of its resource (in the catalogue's order) that
/// they name.
pub fn taken(
    catalogue: &Catalogue,
    rules: &Value,
    match_policy: &Value,
    info: &ResourceInfo,
    operation: Operation,
    subresource: &str,
) -> Option<Taken> {
    if any_rule_matches(rules, &Request::of(info, operation, subresource)) {
        return Some(Taken::AsIs);
    }
    if match_policy == "Exact" {
        return None;
    }
    catalogue
        .all()
        .iter()
        .filter(|other| {
            other.group == info.group
                && other.plural == info.plural
                && other.version != info.version
        })
        .find(|other| any_rule_matches(rules, &Request::of(other, operation, subresource)))
        .map(|other| Taken::As(other.clone()))
}

pub fn operation_name(operation: Operation) -> &'static str {
    match operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
    }
}

fn strings(value: &Value) -> impl Iterator<Item = &str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn any_of(list: &Value, wanted: &str) -> bool {
    strings(list).any(|s| s == "*" || s == wanted)
}

/// One rule's resources entry against `plural`/`sub`.
fn resource_matches(entry: &str, plural: &str, sub: &str) -> bool {
    let (resource, entry_sub) = entry.split_once('/').unwrap_or((entry, ""));
    let resource_ok = resource == "*" || resource == plural;
    let sub_ok = entry_sub == "*" || entry_sub == sub;
    resource_ok && sub_ok
}

/// upstream's rules.Matcher for one RuleWithOperations.
pub fn rule_matches(rule: &Value, request: &Request<'_>) -> bool {
    let operation = operation_name(request.operation);
    let scope = rule["scope"].as_str().unwrap_or("*");
    let scope_ok = match scope {
        "Cluster" => !request.namespaced,
        "Namespaced" => request.namespaced,
        _ => true,
    };
    scope_ok
        && any_of(&rule["operations"], operation)
        && any_of(&rule["apiGroups"], request.group)
        && any_of(&rule["apiVersions"], request.version)
        && strings(&rule["resources"])
            .any(|r| resource_matches(r, request.plural, request.subresource))
}

/// The namespace of a namespaced request, from the watch cache; None for cluster-scoped ones.
pub async fn namespace_object(registry: &Registry, attrs: &Attributes<'_>) -> Option<Value> {
    if !attrs.info.namespaced {
        return None;
    }
    let ns = attrs.namespace?;
    let namespaces = registry.store("", "v1", "namespaces")?;
    let cached = ListOptions {
        resource_version: Some("0".into()),
        ..Default::default()
    };
    namespaces.get(None, ns, &cached).await.ok()
}

/// The labels a namespaceSelector is matched against: the request's namespace's, a
/// Namespace's own; None for other cluster-scoped objects (the selector does not apply).
pub async fn namespace_labels(
    registry: &Registry,
    attrs: &Attributes<'_>,
    obj: Option<&Object>,
) -> Option<Value> {
    let info = attrs.info;
    if info.group.is_empty() && info.plural == "namespaces" {
        let object = obj.or(attrs.old)?;
        return Some(object["metadata"]["labels"].clone());
    }
    namespace_object(registry, attrs)
        .await
        .map(|ns| ns["metadata"]["labels"].clone())
}

/// Whether a rule's `resourceNames` (empty: any) names the object.
pub fn names_match(rule: &Value, name: &str) -> bool {
    rule["resourceNames"]
        .as_array()
        .filter(|names| !names.is_empty())
        .is_none_or(|names| names.iter().any(|n| n == name))
}

/// A label selector of a webhook (absent or `{}`: everything).
pub fn selector_matches(selector: &Value, labels: &Value) -> bool {
    if selector.is_null() {
        return true;
    }
    LabelSelector::from_label_selector_json(selector)
        .map(|s| s.matches_labels(labels))
        .unwrap_or(false)
}

/// The configuration resources webhooks never see (upstream's
/// IsExemptAdmissionConfigurationResource).
pub fn exempt(group: &str, plural: &str) -> bool {
    group == "admissionregistration.k8s.io"
        && matches!(
            plural,
            "validatingwebhookconfigurations"
                | "mutatingwebhookconfigurations"
                | "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings"
                | "mutatingadmissionpolicies"
                | "mutatingadmissionpolicybindings"
        )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(plural: &str, sub: &str, operation: Operation) -> Request<'static> {
        Request {
            group: "apps",
            version: "v1",
            plural: Box::leak(plural.to_string().into_boxed_str()),
            subresource: Box::leak(sub.to_string().into_boxed_str()),
            namespaced: true,
            operation,
        }
    }

    #[test]
    fn rules_match_as_upstreams_matcher() {
        let rule = json!({"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["*"],
            "resources": ["deployments", "*/scale"], "scope": "Namespaced"});
        assert!(rule_matches(
            &rule,
            &request("deployments", "", Operation::Create)
        ));
        assert!(!rule_matches(
            &rule,
            &request("deployments", "", Operation::Update)
        ));
        assert!(!rule_matches(
            &rule,
            &request("deployments", "status", Operation::Create)
        ));
        assert!(rule_matches(
            &rule,
            &request("replicasets", "scale", Operation::Create)
        ));
        let cluster = json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
            "resources": ["*/*"], "scope": "Cluster"});
        assert!(!rule_matches(
            &cluster,
            &request("deployments", "status", Operation::Delete)
        ));
        let all = json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]});
        assert!(rule_matches(
            &all,
            &request("deployments", "", Operation::Delete)
        ));
        assert!(!rule_matches(
            &all,
            &request("deployments", "status", Operation::Delete)
        ));
    }

    #[test]
    fn selectors_and_exemptions() {
        let selector = json!({"matchLabels": {"team": "a"}});
        assert!(selector_matches(&selector, &json!({"team": "a", "x": "y"})));
        assert!(!selector_matches(&selector, &json!({})));
        assert!(selector_matches(&json!({}), &json!({})));
        assert!(selector_matches(&Value::Null, &json!({})));
        assert!(exempt(
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations"
        ));
        assert!(!exempt("apps", "deployments"));
    }
}
