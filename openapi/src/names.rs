//! Names upstream derives from groups and versions: operation ids, tags, definition names.

/// "rbac.authorization.k8s.io" -> ["rbac", "authorization"]; "" -> ["core"]. Upstream drops
/// the ".k8s.io" suffix shared by the built-in groups before naming things after a group.
fn group_words(group: &str) -> Vec<&str> {
    if group.is_empty() {
        return vec!["core"];
    }
    let trimmed = group.strip_suffix(".k8s.io").unwrap_or(group);
    trimmed
        .split(['.', '-'])
        .filter(|w| !w.is_empty())
        .collect()
}

pub(crate) fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// "CoreV1", "AppsV1", "RbacAuthorizationV1": the middle of every operation id.
pub(crate) fn group_version_camel(group: &str, version: &str) -> String {
    let mut out: String = group_words(group).into_iter().map(capitalize).collect();
    out.push_str(&capitalize(version));
    out
}

/// "core_v1", "apps_v1", "rbacAuthorization_v1": the tag grouping a group-version's operations.
pub(crate) fn tag(group: &str, version: &str) -> String {
    let mut out = String::new();
    for (i, word) in group_words(group).into_iter().enumerate() {
        if i == 0 {
            out.push_str(word);
        } else {
            out.push_str(&capitalize(word));
        }
    }
    out.push('_');
    out.push_str(version);
    out
}

/// The v3 index key and URL path of a group-version: "api/v1", "apis/apps/v1".
pub(crate) fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The inverse of [`group_version_path`]; `None` for anything else.
pub(crate) fn parse_group_version_path(path: &str) -> Option<(String, String)> {
    let path = path.trim_matches('/');
    let parts: Vec<&str> = path.split('/').collect();
    match parts.as_slice() {
        ["api", version] if !version.is_empty() => Some((String::new(), version.to_string())),
        ["apis", group, version] if !group.is_empty() && !version.is_empty() => {
            Some((group.to_string(), version.to_string()))
        }
        _ => None,
    }
}

/// Upstream names a custom resource's definition after its group reversed:
/// stable.example.com/v1 CronTab -> "com.example.stable.v1.CronTab".
pub(crate) fn custom_definition(group: &str, version: &str, kind: &str) -> String {
    let mut labels: Vec<&str> = group.split('.').collect();
    labels.reverse();
    format!("{}.{version}.{kind}", labels.join("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_upstream() {
        assert_eq!(group_version_camel("", "v1"), "CoreV1");
        assert_eq!(
            group_version_camel("rbac.authorization.k8s.io", "v1"),
            "RbacAuthorizationV1"
        );
        assert_eq!(group_version_camel("apps", "v1beta2"), "AppsV1beta2");
        assert_eq!(
            tag("rbac.authorization.k8s.io", "v1"),
            "rbacAuthorization_v1"
        );
        assert_eq!(tag("", "v1"), "core_v1");
        assert_eq!(
            custom_definition("stable.example.com", "v1", "CronTab"),
            "com.example.stable.v1.CronTab"
        );
        assert_eq!(
            parse_group_version_path("apis/apps/v1"),
            Some(("apps".into(), "v1".into()))
        );
        assert_eq!(
            parse_group_version_path("api/v1"),
            Some((String::new(), "v1".into()))
        );
        assert_eq!(parse_group_version_path("apis/apps"), None);
        assert_eq!(parse_group_version_path("apis/a/b/c"), None);
    }
}
