//! `/openapi/v3`: the index and the per-group-version documents.

mod common;

use common::{json, openapi};
use serde_json::{json, Value};

fn document(path: &str) -> Value {
    let api = openapi();
    let document = api.v3_group_version(path).expect("served group-version");
    json(document.bytes())
}

fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc.pointer(&format!("/components/schemas/{}", name.replace('/', "~1")))
        .unwrap_or_else(|| panic!("{name} is in the document"))
}

/// Every operation of a document, with its path and method.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            if method != "parameters" {
                out.push((path.clone(), method.clone(), op.clone()));
            }
        }
    }
    out
}

#[test]
fn index_lists_every_group_version_with_its_hash() {
    let api = openapi();
    let index = json(api.v3_index().bytes());
    let paths = index["paths"].as_object().expect("paths");
    let mut names: Vec<&str> = paths.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "api/v1",
            "apis/apiextensions.k8s.io/v1",
            "apis/apps/v1",
            "apis/batch/v1",
            "apis/rbac.authorization.k8s.io/v1"
        ]
    );
    for (path, entry) in paths {
        let document = api.v3_group_version(path).expect("listed means served");
        assert_eq!(
            entry["serverRelativeURL"],
            format!("/openapi/v3/{path}?hash={}", document.hash())
        );
        assert_eq!(document.hash().len(), 128);
        assert!(document
            .hash()
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));
    }
}

#[test]
fn documents_are_stable_and_answer_if_none_match() {
    let first = openapi().v3_group_version("apis/apps/v1").expect("apps");
    let again = openapi().v3_group_version("/apis/apps/v1/").expect("apps");
    assert_eq!(first.hash(), again.hash());
    assert_eq!(first.bytes(), again.bytes());
    assert!(again.matches(&first.etag()));
    assert_eq!(openapi().v3_index().hash(), openapi().v3_index().hash());
}

#[test]
fn unknown_paths_have_no_document() {
    let api = openapi();
    for path in [
        "apis/apps",
        "apis/apps/v2",
        "api/v2",
        "apis/policy/v1",
        "",
        "apis/a/b/c",
    ] {
        assert!(api.v3_group_version(path).is_none(), "{path}");
    }
}

#[test]
fn kinds_carry_upstream_names_and_group_version_kind() {
    let core = document("api/v1");
    assert_eq!(core["openapi"], "3.0.0");
    assert_eq!(core["info"]["version"], "v1.32.0");
    let pod = schema(&core, "io.k8s.api.core.v1.Pod");
    assert_eq!(
        pod["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "Pod", "version": "v1"}])
    );
    assert!(pod["description"]
        .as_str()
        .is_some_and(|d| d.contains("containers")));
    assert_eq!(
        pod["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert!(
        pod.get("required").is_none(),
        "metadata is optional upstream"
    );
    let config_map = schema(&core, "io.k8s.api.core.v1.ConfigMap");
    assert_eq!(config_map["properties"]["data"]["type"], "object");
    let list = schema(&core, "io.k8s.api.core.v1.PodList");
    assert_eq!(list["description"], "PodList is a list of Pods.");
    assert_eq!(
        list["properties"]["items"]["items"]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.Pod"
    );
    assert_eq!(
        list["x-kubernetes-group-version-kind"][0]["kind"],
        "PodList"
    );
    schema(&core, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    schema(&core, "io.k8s.apimachinery.pkg.apis.meta.v1.Status");

    let apps = document("apis/apps/v1");
    let deployment = schema(&apps, "io.k8s.api.apps.v1.Deployment");
    assert_eq!(
        deployment["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
    );
    schema(&apps, "io.k8s.api.apps.v1.DeploymentList");
    schema(&apps, "io.k8s.api.autoscaling.v1.Scale");
    // Only what the group-version uses.
    assert!(apps["components"]["schemas"]
        .get("io.k8s.api.core.v1.ConfigMap")
        .is_none());
}

#[test]
fn extensions_for_patches_lists_and_maps() {
    let core = document("api/v1");
    let spec = schema(&core, "io.k8s.api.core.v1.PodSpec");
    let containers = &spec["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-list-type"], "map");
    assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
    assert_eq!(
        spec["properties"]["volumes"]["x-kubernetes-patch-strategy"],
        "merge,retainKeys"
    );
    assert_eq!(
        spec["properties"]["nodeSelector"]["x-kubernetes-map-type"],
        "atomic"
    );

    let ports = &schema(&core, "io.k8s.api.core.v1.Container")["properties"]["ports"];
    assert_eq!(ports["x-kubernetes-patch-merge-key"], "containerPort");
    assert_eq!(
        ports["x-kubernetes-list-map-keys"],
        json!(["containerPort", "protocol"])
    );

    let meta = schema(&core, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    assert_eq!(
        meta["properties"]["finalizers"]["x-kubernetes-list-type"],
        "set"
    );
    assert_eq!(
        meta["properties"]["ownerReferences"]["x-kubernetes-patch-merge-key"],
        "uid"
    );
    // A struct marked atomic is replaced whole by a merge.
    let apps = document("apis/apps/v1");
    let selector = schema(&apps, "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector");
    assert_eq!(selector["x-kubernetes-map-type"], "atomic");
    let int_or_string = schema(&apps, "io.k8s.apimachinery.pkg.util.intstr.IntOrString");
    assert_eq!(int_or_string["format"], "int-or-string");
    assert_eq!(int_or_string["x-kubernetes-int-or-string"], true);
}

#[test]
fn operations_follow_upstream_ids_and_actions() {
    let core = document("api/v1");
    let ops = operations(&core);
    let find = |path: &str, method: &str| {
        ops.iter()
            .find(|(p, m, _)| p == path && m == method)
            .map(|(_, _, op)| op.clone())
            .unwrap_or_else(|| panic!("{method} {path}"))
    };
    let pods = "/api/v1/namespaces/{namespace}/pods";
    let pod = "/api/v1/namespaces/{namespace}/pods/{name}";
    let expected = [
        (pods, "get", "listCoreV1NamespacedPod", "list"),
        (pods, "post", "createCoreV1NamespacedPod", "post"),
        (
            pods,
            "delete",
            "deleteCoreV1CollectionNamespacedPod",
            "deletecollection",
        ),
        (pod, "get", "readCoreV1NamespacedPod", "get"),
        (pod, "put", "replaceCoreV1NamespacedPod", "put"),
        (pod, "patch", "patchCoreV1NamespacedPod", "patch"),
        (pod, "delete", "deleteCoreV1NamespacedPod", "delete"),
        (
            "/api/v1/pods",
            "get",
            "listCoreV1PodForAllNamespaces",
            "list",
        ),
        (
            "/api/v1/watch/namespaces/{namespace}/pods",
            "get",
            "watchCoreV1NamespacedPodList",
            "watchlist",
        ),
        (
            "/api/v1/namespaces/{namespace}/pods/{name}/status",
            "patch",
            "patchCoreV1NamespacedPodStatus",
            "patch",
        ),
        (
            "/api/v1/namespaces/{namespace}/pods/{name}/eviction",
            "post",
            "createCoreV1NamespacedPodEviction",
            "post",
        ),
        (
            "/api/v1/namespaces/{name}/finalize",
            "put",
            "replaceCoreV1NamespaceFinalize",
            "put",
        ),
        ("/api/v1/namespaces", "get", "listCoreV1Namespace", "list"),
    ];
    for (path, method, id, action) in expected {
        let op = find(path, method);
        assert_eq!(op["operationId"], id);
        assert_eq!(op["x-kubernetes-action"], action);
        assert_eq!(op["tags"], json!(["core_v1"]));
    }
    assert_eq!(
        find(pod, "get")["x-kubernetes-group-version-kind"],
        json!({"group": "", "kind": "Pod", "version": "v1"})
    );
    assert_eq!(
        find(pods, "get")["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.PodList"
    );
    let eviction = find(
        "/api/v1/namespaces/{namespace}/pods/{name}/eviction",
        "post",
    );
    assert_eq!(
        eviction["x-kubernetes-group-version-kind"]["kind"],
        "Eviction"
    );

    let apps = document("apis/apps/v1");
    let scale = operations(&apps)
        .into_iter()
        .find(|(p, m, _)| p.ends_with("deployments/{name}/scale") && m == "patch")
        .expect("scale patch");
    assert_eq!(
        scale.2["operationId"],
        "patchAppsV1NamespacedDeploymentScale"
    );
    assert_eq!(
        scale.2["x-kubernetes-group-version-kind"],
        json!({"group": "autoscaling", "kind": "Scale", "version": "v1"})
    );
    let rbac = document("apis/rbac.authorization.k8s.io/v1");
    assert!(operations(&rbac)
        .iter()
        .any(|(_, _, op)| op["operationId"] == "listRbacAuthorizationV1ClusterRole"));
}

/// kubectl sends fieldValidation (server-side validation) only when the PATCH operation of
/// the object's kind lists it as a query parameter.
#[test]
fn writes_take_field_validation_dry_run_and_field_manager() {
    for path in ["api/v1", "apis/apps/v1", "apis/batch/v1"] {
        let doc = document(path);
        let mut writes = 0;
        for (p, method, op) in operations(&doc) {
            // Connect operations (exec, proxy) pass the request on: no write options.
            if !matches!(method.as_str(), "post" | "put" | "patch")
                || op["x-kubernetes-action"] == "connect"
            {
                continue;
            }
            writes += 1;
            let names: Vec<&str> = op["parameters"]
                .as_array()
                .unwrap_or_else(|| panic!("{method} {p} has parameters"))
                .iter()
                .filter(|param| param["in"] == "query")
                .filter_map(|param| param["name"].as_str())
                .collect();
            for name in ["fieldValidation", "dryRun", "fieldManager"] {
                assert!(names.contains(&name), "{method} {p} lacks {name}");
            }
        }
        assert!(writes > 0);
    }
    let apps = document("apis/apps/v1");
    let patches_deployments = operations(&apps).into_iter().any(|(_, m, op)| {
        m == "patch"
            && op["x-kubernetes-group-version-kind"]
                == json!({"group": "apps", "kind": "Deployment", "version": "v1"})
    });
    assert!(patches_deployments);
}

#[test]
fn every_reference_resolves_inside_the_document() {
    for path in ["api/v1", "apis/apps/v1", "apis/apiextensions.k8s.io/v1"] {
        let doc = document(path);
        let schemas = doc["components"]["schemas"].as_object().expect("schemas");
        let mut refs = Vec::new();
        collect_refs(&doc, &mut refs);
        assert!(!refs.is_empty());
        for r in refs {
            let name = r
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("{r} is a v3 reference"));
            assert!(schemas.contains_key(name), "{path}: {name} is missing");
        }
    }
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                out.push(r.clone());
                // OpenAPI v3 ignores a reference's siblings: upstream wraps them in allOf.
                assert_eq!(map.len(), 1, "a $ref has siblings: {map:?}");
            }
            map.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// A connect operation answers a string in any media type and takes no body; its options
/// are the path's query parameters.
#[test]
fn connect_operations_answer_strings() {
    let doc = document("api/v1");
    let exec = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/exec"];
    let post = &exec["post"];
    assert_eq!(post["operationId"], "connectCoreV1PostNamespacedPodExec");
    assert_eq!(
        post["responses"]["200"],
        json!({"description": "OK", "content": {"*/*": {"schema": {"type": "string"}}}})
    );
    assert!(post.get("requestBody").is_none());
    let command = exec["parameters"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "command"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(command["in"], "query");
    assert_eq!(
        command["schema"],
        json!({"type": "string", "uniqueItems": true})
    );
    let with_path = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}"];
    assert_eq!(
        with_path["options"]["operationId"],
        "connectCoreV1OptionsNamespacedPodProxyWithPath"
    );
}
