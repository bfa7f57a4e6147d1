//! Group-versions discovery lists that the catalogue does not serve: those of aggregated
//! servers (APIServices with a Service) and of in-process APIs, each described by its own
//! server as an APIVersionDiscovery. One overrides the catalogue's resources of its
//! group-version, as an APIService with a Service takes the group-version over upstream.

use std::collections::BTreeMap;
use std::sync::Arc;

use registry::ResourceInfo;
use serde_json::{json, Map, Value};

/// One group-version served other than by the catalogue.
#[derive(Clone, Debug)]
pub struct ExternalVersion {
    pub group: String,
    pub version: String,
    /// Its APIService's groupPriorityMinimum and versionPriority.
    pub group_priority: i64,
    pub version_priority: i64,
    /// Its APIVersionDiscovery (version, resources, freshness).
    pub discovery: Value,
}

impl ExternalVersion {
    /// The entry of aggregated discovery, named for this version whatever the server said.
    pub fn version_entry(&self) -> Value {
        let mut entry = self.discovery.clone();
        if !entry.is_object() {
            entry = json!({});
        }
        entry["version"] = json!(self.version);
        if !entry["resources"].is_array() {
            entry["resources"] = json!([]);
        }
        if !entry["freshness"].is_string() {
            entry["freshness"] = json!("Current");
        }
        entry
    }
}

/// The catalogue's resources but those of group-versions served elsewhere.
pub fn not_overridden(
    resources: &[Arc<ResourceInfo>],
    external: &[ExternalVersion],
) -> Vec<Arc<ResourceInfo>> {
    resources
        .iter()
        .filter(|r| {
            !external
                .iter()
                .any(|e| e.group == r.group && e.version == r.version)
        })
        .cloned()
        .collect()
}

/// An APIResourceList in aggregated discovery's shape (upstream's
/// ConvertGroupVersionIntoToDiscovery): subresources (`parent/sub`) go under their parent.
pub fn version_from_resource_list(list: &Value, group: &str, version: &str) -> Value {
    let entries = list["resources"].as_array().cloned().unwrap_or_default();
    let mut parents: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let kind_of = |entry: &Value| {
        json!({
            "group": entry["group"].as_str().unwrap_or(group),
            "version": entry["version"].as_str().unwrap_or(version),
            "kind": entry["kind"],
        })
    };
    for entry in entries.iter().filter(|e| !text(e, "name").contains('/')) {
        let mut out = Map::new();
        out.insert("resource".into(), entry["name"].clone());
        out.insert("responseKind".into(), kind_of(entry));
        let scope = if entry["namespaced"] == true {
            "Namespaced"
        } else {
            "Cluster"
        };
        out.insert("scope".into(), scope.into());
        out.insert("singularResource".into(), entry["singularName"].clone());
        out.insert("verbs".into(), entry["verbs"].clone());
        for optional in ["shortNames", "categories"] {
            if entry[optional].as_array().is_some_and(|a| !a.is_empty()) {
                out.insert(optional.into(), entry[optional].clone());
            }
        }
        parents.insert(text(entry, "name").to_string(), out);
    }
    for entry in &entries {
        let Some((parent, sub)) = text(entry, "name").split_once('/') else {
            continue;
        };
        let Some(parent) = parents.get_mut(parent) else {
            continue;
        };
        let subs = parent.entry("subresources").or_insert_with(|| json!([]));
        if let Some(subs) = subs.as_array_mut() {
            subs.push(json!({"subresource": sub, "responseKind": kind_of(entry),
                "verbs": entry["verbs"]}));
        }
    }
    json!({
        "version": version,
        "resources": parents.into_values().map(Value::Object).collect::<Vec<_>>(),
        "freshness": "Current",
    })
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wardle(group_priority: i64, version: &str, version_priority: i64) -> ExternalVersion {
        ExternalVersion {
            group: "wardle.example.com".into(),
            version: version.into(),
            group_priority,
            version_priority,
            discovery: json!({"version": version, "resources": [], "freshness": "Stale"}),
        }
    }

    #[test]
    fn external_groups_merge_by_priority() {
        let resources: Vec<Arc<ResourceInfo>> =
            registry::Catalogue::builtin().all().as_ref().clone();
        // Above every built-in group but the core one (18000) and apps/apiregistration.
        let external = [wardle(17900, "v1alpha1", 15), wardle(17900, "v1beta1", 20)];
        let groups = super::super::api_groups_with(&resources, &external);
        let names: Vec<&str> = groups["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| g["name"].as_str())
            .collect();
        assert_eq!(names[0], "wardle.example.com", "{names:?}");
        // versionPriority first: v1beta1 before v1alpha1.
        assert_eq!(
            groups["groups"][0]["preferredVersion"]["version"],
            "v1beta1"
        );
        let doc = super::super::aggregated_with(&resources, false, "v2", &external);
        assert_eq!(doc["items"][0]["versions"][1]["freshness"], "Stale");
        let group = super::super::api_group_with(&resources, "wardle.example.com", &external)
            .expect("a group");
        assert_eq!(group["versions"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn resource_lists_become_version_discovery() {
        let list = json!({"kind": "APIResourceList", "groupVersion": "wardle.example.com/v1alpha1",
        "resources": [
            {"name": "flunders", "singularName": "flunder", "namespaced": true,
                "kind": "Flunder", "verbs": ["get", "list"], "shortNames": ["fl"]},
            {"name": "flunders/status", "singularName": "", "namespaced": true,
                "kind": "Flunder", "verbs": ["get"]},
        ]});
        let v = version_from_resource_list(&list, "wardle.example.com", "v1alpha1");
        assert_eq!(v["version"], "v1alpha1");
        let r = &v["resources"][0];
        assert_eq!(r["resource"], "flunders");
        assert_eq!(r["scope"], "Namespaced");
        assert_eq!(r["shortNames"], json!(["fl"]));
        assert_eq!(
            r["responseKind"],
            json!({"group": "wardle.example.com", "version": "v1alpha1", "kind": "Flunder"})
        );
        assert_eq!(r["subresources"][0]["subresource"], "status");
    }
}
