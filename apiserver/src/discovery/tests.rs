use std::sync::Arc;

use registry::{Catalogue, ResourceInfo};
use serde_json::{json, Value};

use super::*;

const KUBECTL_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

fn builtin() -> Vec<Arc<ResourceInfo>> {
    Catalogue::builtin().all().as_ref().clone()
}

fn named<'a>(list: &'a Value, field: &str, name: &str) -> &'a Value {
    list.as_array()
        .and_then(|items| items.iter().find(|item| item[field] == name))
        .unwrap_or_else(|| panic!("no {field} {name} in {list}"))
}

fn names(list: &Value, field: &str) -> Vec<String> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item[field].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// A custom resource in a group of its own, served at `version`.
fn widget(version: &str) -> Arc<ResourceInfo> {
    let mut info = builtin()
        .into_iter()
        .find(|r| r.plural == "leases")
        .map(|r| r.as_ref().clone())
        .expect("leases are built in");
    info.group = "example.com".to_string();
    info.version = version.to_string();
    info.kind = "Widget".to_string();
    info.plural = "widgets".to_string();
    info.singular = "widget".to_string();
    info.subresources = vec![registry::catalogue::SubresourceInfo::status()];
    Arc::new(info)
}

#[test]
fn core_versions_lists_v1() {
    assert_eq!(
        core_versions(),
        json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
        })
    );
}

#[test]
fn api_groups_lists_every_named_group_in_priority_order() {
    let doc = api_groups(&builtin());
    assert_eq!(doc["kind"], "APIGroupList");
    assert_eq!(doc["apiVersion"], "v1");
    assert_eq!(
        names(&doc["groups"], "name"),
        [
            "apiregistration.k8s.io",
            "apps",
            "events.k8s.io",
            "authentication.k8s.io",
            "authorization.k8s.io",
            "autoscaling",
            "batch",
            "certificates.k8s.io",
            "networking.k8s.io",
            "policy",
            "rbac.authorization.k8s.io",
            "storage.k8s.io",
            "admissionregistration.k8s.io",
            "apiextensions.k8s.io",
            "scheduling.k8s.io",
            "coordination.k8s.io",
            "node.k8s.io",
            // resource.k8s.io shares discovery.k8s.io's priority (16200), as upstream.
            "discovery.k8s.io",
            "resource.k8s.io",
            "flowcontrol.apiserver.k8s.io",
        ]
    );
    assert_eq!(
        named(&doc["groups"], "name", "apps"),
        &json!({
            "name": "apps",
            "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
            "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"},
        })
    );
}

#[test]
fn custom_groups_follow_built_in_ones_and_prefer_ga() {
    let mut resources = builtin();
    resources.push(widget("v2beta1"));
    resources.push(widget("v1"));
    let doc = api_groups(&resources);
    assert_eq!(
        names(&doc["groups"], "name").last().map(String::as_str),
        Some("example.com")
    );
    let group = named(&doc["groups"], "name", "example.com");
    assert_eq!(names(&group["versions"], "version"), ["v1", "v2beta1"]);
    assert_eq!(group["preferredVersion"]["groupVersion"], "example.com/v1");
}

#[test]
fn api_group_describes_one_group() {
    let resources = builtin();
    assert_eq!(
        api_group(&resources, "batch"),
        Some(json!({
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": "batch",
            "versions": [{"groupVersion": "batch/v1", "version": "v1"}],
            "preferredVersion": {"groupVersion": "batch/v1", "version": "v1"},
        }))
    );
    assert_eq!(api_group(&resources, "nothing.example.com"), None);
    assert_eq!(api_group(&resources, ""), None);
}

#[test]
fn core_resource_list() {
    let doc = resource_list(&builtin(), "", "v1").expect("core v1 is served");
    assert_eq!(doc["kind"], "APIResourceList");
    assert_eq!(doc["groupVersion"], "v1");
    // Upstream's core list has no apiVersion.
    assert!(doc.get("apiVersion").is_none());

    let resources = &doc["resources"];
    let pods = named(resources, "name", "pods");
    assert_eq!(pods["singularName"], "pod");
    assert_eq!(pods["namespaced"], true);
    assert_eq!(pods["kind"], "Pod");
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert_eq!(pods["categories"], json!(["all"]));
    assert_eq!(pods["storageVersionHash"], "xPOwRZ+Yhw8=");
    let verbs = pods["verbs"].as_array().expect("verbs");
    assert!(verbs.contains(&json!("watch")));
    assert!(verbs.contains(&json!("deletecollection")));

    assert_eq!(
        named(resources, "name", "pods/status"),
        &json!({
            "name": "pods/status",
            "singularName": "",
            "namespaced": true,
            "kind": "Pod",
            "verbs": ["get", "patch", "update"],
        })
    );
    assert_eq!(
        named(resources, "name", "namespaces/finalize"),
        &json!({
            "name": "namespaces/finalize",
            "singularName": "",
            "namespaced": false,
            "kind": "Namespace",
            "verbs": ["update"],
        })
    );
    let rc_scale = named(resources, "name", "replicationcontrollers/scale");
    assert_eq!(rc_scale["group"], "autoscaling");
    assert_eq!(rc_scale["kind"], "Scale");

    // Empty lists are left out.
    let secrets = named(resources, "name", "secrets");
    assert!(secrets.get("shortNames").is_none());
    assert!(secrets.get("categories").is_none());

    let all = names(resources, "name");
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(all, sorted);
}

#[test]
fn apps_resource_list_has_scale_from_autoscaling() {
    let doc = resource_list(&builtin(), "apps", "v1").expect("apps/v1 is served");
    assert_eq!(doc["apiVersion"], "v1");
    assert_eq!(doc["groupVersion"], "apps/v1");
    assert_eq!(
        named(&doc["resources"], "name", "deployments/scale"),
        &json!({
            "name": "deployments/scale",
            "singularName": "",
            "namespaced": true,
            "group": "autoscaling",
            "version": "v1",
            "kind": "Scale",
            "verbs": ["get", "patch", "update"],
        })
    );
    assert_eq!(
        named(&doc["resources"], "name", "deployments")["storageVersionHash"],
        "8aSe+NMegvE="
    );
}

#[test]
fn unserved_group_versions_have_no_list() {
    let resources = builtin();
    assert_eq!(resource_list(&resources, "", "v2"), None);
    assert_eq!(resource_list(&resources, "apps", "v1beta1"), None);
    assert_eq!(resource_list(&resources, "nothing.example.com", "v1"), None);
}

#[test]
fn aggregated_core_group() {
    let doc = aggregated(&builtin(), true, "v2");
    assert_eq!(doc["kind"], "APIGroupDiscoveryList");
    assert_eq!(doc["apiVersion"], "apidiscovery.k8s.io/v2");
    let items = doc["items"].as_array().expect("items");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["metadata"], json!({}));
    let versions = items[0]["versions"].as_array().expect("versions");
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0]["version"], "v1");
    assert_eq!(versions[0]["freshness"], "Current");
    assert_eq!(
        named(&versions[0]["resources"], "resource", "pods"),
        &json!({
            "resource": "pods",
            "responseKind": {"group": "", "version": "", "kind": "Pod"},
            "scope": "Namespaced",
            "singularResource": "pod",
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": ["po"],
            "categories": ["all"],
            "subresources": [
                {
                    "subresource": "attach",
                    "responseKind": {"group": "", "version": "", "kind": "PodAttachOptions"},
                    "verbs": ["create", "get"],
                },
                {
                    "subresource": "binding",
                    "responseKind": {"group": "", "version": "", "kind": "Binding"},
                    "verbs": ["create"],
                },
                {
                    "subresource": "ephemeralcontainers",
                    "responseKind": {"group": "", "version": "", "kind": "Pod"},
                    "verbs": ["get", "patch", "update"],
                },
                {
                    "subresource": "eviction",
                    "responseKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
                    "verbs": ["create"],
                },
                {
                    "subresource": "exec",
                    "responseKind": {"group": "", "version": "", "kind": "PodExecOptions"},
                    "verbs": ["create", "get"],
                },
                {
                    "subresource": "log",
                    "responseKind": {"group": "", "version": "", "kind": "Pod"},
                    "verbs": ["get"],
                },
                {
                    "subresource": "portforward",
                    "responseKind": {"group": "", "version": "", "kind": "PodPortForwardOptions"},
                    "verbs": ["create", "get"],
                },
                {
                    "subresource": "proxy",
                    "responseKind": {"group": "", "version": "", "kind": "PodProxyOptions"},
                    "verbs": ["create", "delete", "get", "patch", "update"],
                },
                {
                    "subresource": "resize",
                    "responseKind": {"group": "", "version": "", "kind": "Pod"},
                    "verbs": ["get", "patch", "update"],
                },
                {
                    "subresource": "status",
                    "responseKind": {"group": "", "version": "", "kind": "Pod"},
                    "verbs": ["get", "patch", "update"],
                },
            ],
        })
    );
    let nodes = named(&versions[0]["resources"], "resource", "nodes");
    assert_eq!(nodes["scope"], "Cluster");
}

#[test]
fn aggregated_named_groups() {
    let resources = builtin();
    let doc = aggregated(&resources, false, "v2beta1");
    assert_eq!(doc["apiVersion"], "apidiscovery.k8s.io/v2beta1");
    let items = &doc["items"];
    let item_names = test_support::names(&doc);
    assert_eq!(item_names, names(&api_groups(&resources)["groups"], "name"));

    let apps = items
        .as_array()
        .and_then(|items| items.iter().find(|i| i["metadata"]["name"] == "apps"))
        .expect("apps group");
    let deployments = named(&apps["versions"][0]["resources"], "resource", "deployments");
    assert_eq!(
        deployments["subresources"],
        json!([
            {
                "subresource": "scale",
                "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "verbs": ["get", "patch", "update"],
            },
            {
                "subresource": "status",
                "responseKind": {"group": "", "version": "", "kind": "Deployment"},
                "verbs": ["get", "patch", "update"],
            },
        ])
    );
    // No subresources: the field is left out.
    let controllerrevisions = named(
        &apps["versions"][0]["resources"],
        "resource",
        "controllerrevisions",
    );
    assert!(controllerrevisions.get("subresources").is_none());
}

#[test]
fn accept_selects_aggregated_version() {
    assert_eq!(wants_aggregated(KUBECTL_ACCEPT), Some(json_doc("v2")));
    assert_eq!(
        wants_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
        ),
        Some(json_doc("v2beta1"))
    );
    // Parameters in any order, with spaces.
    assert_eq!(
        wants_aggregated(
            "application/json; as=APIGroupDiscoveryList; v=v2 ; g=apidiscovery.k8s.io, application/json"
        ),
        Some(json_doc("v2"))
    );
    // A version this server does not serve falls through to the next range.
    assert_eq!(
        wants_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        ),
        Some(json_doc("v2beta1"))
    );
    // Protobuf first, as upstream offers it too.
    assert_eq!(
        wants_aggregated(
            "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
        ),
        Some(Aggregated {
            version: "v2",
            encoding: Encoding::Protobuf
        })
    );
    // A plain protobuf or YAML range first means the per-version documents.
    for plain in ["application/vnd.kubernetes.protobuf", "application/yaml"] {
        assert_eq!(
            wants_aggregated(&format!(
                "{plain},application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            )),
            None
        );
    }
    // A type no serializer has is passed over.
    assert_eq!(
        wants_aggregated(
            "text/html;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ),
        Some(json_doc("v2"))
    );
}

#[test]
fn accept_plain_json_first_or_alone_is_not_aggregated() {
    assert_eq!(wants_aggregated(""), None);
    assert_eq!(wants_aggregated("application/json"), None);
    assert_eq!(wants_aggregated("application/json, */*"), None);
    assert_eq!(wants_aggregated("*/*"), None);
    assert_eq!(
        wants_aggregated(
            "application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ),
        None
    );
    // Some other conversion is not discovery's to give.
    assert_eq!(
        wants_aggregated("application/json;as=Table;v=v1;g=meta.k8s.io"),
        None
    );
}

#[test]
fn accept_honours_q_values_and_wildcards() {
    assert_eq!(
        wants_aggregated(
            "application/json;q=0.5,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ),
        Some(json_doc("v2"))
    );
    assert_eq!(
        wants_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0,application/json"
        ),
        None
    );
    // At equal q the concrete type goes before the wildcard.
    assert_eq!(
        wants_aggregated(
            "*/*,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ),
        Some(json_doc("v2"))
    );
}

#[test]
fn content_type_names_the_aggregated_kind() {
    assert_eq!(
        json_doc("v2").content_type(),
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    let protobuf = Aggregated {
        version: "v2beta1",
        encoding: Encoding::Protobuf,
    };
    assert_eq!(
        protobuf.content_type(),
        "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
    );
}

fn json_doc(version: &'static str) -> Aggregated {
    Aggregated {
        version,
        encoding: Encoding::Json,
    }
}

#[test]
fn versions_sort_by_kubernetes_priority() {
    let mut versions = vec![
        "foo10",
        "v1",
        "v11alpha2",
        "v10beta3",
        "v12alpha1",
        "v2",
        "foo1",
        "v3beta1",
        "v10",
        "v11beta2",
    ];
    versions.sort_by(|a, b| compare_versions(a, b));
    assert_eq!(
        versions,
        [
            "v10",
            "v2",
            "v1",
            "v11beta2",
            "v10beta3",
            "v3beta1",
            "v12alpha1",
            "v11alpha2",
            "foo1",
            "foo10",
        ]
    );
}

#[test]
fn storage_version_hash_matches_upstream() {
    assert_eq!(storage_version_hash("", "v1", "Pod"), "xPOwRZ+Yhw8=");
    assert_eq!(storage_version_hash("", "v1", "Event"), "r2yiGXH7wu8=");
    assert_eq!(
        storage_version_hash("coordination.k8s.io", "v1", "Lease"),
        "gqkMMb/YqFM="
    );
}

/// The hash is the storage version's: HPAs are stored as autoscaling/v2 (at v1 too),
/// events.k8s.io Events as core Events, CRDs and EndpointSlices as v1beta1; what stores
/// nothing (reviews, bindings, componentstatuses) has none, as upstream's fixtures show.
#[test]
fn storage_version_hash_is_the_storage_versions() {
    let resources = builtin();
    let hash = |group: &str, version: &str, plural: &str| {
        let doc = resource_list(&resources, group, version).expect("served");
        named(&doc["resources"], "name", plural)
            .get("storageVersionHash")
            .cloned()
    };
    assert_eq!(
        hash("autoscaling", "v1", "horizontalpodautoscalers"),
        Some(json!("qwQve8ut294="))
    );
    assert_eq!(
        hash("autoscaling", "v2", "horizontalpodautoscalers"),
        Some(json!("qwQve8ut294="))
    );
    assert_eq!(
        hash("events.k8s.io", "v1", "events"),
        Some(json!("r2yiGXH7wu8="))
    );
    assert_eq!(
        hash("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
        Some(json!("jfWCUB31mvA="))
    );
    assert_eq!(
        hash("discovery.k8s.io", "v1", "endpointslices"),
        Some(json!("Nx3SIv6I0mE="))
    );
    for (group, plural) in [
        ("", "bindings"),
        ("", "componentstatuses"),
        ("authentication.k8s.io", "tokenreviews"),
        ("authorization.k8s.io", "subjectaccessreviews"),
    ] {
        assert_eq!(hash(group, "v1", plural), None, "{group}/{plural}");
    }
}
