//! Why upstream's decoder refuses a built-in object of another kind, in its words. Upstream
//! decodes a body into the type its apiVersion and kind name, from one scheme of every
//! built-in kind, then converts that into the endpoint's internal type: a kind the scheme
//! lacks is "not registered", another registered kind has "unknown conversion". Only an
//! object of the endpoint's own kind in another version of the group gets as far as the
//! apiVersion check.

use crate::catalogue::ResourceInfo;
use crate::validation::quote;

/// Where kube-apiserver's scheme of built-in kinds is declared, as its messages name it.
const LEGACY_SCHEME: &str = "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30";

/// Upstream's decode error for a body whose apiVersion and kind are `api_version` and `kind`,
/// sent to `info`'s endpoint; None when it decodes (the apiVersion check judges the rest).
pub(super) fn decode_problem(info: &ResourceInfo, api_version: &str, kind: &str) -> Option<String> {
    // apiextensions-apiserver and kube-aggregator decode with schemes of their own.
    if matches!(
        info.group.as_str(),
        "apiextensions.k8s.io" | "apiregistration.k8s.io"
    ) {
        return None;
    }
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    let why = if openapi::wire_order::kind(api_version, kind).is_none() {
        format!(
            "no kind {} is registered for version {} in scheme {}",
            quote(kind),
            quote(api_version),
            quote(LEGACY_SCHEME)
        )
    } else if kind != info.kind {
        format!(
            "converting ({version}.{kind}) to ({}.{}): unknown conversion",
            internal_package(&info.group),
            info.kind
        )
    } else {
        return None;
    };
    Some(format!(
        "{kind} in version {} cannot be handled as a {}: {why}",
        quote(version),
        info.kind
    ))
}

/// The Go package of a group's internal types, which conversion errors name.
fn internal_package(group: &str) -> &str {
    match group {
        // events.k8s.io serves core's Event.
        "" | "events.k8s.io" => "core",
        "internal.apiserver.k8s.io" => "apiserverinternal",
        group => group.split('.').next().unwrap_or(group),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Catalogue;

    fn info(group: &str, kind: &str) -> std::sync::Arc<ResourceInfo> {
        let found = Catalogue::builtin()
            .all()
            .iter()
            .find(|i| i.group == group && i.kind == kind)
            .cloned();
        found.unwrap_or_else(|| panic!("{group} {kind} is built in"))
    }

    #[test]
    fn other_kinds_are_unknown_conversions_into_the_groups_internal_type() {
        assert_eq!(
            decode_problem(&info("apps", "Deployment"), "v1", "Namespace").as_deref(),
            Some(
                "Namespace in version \"v1\" cannot be handled as a Deployment: converting \
                 (v1.Namespace) to (apps.Deployment): unknown conversion"
            )
        );
        let role = info("rbac.authorization.k8s.io", "ClusterRole");
        let why = decode_problem(&role, "networking.k8s.io/v1", "NetworkPolicy");
        assert!(
            why.as_deref().is_some_and(|w| w.ends_with(
                "converting (v1.NetworkPolicy) to (rbac.ClusterRole): unknown conversion"
            )),
            "{why:?}"
        );
    }

    #[test]
    fn the_endpoints_own_kind_decodes_and_unknown_kinds_are_not_registered() {
        let event = info("", "Event");
        assert_eq!(decode_problem(&event, "v1", "Event"), None);
        assert_eq!(decode_problem(&event, "events.k8s.io/v1", "Event"), None);
        assert_eq!(
            decode_problem(&event, "v1", "pod").as_deref(),
            Some(
                "pod in version \"v1\" cannot be handled as a Event: no kind \"pod\" is \
                 registered for version \"v1\" in scheme \
                 \"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30\""
            )
        );
    }
}
