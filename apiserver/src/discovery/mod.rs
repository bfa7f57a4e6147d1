//! Discovery documents (`/api`, `/apis`, `/apis/<group>`, `/api/v1`, `/apis/<group>/<version>`),
//! in both the per-version form and the aggregated `apidiscovery.k8s.io` form newer clients
//! ask for first. Pure functions of the catalogue's resource list, so a handler can rebuild
//! them whenever the catalogue changes.

pub mod external;
#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::sync::Arc;

use registry::ResourceInfo;
use serde_json::{json, Map, Value};

use external::ExternalVersion;

pub use crate::api::response::Encoding;

const DISCOVERY_GROUP: &str = "apidiscovery.k8s.io";
const DISCOVERY_KIND: &str = "APIGroupDiscoveryList";
/// The apidiscovery.k8s.io versions served; both have the same shape.
const AGGREGATED_VERSIONS: [&str; 2] = ["v2", "v2beta1"];

/// `/api`: the legacy group's versions (APIVersions).
pub fn core_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
    })
}

/// `/apis`: every named group (APIGroupList), in upstream's group priority order.
pub fn api_groups(resources: &[Arc<ResourceInfo>]) -> Value {
    api_groups_with(resources, &[])
}

/// `/apis` with the group-versions served other than by the catalogue (aggregation).
pub fn api_groups_with(resources: &[Arc<ResourceInfo>], external: &[ExternalVersion]) -> Value {
    let resources = external::not_overridden(resources, external);
    let groups: Vec<Value> = named_groups(&resources, external)
        .iter()
        .map(|(group, versions)| Value::Object(group_body(group, versions)))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>` (APIGroup); None when no resource is served in the group. The legacy
/// group has no such document.
pub fn api_group(resources: &[Arc<ResourceInfo>], group: &str) -> Option<Value> {
    api_group_with(resources, group, &[])
}

/// `/apis/<group>` with the group-versions served other than by the catalogue.
pub fn api_group_with(
    resources: &[Arc<ResourceInfo>],
    group: &str,
    external: &[ExternalVersion],
) -> Option<Value> {
    if group.is_empty() {
        return None;
    }
    let resources = external::not_overridden(resources, external);
    let versions = versions_in_order(&resources, group, external);
    if versions.is_empty() {
        return None;
    }
    let mut doc = Map::new();
    doc.insert("kind".into(), "APIGroup".into());
    doc.insert("apiVersion".into(), "v1".into());
    doc.extend(group_body(group, &versions));
    Some(Value::Object(doc))
}

/// `/api/v1` (group "") and `/apis/<group>/<version>` (APIResourceList): each resource and
/// each of its subresources, sorted by name as upstream's installer registers them. None
/// when nothing is served at group/version.
pub fn resource_list(resources: &[Arc<ResourceInfo>], group: &str, version: &str) -> Option<Value> {
    let served = served_at(resources, group, version);
    if served.is_empty() {
        return None;
    }
    let mut entries: Vec<(String, Value)> = Vec::new();
    for info in served {
        entries.push((info.plural.clone(), resource_entry(info)));
        for sub in subresources(info) {
            let name = format!("{}/{}", info.plural, sub.name);
            let entry = subresource_entry(info, &sub, &name);
            entries.push((name, entry));
        }
    }
    // Upstream orders by the full path, so `pods-x` would precede `pods/status`; sorting
    // the flattened names rather than parents keeps that.
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut doc = Map::new();
    doc.insert("kind".into(), "APIResourceList".into());
    // The legacy group's list carries no apiVersion upstream; named groups' lists do.
    if !group.is_empty() {
        doc.insert("apiVersion".into(), "v1".into());
    }
    doc.insert("groupVersion".into(), group_version(group, version).into());
    doc.insert(
        "resources".into(),
        entries.into_iter().map(|(_, entry)| entry).collect(),
    );
    Some(Value::Object(doc))
}

/// The aggregated document (APIGroupDiscoveryList) for `/api` (`legacy`: the core group
/// alone) or `/apis` (every named group), in apidiscovery.k8s.io `version` ("v2" or
/// "v2beta1", whose shapes are identical).
pub fn aggregated(resources: &[Arc<ResourceInfo>], legacy: bool, version: &str) -> Value {
    aggregated_with(resources, legacy, version, &[])
}

/// The aggregated document with the group-versions served other than by the catalogue,
/// each as its server describes it.
pub fn aggregated_with(
    resources: &[Arc<ResourceInfo>],
    legacy: bool,
    version: &str,
    external: &[ExternalVersion],
) -> Value {
    let resources = external::not_overridden(resources, external);
    let resources = resources.as_slice();
    let items: Vec<Value> = if legacy {
        let versions = versions_of(resources, "");
        if versions.is_empty() {
            Vec::new()
        } else {
            vec![aggregated_group(resources, "", &versions)]
        }
    } else {
        named_groups(resources, external)
            .iter()
            .map(|(group, versions)| aggregated_group_with(resources, group, versions, external))
            .collect()
    };
    json!({
        "kind": DISCOVERY_KIND,
        "apiVersion": format!("{DISCOVERY_GROUP}/{version}"),
        "metadata": {},
        "items": items,
    })
}

/// The aggregated document a client asked for: its apidiscovery.k8s.io version, in which
/// serializer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aggregated {
    pub version: &'static str,
    pub encoding: Encoding,
}

impl Aggregated {
    /// The Content-Type of the document, which clients check before decoding it as one.
    pub fn content_type(self) -> String {
        let media = match self.encoding {
            Encoding::Json => "application/json",
            Encoding::Yaml => "application/yaml",
            Encoding::Protobuf => crate::api::protobuf::MEDIA_TYPE,
        };
        format!(
            "{media};g={DISCOVERY_GROUP};v={};as={DISCOVERY_KIND}",
            self.version
        )
    }
}

/// Which aggregated discovery document, if any, an Accept header selects: the first
/// acceptable media range in the client's preference order decides, so a plain type listed
/// first (or alone) means the per-version documents. Higher q-values come first, and at
/// equal q a concrete type beats a wildcard, as upstream's negotiation sorts them.
pub fn wants_aggregated(accept: &str) -> Option<Aggregated> {
    let mut ranges: Vec<MediaRange> = accept.split(',').filter_map(MediaRange::parse).collect();
    // Stable, so the client's own order stands among equals.
    ranges.sort_by(|a, b| {
        b.q.total_cmp(&a.q)
            .then_with(|| a.wildcards().cmp(&b.wildcards()))
    });
    for range in ranges.iter().filter(|r| r.q > 0.0) {
        match range.choice() {
            Choice::Aggregated(version) => return Some(version),
            Choice::Plain => return None,
            Choice::Unacceptable => {}
        }
    }
    None
}

/// Upstream's storageVersionHash: base64 of the first 8 bytes of SHA-256 over
/// `<group>/<version>/<kind>` of the storage version, so values match a real cluster's
/// (`xPOwRZ+Yhw8=` for pods) and tools comparing them across servers agree.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

/// One accepted media range of an Accept header.
struct MediaRange {
    kind: String,
    subtype: String,
    /// The g / v / as parameters, when any is present.
    convert: [Option<String>; 3],
    q: f64,
}

enum Choice {
    Aggregated(Aggregated),
    Plain,
    Unacceptable,
}

impl MediaRange {
    fn parse(clause: &str) -> Option<Self> {
        let mut parts = clause.split(';');
        let (kind, subtype) = parts.next()?.trim().split_once('/')?;
        let mut range = MediaRange {
            kind: kind.trim().to_ascii_lowercase(),
            subtype: subtype.trim().to_ascii_lowercase(),
            convert: [None, None, None],
            q: 1.0,
        };
        for param in parts {
            let Some((key, value)) = param.split_once('=') else {
                continue;
            };
            let value = value.trim().trim_matches('"').to_string();
            match key.trim().to_ascii_lowercase().as_str() {
                "g" => range.convert[0] = Some(value),
                "v" => range.convert[1] = Some(value),
                "as" => range.convert[2] = Some(value),
                // An unreadable q is treated as absent rather than refusing the range.
                "q" => range.q = value.parse().unwrap_or(1.0),
                _ => {}
            }
        }
        Some(range)
    }

    fn wildcards(&self) -> u8 {
        u8::from(self.kind == "*") + u8::from(self.subtype == "*")
    }

    /// The serializer this range names; a wildcard is JSON, the first of the server's.
    fn encoding(&self) -> Option<Encoding> {
        match (self.kind.as_str(), self.subtype.as_str()) {
            ("application", "json" | "*") | ("*", "*") => Some(Encoding::Json),
            ("application", "yaml") => Some(Encoding::Yaml),
            ("application", "vnd.kubernetes.protobuf") => Some(Encoding::Protobuf),
            _ => None,
        }
    }

    fn choice(&self) -> Choice {
        let Some(encoding) = self.encoding() else {
            return Choice::Unacceptable;
        };
        match &self.convert {
            [None, None, None] => Choice::Plain,
            [Some(g), Some(v), Some(kind)] if g == DISCOVERY_GROUP && kind == DISCOVERY_KIND => {
                match AGGREGATED_VERSIONS.iter().find(|known| *known == v) {
                    Some(version) => Choice::Aggregated(Aggregated { version, encoding }),
                    None => Choice::Unacceptable,
                }
            }
            // A conversion to any other kind is not something discovery can answer with.
            _ => Choice::Unacceptable,
        }
    }
}

/// A subresource as discovery describes it.
struct Subresource {
    name: &'static str,
    /// The response kind's group and version when they differ from the parent's.
    group_version: Option<(&'static str, &'static str)>,
    kind: String,
    verbs: &'static [&'static str],
}

/// The subresources a resource serves, by name, with the kinds and verbs its catalogue entry
/// registers for them.
fn subresources(info: &ResourceInfo) -> Vec<Subresource> {
    let mut subs: Vec<Subresource> = info
        .subresources
        .iter()
        .map(|sub| Subresource {
            name: sub.name,
            // A kind from the parent's own group and version is not repeated upstream.
            group_version: sub
                .speaks
                .map(|s| (s.group, s.version))
                .filter(|(g, v)| !(*g == info.group && *v == info.version)),
            kind: sub
                .speaks
                .map_or_else(|| info.kind.clone(), |s| s.kind.to_string()),
            verbs: sub.verbs,
        })
        .collect();
    subs.sort_by(|a, b| a.name.cmp(b.name));
    subs.dedup_by(|a, b| a.name == b.name);
    subs
}

fn resource_entry(info: &ResourceInfo) -> Value {
    let mut entry = Map::new();
    entry.insert("name".into(), info.plural.clone().into());
    entry.insert("singularName".into(), info.singular.clone().into());
    entry.insert("namespaced".into(), info.namespaced.into());
    entry.insert("kind".into(), info.kind.clone().into());
    entry.insert("verbs".into(), info.verbs.clone().into());
    if !info.short_names.is_empty() {
        entry.insert("shortNames".into(), info.short_names.clone().into());
    }
    if !info.categories.is_empty() {
        entry.insert("categories".into(), info.categories.clone().into());
    }
    if let Some((group, version, kind)) = info.storage_version() {
        entry.insert(
            "storageVersionHash".into(),
            storage_version_hash(group, version, kind).into(),
        );
    }
    Value::Object(entry)
}

fn subresource_entry(info: &ResourceInfo, sub: &Subresource, name: &str) -> Value {
    let mut entry = Map::new();
    entry.insert("name".into(), name.into());
    // Always present upstream, and empty for subresources.
    entry.insert("singularName".into(), "".into());
    entry.insert("namespaced".into(), info.namespaced.into());
    if let Some((group, version)) = sub.group_version {
        entry.insert("group".into(), group.into());
        entry.insert("version".into(), version.into());
    }
    entry.insert("kind".into(), sub.kind.clone().into());
    entry.insert("verbs".into(), sub.verbs.into());
    Value::Object(entry)
}

fn aggregated_group(resources: &[Arc<ResourceInfo>], group: &str, versions: &[String]) -> Value {
    aggregated_group_with(resources, group, versions, &[])
}

fn aggregated_group_with(
    resources: &[Arc<ResourceInfo>],
    group: &str,
    versions: &[String],
    external: &[ExternalVersion],
) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|version| {
            if let Some(ext) = external
                .iter()
                .find(|e| e.group == group && e.version == *version)
            {
                return ext.version_entry();
            }
            let served = served_at(resources, group, version);
            json!({
                "version": version,
                "resources": served.into_iter().map(aggregated_resource).collect::<Vec<_>>(),
                "freshness": "Current",
            })
        })
        .collect();
    // The legacy group's name is empty, which upstream omits.
    let metadata = if group.is_empty() {
        json!({})
    } else {
        json!({"name": group})
    };
    json!({"metadata": metadata, "versions": versions})
}

fn aggregated_resource(info: &ResourceInfo) -> Value {
    let mut entry = Map::new();
    entry.insert("resource".into(), info.plural.clone().into());
    // Empty group and version mean "the containing group version", as upstream's built-in
    // resources report them; clients resolve both forms alike.
    entry.insert("responseKind".into(), response_kind(None, &info.kind));
    entry.insert("scope".into(), scope(info).into());
    entry.insert("singularResource".into(), info.singular.clone().into());
    entry.insert("verbs".into(), info.verbs.clone().into());
    if !info.short_names.is_empty() {
        entry.insert("shortNames".into(), info.short_names.clone().into());
    }
    if !info.categories.is_empty() {
        entry.insert("categories".into(), info.categories.clone().into());
    }
    let subs: Vec<Value> = subresources(info)
        .iter()
        .map(|sub| {
            json!({
                "subresource": sub.name,
                "responseKind": response_kind(sub.group_version, &sub.kind),
                "verbs": sub.verbs,
            })
        })
        .collect();
    if !subs.is_empty() {
        entry.insert("subresources".into(), subs.into());
    }
    Value::Object(entry)
}

fn response_kind(group_version: Option<(&str, &str)>, kind: &str) -> Value {
    let (group, version) = group_version.unwrap_or(("", ""));
    json!({"group": group, "version": version, "kind": kind})
}

fn scope(info: &ResourceInfo) -> &'static str {
    if info.namespaced {
        "Namespaced"
    } else {
        "Cluster"
    }
}

/// An entry of APIGroupList / body of APIGroup; `versions` is in preference order.
fn group_body(group: &str, versions: &[String]) -> Map<String, Value> {
    let entries: Vec<Value> = versions
        .iter()
        .map(|version| version_entry(group, version))
        .collect();
    let mut body = Map::new();
    body.insert("name".into(), group.into());
    body.insert("versions".into(), entries.into());
    if let Some(preferred) = versions.first() {
        body.insert("preferredVersion".into(), version_entry(group, preferred));
    }
    body
}

/// GroupVersionForDiscovery.
fn version_entry(group: &str, version: &str) -> Value {
    json!({"groupVersion": group_version(group, version), "version": version})
}

fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// The resources served at group/version, by plural.
fn served_at<'a>(
    resources: &'a [Arc<ResourceInfo>],
    group: &str,
    version: &str,
) -> Vec<&'a ResourceInfo> {
    let mut served: Vec<&ResourceInfo> = resources
        .iter()
        .map(Arc::as_ref)
        .filter(|r| r.group == group && r.version == version)
        .collect();
    served.sort_by(|a, b| a.plural.cmp(&b.plural));
    served
}

/// A group's served versions, most preferred first.
fn versions_of(resources: &[Arc<ResourceInfo>], group: &str) -> Vec<String> {
    let mut versions: Vec<String> = resources
        .iter()
        .filter(|r| r.group == group)
        .map(|r| r.version.clone())
        .collect();
    versions.sort_by(|a, b| compare_versions(a, b));
    versions.dedup();
    versions
}

/// Every named group with its versions, in the order upstream's aggregator lists them:
/// by the highest groupPriorityMinimum of the group's APIServices, then by name.
fn named_groups(
    resources: &[Arc<ResourceInfo>],
    external: &[ExternalVersion],
) -> Vec<(String, Vec<String>)> {
    let mut groups: BTreeSet<&str> = resources
        .iter()
        .map(|r| r.group.as_str())
        .filter(|group| !group.is_empty())
        .collect();
    groups.extend(
        external
            .iter()
            .map(|e| e.group.as_str())
            .filter(|g| !g.is_empty()),
    );
    let priority = |group: &str| {
        let own = resources
            .iter()
            .any(|r| r.group == group)
            .then(|| i64::from(registry::catalogue::group_priority(group)));
        external
            .iter()
            .filter(|e| e.group == group)
            .map(|e| e.group_priority)
            .chain(own)
            .max()
            .unwrap_or(0)
    };
    let mut named: Vec<(i64, String, Vec<String>)> = groups
        .into_iter()
        .map(|group| {
            (
                priority(group),
                group.to_string(),
                versions_in_order(resources, group, external),
            )
        })
        .collect();
    // Ties (and every custom group) fall back to the name, as upstream's APIService sort
    // does.
    named.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    named.into_iter().map(|(_, g, v)| (g, v)).collect()
}

/// A group's versions from the catalogue and elsewhere, most preferred first: by
/// versionPriority, then in Kubernetes version order.
fn versions_in_order(
    resources: &[Arc<ResourceInfo>],
    group: &str,
    external: &[ExternalVersion],
) -> Vec<String> {
    let mut versions: Vec<(i64, String)> = versions_of(resources, group)
        .into_iter()
        .map(|v| {
            (
                i64::from(registry::catalogue::version_priority(group, &v)),
                v,
            )
        })
        .collect();
    versions.extend(
        external
            .iter()
            .filter(|e| e.group == group)
            .map(|e| (e.version_priority, e.version.clone())),
    );
    versions.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| compare_versions(&a.1, &b.1)));
    versions.dedup_by(|a, b| a.1 == b.1);
    versions.into_iter().map(|(_, v)| v).collect()
}

/// Kubernetes version order, most preferred first: GA before beta before alpha, higher
/// major then higher minor first; versions not of that form come last, alphabetically.
fn compare_versions(a: &str, b: &str) -> Ordering {
    match (kube_version(a), kube_version(b)) {
        // The spelling breaks ties (`v01` against `v1`) so equal names end up adjacent.
        (Some(x), Some(y)) => y.cmp(&x).then_with(|| a.cmp(b)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// `(stability, major, minor)` of `v<major>[(alpha|beta)<minor>]`; stability 2 is GA.
fn kube_version(version: &str) -> Option<(u8, u64, u64)> {
    let rest = version.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let major: u64 = rest.get(..digits)?.parse().ok()?;
    let suffix = rest.get(digits..)?;
    if suffix.is_empty() {
        return Some((2, major, 0));
    }
    let (stability, minor) = if let Some(minor) = suffix.strip_prefix("beta") {
        (1, minor)
    } else {
        (0, suffix.strip_prefix("alpha")?)
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stability, major, minor.parse().ok()?))
}
