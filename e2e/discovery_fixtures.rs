//! Discovery equals kube-apiserver 1.35's own: for every GA group-version served by default,
//! the served `/api/v1` and `/apis/<group>/<version>` documents (APIResourceList) equal
//! upstream's `api/discovery/*.json` fixtures, and the aggregated `/api` and `/apis` documents
//! (apidiscovery.k8s.io/v2), restricted to those group-versions, equal upstream's
//! `aggregated_v2.json` and the aggregated form upstream derives from the per-version lists.
//! Compared as JSON values, whole entries (name, singularName, namespaced, kind, group,
//! version, verbs, shortNames, categories, storageVersionHash), in upstream's order.
//!
//! The fixtures under `e2e/fixtures/discovery/` are kubernetes/kubernetes `api/discovery/`
//! files, verbatim, which upstream generates from a running kube-apiserver. The repository's
//! history holds several versions of each; the one used (by commit) and how it relates to
//! 1.35 is in [`FIXTURES`]. Where the stored version is older or newer than 1.35, the
//! adjustment to 1.35 is made in code below, next to the fixture's use, with its reason; the
//! files themselves are never edited.
//!
//! storageVersionHash is compared too: upstream computes it as base64 of the first 8 bytes of
//! SHA-256 over `<group>/<version>/<kind>` of the resource's *storage* version, so it is
//! reproducible from the fixtures (`qwQve8ut294=` for HPAs is autoscaling/v2's, also at
//! autoscaling/v1; `jfWCUB31mvA=` for CRDs is apiextensions.k8s.io/v1beta1's).

mod support;

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};
use support::{start, start_on_etcd, Server};

const AGGREGATED_ACCEPT: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Every GA group-version kube-apiserver 1.35 serves by default, with the fixture its
/// APIResourceList is compared with and the kubernetes/kubernetes commit that file was taken
/// from.
///
/// Choosing among the stored versions: some stored versions of these files are not upstream's
/// (commit 7c66d0f84a20 drops `watch` from every verb list of apps/v1, apiregistration.k8s.io/v1,
/// coordination.k8s.io/v1, networking.k8s.io/v1, node.k8s.io/v1, policy/v1 and storage.k8s.io/v1;
/// 7b99e0786ecc adds a `podautoscalers` category to autoscaling/v2 HPAs), and others are older
/// than 1.35 (flowcontrol.apiserver.k8s.io/v1 at 6f137b77b15d still has v1beta3's storage hash
/// `9NnFrw7ZEmA=`; resource.k8s.io/v1 at 4e592f6c145b has v1beta1's, 1.34's storage version) or
/// newer (certificates.k8s.io/v1 at 32d5969f5a3d has PodCertificateRequest, beta in 1.35). The
/// versions below are upstream's and, except where [`expected_list`] says otherwise, 1.35's:
/// every storageVersionHash in them is the hash of the storage version 1.35 uses.
const FIXTURES: [(&str, &str, &str, &str); 22] = [
    ("", "v1", "api__v1.json", "7c554ea1d91e"),
    (
        "admissionregistration.k8s.io",
        "v1",
        "apis__admissionregistration.k8s.io__v1.json",
        "121460defea7",
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "apis__apiextensions.k8s.io__v1.json",
        "6732d913237b",
    ),
    (
        "apiregistration.k8s.io",
        "v1",
        "apis__apiregistration.k8s.io__v1.json",
        "a0d8ee7954d1",
    ),
    ("apps", "v1", "apis__apps__v1.json", "d7ce957d8a87"),
    (
        "authentication.k8s.io",
        "v1",
        "apis__authentication.k8s.io__v1.json",
        "2e0908106e44",
    ),
    (
        "authorization.k8s.io",
        "v1",
        "apis__authorization.k8s.io__v1.json",
        "95f08499d652",
    ),
    (
        "autoscaling",
        "v1",
        "apis__autoscaling__v1.json",
        "78fc8e44052f",
    ),
    (
        "autoscaling",
        "v2",
        "apis__autoscaling__v2.json",
        "fa7ba8e2f963",
    ),
    ("batch", "v1", "apis__batch__v1.json", "2e0908106e44"),
    (
        "certificates.k8s.io",
        "v1",
        "apis__certificates.k8s.io__v1.json",
        "95f08499d652",
    ),
    (
        "coordination.k8s.io",
        "v1",
        "apis__coordination.k8s.io__v1.json",
        "e0a566e71f69",
    ),
    (
        "discovery.k8s.io",
        "v1",
        "apis__discovery.k8s.io__v1.json",
        "4a0608cb77f6",
    ),
    (
        "events.k8s.io",
        "v1",
        "apis__events.k8s.io__v1.json",
        "31d0821ab4dd",
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "apis__flowcontrol.apiserver.k8s.io__v1.json",
        "f0100b7d510b",
    ),
    (
        "networking.k8s.io",
        "v1",
        "apis__networking.k8s.io__v1.json",
        "95f08499d652",
    ),
    (
        "node.k8s.io",
        "v1",
        "apis__node.k8s.io__v1.json",
        "cb6ff2d8ce35",
    ),
    ("policy", "v1", "apis__policy__v1.json", "fa7ba8e2f963"),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "apis__rbac.authorization.k8s.io__v1.json",
        "025f2834a128",
    ),
    (
        "resource.k8s.io",
        "v1",
        "apis__resource.k8s.io__v1.json",
        "a6420fa0f8da",
    ),
    (
        "scheduling.k8s.io",
        "v1",
        "apis__scheduling.k8s.io__v1.json",
        "78fc8e44052f",
    ),
    (
        "storage.k8s.io",
        "v1",
        "apis__storage.k8s.io__v1.json",
        "96a03f453527",
    ),
];

/// `aggregated_v2.json` at kubernetes/kubernetes 0b1dcaba0a3f: the 1.33 state (resource.k8s.io
/// still has no v1, storage.k8s.io/v1 no volumeattributesclasses). It is used for what did not
/// change by 1.35: the order of the groups, the order of each group's versions, and the
/// aggregated entries of every GA group-version it has; see [`expected_aggregated_apis`].
const AGGREGATED_FIXTURE: &str = "aggregated_v2.json";

fn fixture(file: &str) -> Value {
    let path = format!(
        "{}/../e2e/fixtures/discovery/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

fn path_of(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

fn resources_mut(doc: &mut Value) -> &mut Vec<Value> {
    doc["resources"]
        .as_array_mut()
        .expect("an APIResourceList's resources")
}

/// kube-apiserver 1.35's APIResourceList for group/version: the fixture, adjusted where the
/// stored version is not 1.35's.
fn expected_list(group: &str, version: &str) -> Value {
    let (_, _, file, _) = FIXTURES
        .iter()
        .find(|(g, v, _, _)| *g == group && *v == version)
        .expect("a GA group-version");
    let mut doc = fixture(file);
    match (group, version) {
        // 7c554ea1d91e is the first stored version (1.28's list). Since then upstream added
        // one entry to /api/v1: pods/resize (InPlacePodVerticalScaling: the subresource from
        // 1.32, GA in 1.35), kind Pod, get/patch/update, as any 1.33+ server lists it. (The
        // newest stored version, 4d817e791304, adds pods/checkpoint, which 1.35 does not have.)
        ("", "v1") => {
            let list = resources_mut(&mut doc);
            let at = list
                .iter()
                .position(|r| r["name"] == "pods/status")
                .expect("pods/status in the fixture");
            list.insert(
                at,
                json!({
                    "kind": "Pod",
                    "name": "pods/resize",
                    "namespaced": true,
                    "singularName": "",
                    "verbs": ["get", "patch", "update"]
                }),
            );
        }
        // 121460defea7 is newer than 1.35: MutatingAdmissionPolicy (and its bindings) is
        // beta in 1.35 (admissionregistration.k8s.io/v1beta1, off by default), GA only after
        // it. The older stored version (7c554ea1d91e) predates ValidatingAdmissionPolicy's
        // GA (1.30), which 1.35 has; the rest of this one is 1.35's.
        ("admissionregistration.k8s.io", "v1") => {
            resources_mut(&mut doc).retain(|r| {
                !matches!(
                    r["name"].as_str(),
                    Some("mutatingadmissionpolicies" | "mutatingadmissionpolicybindings")
                )
            });
        }
        _ => {}
    }
    doc
}

/// Upstream's conversion of an APIResourceList's entries into the aggregated form
/// (k8s.io/apiserver's ConvertGroupVersionIntoToDiscovery): one entry per resource, in list
/// order, its subresources (in list order) nested under it with their response kinds.
fn aggregate(list: &Value) -> Value {
    let mut out: Vec<Map<String, Value>> = Vec::new();
    let entries = list["resources"].as_array().cloned().unwrap_or_default();
    let scope = |r: &Value| {
        if r["namespaced"] == true {
            "Namespaced"
        } else {
            "Cluster"
        }
    };
    let kind_of = |r: &Value| {
        json!({
            "group": r.get("group").cloned().unwrap_or(json!("")),
            "version": r.get("version").cloned().unwrap_or(json!("")),
            "kind": r["kind"],
        })
    };
    for r in entries
        .iter()
        .filter(|r| !r["name"].as_str().is_some_and(|name| name.contains('/')))
    {
        let mut entry = Map::new();
        entry.insert("resource".into(), r["name"].clone());
        entry.insert("responseKind".into(), kind_of(r));
        entry.insert("scope".into(), scope(r).into());
        entry.insert("singularResource".into(), r["singularName"].clone());
        entry.insert("verbs".into(), r["verbs"].clone());
        for field in ["shortNames", "categories"] {
            if let Some(value) = r.get(field) {
                entry.insert(field.into(), value.clone());
            }
        }
        out.push(entry);
    }
    for r in &entries {
        let Some((parent, sub)) = r["name"].as_str().and_then(|n| n.split_once('/')) else {
            continue;
        };
        let entry = out
            .iter_mut()
            .find(|e| e["resource"] == parent)
            .unwrap_or_else(|| panic!("{parent}/{sub} without {parent}"));
        let subs = entry
            .entry("subresources")
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .expect("subresources");
        subs.push(json!({
            "subresource": sub,
            "responseKind": kind_of(r),
            "verbs": r["verbs"],
        }));
    }
    Value::Array(out.into_iter().map(Value::Object).collect())
}

/// The GA versions of a group.
fn ga_versions(group: &str) -> Vec<&'static str> {
    FIXTURES
        .iter()
        .filter(|(g, _, _, _)| *g == group)
        .map(|(_, v, _, _)| *v)
        .collect()
}

fn is_ga(group: &str, version: &str) -> bool {
    FIXTURES
        .iter()
        .any(|(g, v, _, _)| *g == group && *v == version)
}

/// An aggregated document restricted to the GA group-versions (groups left without one are
/// dropped), keeping the order of what remains.
fn restricted(doc: &Value) -> Value {
    let mut doc = doc.clone();
    if let Some(items) = doc["items"].as_array_mut() {
        for item in items.iter_mut() {
            let group = item["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if let Some(versions) = item["versions"].as_array_mut() {
                versions.retain(|v| is_ga(&group, v["version"].as_str().unwrap_or_default()));
            }
        }
        items.retain(|item| item["versions"].as_array().is_some_and(|v| !v.is_empty()));
    }
    doc
}

/// 1.35's aggregated `/apis`, restricted to the GA group-versions.
///
/// The group order and each group's version order are the fixture's (upstream orders groups
/// by their APIService priority, then name; no GA group-version was added or reprioritised
/// between 1.33 and 1.35 except as below). Each version's resources are upstream's conversion
/// of that version's 1.35 APIResourceList; for every group-version the 1.33 fixture has, that
/// conversion is first checked to equal the fixture's own entries, so the conversion is
/// upstream's. Two group-versions changed between 1.33 and 1.35, and are adjusted:
/// - storage.k8s.io/v1 gained volumeattributesclasses (VolumeAttributesClass GA in 1.34): the
///   fixture's entries must equal the conversion without it.
/// - resource.k8s.io/v1 is new (dynamic resource allocation GA in 1.34), the group's first
///   and preferred version: its conversion must equal the fixture's v1beta2 entries (the same
///   four resources and subresource), and it is listed first among the group's versions.
fn expected_aggregated_apis(problems: &mut Vec<String>) -> Value {
    let fixture = fixture(AGGREGATED_FIXTURE);
    let mut items = Vec::new();
    for item in fixture["items"].as_array().expect("items") {
        let group = item["metadata"]["name"].as_str().expect("a group's name");
        // The fixture's order of the group's GA versions; a GA version it lacks (only
        // resource.k8s.io/v1) is the group's newest and preferred, so first.
        let listed: Vec<&str> = item["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["version"].as_str())
            .filter(|v| is_ga(group, v))
            .collect();
        let order: Vec<&str> = ga_versions(group)
            .into_iter()
            .filter(|v| !listed.contains(v))
            .chain(listed.iter().copied())
            .collect();
        let mut versions: Vec<Value> = Vec::new();
        for version in order {
            let list = expected_list(group, version);
            let converted = aggregate(&list);
            let upstream = item["versions"]
                .as_array()
                .and_then(|vs| vs.iter().find(|v| v["version"] == version));
            match (group, version, upstream) {
                ("storage.k8s.io", "v1", Some(upstream)) => {
                    let mut without = converted.clone();
                    if let Some(list) = without.as_array_mut() {
                        list.retain(|r| r["resource"] != "volumeattributesclasses");
                    }
                    diff(
                        "aggregated_v2.json storage.k8s.io/v1 against the conversion",
                        &upstream["resources"],
                        &without,
                        problems,
                    );
                }
                ("resource.k8s.io", "v1", None) => {
                    let v1beta2 = item["versions"]
                        .as_array()
                        .and_then(|vs| vs.iter().find(|v| v["version"] == "v1beta2"))
                        .expect("resource.k8s.io/v1beta2 in aggregated_v2.json");
                    diff(
                        "aggregated_v2.json resource.k8s.io/v1beta2 against v1's conversion",
                        &v1beta2["resources"],
                        &converted,
                        problems,
                    );
                }
                (_, _, Some(upstream)) => diff(
                    &format!("aggregated_v2.json {group}/{version} against the conversion"),
                    &upstream["resources"],
                    &converted,
                    problems,
                ),
                (_, _, None) => problems.push(format!(
                    "{group}/{version} is not in aggregated_v2.json and has no adjustment"
                )),
            }
            versions.push(json!({
                "freshness": "Current",
                "resources": converted,
                "version": version,
            }));
        }
        if !versions.is_empty() {
            items.push(json!({"metadata": {"name": group}, "versions": versions}));
        }
    }
    json!({
        "apiVersion": fixture["apiVersion"],
        "items": items,
        "kind": fixture["kind"],
        "metadata": fixture["metadata"],
    })
}

/// 1.35's aggregated `/api`: the core group alone, its one version's resources converted from
/// 1.35's `/api/v1` (aggregated_v2.json holds the named groups only). The core group's
/// metadata has no name.
fn expected_aggregated_api() -> Value {
    let fixture = fixture(AGGREGATED_FIXTURE);
    json!({
        "apiVersion": fixture["apiVersion"],
        "items": [{
            "metadata": {},
            "versions": [{
                "freshness": "Current",
                "resources": aggregate(&expected_list("", "v1")),
                "version": "v1",
            }],
        }],
        "kind": fixture["kind"],
        "metadata": fixture["metadata"],
    })
}

/// The key an array element is matched by, for arrays of named things.
fn key_of(value: &Value) -> Option<String> {
    ["name", "resource", "subresource", "version"]
        .iter()
        .find_map(|k| value.get(*k).and_then(Value::as_str))
        .or_else(|| value.get("metadata")?.get("name")?.as_str())
        .map(str::to_string)
}

/// Readable differences between `expected` and `served`, one line each, under `path`.
fn diff(path: &str, expected: &Value, served: &Value, out: &mut Vec<String>) {
    match (expected, served) {
        (Value::Object(e), Value::Object(s)) => {
            let keys: BTreeSet<&String> = e.keys().chain(s.keys()).collect();
            for key in keys {
                let at = format!("{path}.{key}");
                match (e.get(key), s.get(key)) {
                    (Some(ev), Some(sv)) => diff(&at, ev, sv, out),
                    (Some(ev), None) => out.push(format!("{at}: missing, upstream has {ev}")),
                    (None, Some(sv)) => out.push(format!("{at}: extra {sv}, upstream has none")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(e), Value::Array(s))
            if e.iter().chain(s).all(|v| key_of(v).is_some()) && !e.is_empty() =>
        {
            let e_keys: Vec<String> = e.iter().filter_map(key_of).collect();
            let s_keys: Vec<String> = s.iter().filter_map(key_of).collect();
            for (key, ev) in e_keys.iter().zip(e) {
                match s_keys.iter().position(|k| k == key) {
                    Some(i) => diff(&format!("{path}[{key}]"), ev, &s[i], out),
                    None => out.push(format!("{path}: missing {key}: {ev}")),
                }
            }
            for (key, sv) in s_keys.iter().zip(s) {
                if !e_keys.contains(key) {
                    out.push(format!("{path}: extra {key}: {sv}"));
                }
            }
            let common_e: Vec<&String> = e_keys.iter().filter(|k| s_keys.contains(k)).collect();
            let common_s: Vec<&String> = s_keys.iter().filter(|k| e_keys.contains(k)).collect();
            if common_e != common_s {
                out.push(format!(
                    "{path}: order differs: upstream {common_e:?}, served {common_s:?}"
                ));
            }
        }
        _ if expected != served => {
            out.push(format!("{path}: upstream {expected}, served {served}"))
        }
        _ => {}
    }
}

fn served_json(s: &Server, path: &str, accept: Option<&str>) -> Value {
    let headers: Vec<(&str, &str)> = accept.map(|a| ("Accept", a)).into_iter().collect();
    let resp = s.request("GET", path, &headers, b"");
    assert_eq!(resp.status, 200, "GET {path}: {}", resp.body);
    if accept.is_some() {
        assert!(
            resp.headers.to_ascii_lowercase().contains(
                "content-type: application/json;g=apidiscovery.k8s.io;v=v2;as=apigroupdiscoverylist"
            ),
            "GET {path} (aggregated): {}",
            resp.headers
        );
    }
    resp.json()
}

fn report(problems: Vec<String>) {
    assert!(
        problems.is_empty(),
        "discovery differs from kube-apiserver 1.35's ({} differences):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

fn resource_lists_equal_upstream(s: &Server) {
    let mut problems = Vec::new();
    for (group, version, _, _) in FIXTURES {
        let path = path_of(group, version);
        let served = served_json(s, &path, None);
        let expected = expected_list(group, version);
        diff(&path, &expected, &served, &mut problems);
    }
    report(problems);
}

fn aggregated_equals_upstream(s: &Server) {
    let mut problems = Vec::new();

    let expected = expected_aggregated_apis(&mut problems);
    let upstream_order: Vec<String> = expected["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    let served = restricted(&served_json(s, "/apis", Some(AGGREGATED_ACCEPT)));
    diff("aggregated /apis", &expected, &served, &mut problems);

    let expected = expected_aggregated_api();
    let served = served_json(s, "/api", Some(AGGREGATED_ACCEPT));
    diff("aggregated /api", &expected, &served, &mut problems);

    // The unaggregated /apis (APIGroupList) lists the groups in the same order.
    let served_order: Vec<String> = served_json(s, "/apis", None)["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["name"].as_str().map(str::to_string))
        .filter(|g| !ga_versions(g).is_empty())
        .collect();
    if served_order != upstream_order {
        problems.push(format!(
            "/apis: group order differs: upstream {upstream_order:?}, served {served_order:?}"
        ));
    }
    report(problems);
}

#[test]
fn resource_lists_equal_kube_apiserver_1_35() {
    resource_lists_equal_upstream(&start());
}

/// Discovery does not depend on the storage; the same on etcd, once.
#[test]
fn resource_lists_equal_kube_apiserver_1_35_on_etcd() {
    resource_lists_equal_upstream(&start_on_etcd());
}

#[test]
fn aggregated_discovery_equals_kube_apiserver_1_35() {
    aggregated_equals_upstream(&start());
}

/// The fixtures' own consistency, without a server: the adjusted lists keep upstream's order
/// (sorted by name, as upstream's installer registers them) and every aggregated group-version
/// of the fixture is reproduced by the conversion.
#[test]
fn fixtures_are_consistent() {
    let mut problems = Vec::new();
    for (group, version, _, _) in FIXTURES {
        let list = expected_list(group, version);
        assert_eq!(list["groupVersion"], group_version(group, version));
        let names: Vec<&str> = list["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "{group}/{version}");
    }
    let apis = expected_aggregated_apis(&mut problems);
    report(problems);
    let groups = apis["items"].as_array().expect("items").len();
    let listed: BTreeSet<&str> = FIXTURES
        .iter()
        .map(|(g, _, _, _)| *g)
        .filter(|g| !g.is_empty())
        .collect();
    assert_eq!(groups, listed.len(), "every GA group in aggregated_v2.json");
}
