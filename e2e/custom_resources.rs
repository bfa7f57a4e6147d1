//! CustomResourceDefinitions through the real binary, with the real kubectl and plain HTTP:
//! a definition applied and established, its resources served with discovery, OpenAPI
//! (`kubectl explain`), printer columns, validation, defaults and pruning, the status and
//! scale subresources; custom resources in garbage collection and namespace deletion; and
//! deleting the definition removing its resources and routes.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{start, start_on_etcd, start_with_args, Kubectl, Server};
use test_support::{wait_until, EtcdServer};

const CRD: &str = "crontabs.stable.example.com";
const CRONTABS: &str = "/apis/stable.example.com/v1/namespaces/default/crontabs";

const DEFINITION: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.labelSelector
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the cron job runs, and when.
            required: [cronSpec]
            properties:
              cronSpec:
                type: string
                description: The schedule, in cron format.
                pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
              image:
                type: string
              replicas:
                type: integer
                minimum: 1
                maximum: 10
                default: 1
              mode:
                type: string
                enum: [Fast, Slow]
                default: Slow
              extra:
                type: object
                x-kubernetes-preserve-unknown-fields: true
          status:
            type: object
            properties:
              replicas:
                type: integer
              labelSelector:
                type: string
"#;

fn crontab(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: {name}\nspec:\n  cronSpec: '* * * * */5'\n  image: my-cron-image\n{extra}"
    )
}

fn established(s: &Server) {
    s.with_manifest("apply", DEFINITION);
    s.kubectl(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/{CRD}"),
        "--timeout=30s",
    ]);
}

fn stored(s: &Server, name: &str) -> Value {
    let r = s.get(&format!("{CRONTABS}/{name}"));
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

#[test]
fn custom_resources_with_kubectl() {
    lifecycle(&start());
}

#[test]
fn custom_resources_with_kubectl_on_etcd() {
    lifecycle(&start_on_etcd());
}

fn lifecycle(s: &Server) {
    established(s);
    let crd = s.json(&["get", "crd", CRD]);
    let conditions = crd["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for kind in ["NamesAccepted", "Established"] {
        assert!(
            conditions
                .iter()
                .any(|c| c["type"] == kind && c["status"] == "True"),
            "{kind} missing: {conditions:?}"
        );
    }
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "CronTab");
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    // The cleanup finalizer comes with the first delete, as upstream.
    assert!(crd["metadata"].get("finalizers").is_none(), "{crd}");

    // Discovery and OpenAPI follow at once.
    let resources = s.kubectl(&["api-resources", "--api-group=stable.example.com"]);
    assert!(
        resources
            .lines()
            .any(|l| l.starts_with("crontabs") && l.contains(" ct ") && l.contains("CronTab")),
        "{resources}"
    );
    let explained = s.kubectl(&["explain", "crontab.spec"]);
    assert!(explained.contains("KIND:       CronTab"), "{explained}");
    assert!(explained.contains("cronSpec"), "{explained}");
    assert!(
        explained.contains("The schedule, in cron format."),
        "{explained}"
    );

    // Unknown fields are refused by kubectl's default (Strict), naming the field.
    let refused = s.manifest_output(&["apply", "-f", "-"], &crontab("bogus", "  bogus: 1\n"));
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains(r#"unknown field "spec.bogus""#), "{err}");

    // Without validation the field is pruned; defaults fill what was left out.
    let out = s.manifest_output(
        &["apply", "--validate=false", "-f", "-"],
        &crontab("pruned", "  bogus: 1\n  extra:\n    anything: [1, 2]\n"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let obj = stored(s, "pruned");
    assert!(obj["spec"].get("bogus").is_none(), "{obj}");
    assert_eq!(obj["spec"]["replicas"], 1, "{obj}");
    assert_eq!(obj["spec"]["mode"], "Slow", "{obj}");
    assert_eq!(obj["spec"]["extra"]["anything"], json!([1, 2]), "{obj}");

    // Schema violations are 422 Invalid naming the field.
    let bad = s.manifest_output(&["apply", "-f", "-"], &crontab("bad", "  replicas: 20\n"));
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("spec.replicas"), "{err}");
    assert!(err.contains("less than or equal to 10"), "{err}");
    let r = s.send_json(
        "POST",
        CRONTABS,
        &json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                "metadata": {"name": "bad"}, "spec": {"cronSpec": "nope", "mode": "Medium"}}),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let status = r.json();
    assert_eq!(status["reason"], "Invalid");
    let fields: Vec<&str> = status["details"]["causes"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["field"].as_str()).collect())
        .unwrap_or_default();
    assert!(fields.contains(&"spec.cronSpec"), "{status}");
    assert!(fields.contains(&"spec.mode"), "{status}");

    // kubectl get shows the printer columns.
    s.with_manifest("apply", &crontab("web", "  replicas: 2\n"));
    let table = s.kubectl(&["get", "crontabs"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "SPEC", "REPLICAS", "AGE"], "{table}");
    let row = table
        .lines()
        .find(|l| l.starts_with("web"))
        .unwrap_or_default();
    assert!(
        row.contains("* * * * */5") && row.contains(" 2 "),
        "{table}"
    );
    assert!(s
        .kubectl(&["get", "ct", "web", "-o", "name"])
        .contains("crontab.stable.example.com/web"));

    // The scale subresource moves spec.replicas; the status subresource alone writes status.
    s.kubectl(&["scale", "crontab/web", "--replicas=3"]);
    assert_eq!(stored(s, "web")["spec"]["replicas"], 3);
    let mut with_status = stored(s, "web");
    with_status["status"] = json!({"replicas": 3, "labelSelector": "app=web"});
    let r = s.send_json("PUT", &format!("{CRONTABS}/web/status"), &with_status);
    assert_eq!(r.status, 200, "{}", r.body);
    let scale = s.get(&format!("{CRONTABS}/web/scale")).json();
    assert_eq!(scale["status"]["replicas"], 3, "{scale}");
    assert_eq!(scale["status"]["selector"], "app=web", "{scale}");
    let mut main = stored(s, "web");
    main["status"] = json!({"replicas": 7});
    main["spec"]["image"] = json!("other");
    let r = s.send_json("PUT", &format!("{CRONTABS}/web"), &main);
    assert_eq!(r.status, 200, "{}", r.body);
    let obj = r.json();
    assert_eq!(obj["status"]["replicas"], 3, "status kept: {obj}");
    assert_eq!(obj["metadata"]["generation"], 3, "{obj}");

    garbage_collection(s);
    namespace_deletion(s);
    definition_deletion(s);
}

fn reference(owner: &Value) -> Value {
    json!({
        "apiVersion": owner["apiVersion"], "kind": owner["kind"],
        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
    })
}

fn create_owned(s: &Server, collection: &str, obj: Value) -> Value {
    let r = s.send_json("POST", collection, &obj);
    assert_eq!(r.status, 201, "{}", r.body);
    r.json()
}

/// Custom resources as owners and dependents, deleted in cascade or orphaned.
fn garbage_collection(s: &Server) {
    for (owner, cascade) in [("owner-bg", "background"), ("owner-orphan", "orphan")] {
        s.with_manifest("apply", &crontab(owner, ""));
        let parent = stored(s, owner);
        let child = create_owned(
            s,
            CRONTABS,
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                   "metadata": {"name": format!("{owner}-child"), "ownerReferences": [reference(&parent)]},
                   "spec": {"cronSpec": "* * * * *"}}),
        );
        create_owned(
            s,
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": format!("{owner}-cm"), "ownerReferences": [reference(&child)]}}),
        );
        s.kubectl(&["delete", "crontab", owner, &format!("--cascade={cascade}")]);
        let child_path = format!("{CRONTABS}/{owner}-child");
        let cm_path = format!("/api/v1/namespaces/default/configmaps/{owner}-cm");
        if cascade == "background" {
            wait_until("dependents collected", Duration::from_secs(30), || {
                s.get(&child_path).status == 404 && s.get(&cm_path).status == 404
            });
        } else {
            wait_until("owner gone", Duration::from_secs(30), || {
                s.get(&format!("{CRONTABS}/{owner}")).status == 404
            });
            let child = s.get(&child_path).json();
            assert!(
                child["metadata"].get("ownerReferences").is_none(),
                "{child}"
            );
            assert_eq!(s.get(&cm_path).status, 200);
        }
    }
}

fn namespace_deletion(s: &Server) {
    s.kubectl(&["create", "namespace", "scratch"]);
    let out = s.manifest_output(
        &["apply", "-n", "scratch", "-f", "-"],
        &crontab("inside", ""),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.kubectl(&["delete", "namespace", "scratch", "--timeout=60s"]);
    let r = s.get("/apis/stable.example.com/v1/namespaces/scratch/crontabs/inside");
    assert_eq!(r.status, 404, "{}", r.body);
}

/// Deleting the definition deletes its resources first, then stops serving them.
fn definition_deletion(s: &Server) {
    let before = s.get(CRONTABS).json();
    assert!(!before["items"].as_array().is_none_or(Vec::is_empty));
    s.kubectl(&["delete", "crd", CRD, "--timeout=60s"]);
    assert_eq!(
        s.get(&format!(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD}"
        ))
        .status,
        404
    );
    let r = s.get(CRONTABS);
    assert_eq!(r.status, 404, "{}", r.body);
    let groups = s.get("/apis").json();
    assert!(
        !groups.to_string().contains("stable.example.com"),
        "discovery still names the group: {groups}"
    );
    let resources = s.kubectl(&["api-resources"]);
    assert!(!resources.contains("crontabs"), "{resources}");
    // Defined again, it starts empty: the objects went with the definition.
    established(s);
    wait_until("served again", Duration::from_secs(10), || {
        s.get(CRONTABS).status == 200
    });
    let after = s.get(CRONTABS).json();
    assert_eq!(after["items"], json!([]), "{after}");
}

#[test]
fn definitions_are_validated() {
    let s = start();
    let mut crd: Value = serde_yaml_ng::from_str(DEFINITION).expect("yaml");
    crd["metadata"]["name"] = json!("wrong.stable.example.com");
    if let Some(spec) = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
        ["spec"]
        .as_object_mut()
    {
        spec.remove("type");
    }
    let mut second = crd["spec"]["versions"][0].clone();
    second["name"] = json!("v2");
    if let Some(versions) = crd["spec"]["versions"].as_array_mut() {
        versions.push(second);
    }
    let r = s.send_json(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let status = r.json();
    let fields: Vec<String> = status["details"]["causes"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|c| c["field"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    assert!(fields.iter().any(|f| f == "metadata.name"), "{status}");
    assert!(fields.iter().any(|f| f == "spec.versions"), "{status}");
    assert!(
        fields
            .iter()
            .any(|f| f.starts_with("spec.versions[0].schema.openAPIV3Schema.properties[spec]")),
        "{status}"
    );
}

/// Two served versions over one storage (conversion None): each reads every object in its
/// own apiVersion; only the storage version is recorded as stored.
#[test]
fn several_versions_share_objects() {
    let s = start();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.multi.example.com"},
        "spec": {
            "group": "multi.example.com", "scope": "Cluster",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [
                {"name": "v1beta1", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}},
                {"name": "v1", "served": true, "storage": true,
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer", "maximum": 5}}}}}}},
            ],
        },
    });
    let r = s.send_json(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let created = r.json();
    assert_eq!(created["spec"]["names"]["singular"], "gadget");
    assert_eq!(created["spec"]["names"]["listKind"], "GadgetList");
    assert_eq!(created["spec"]["conversion"]["strategy"], "None");
    assert_eq!(created["status"]["storedVersions"], json!(["v1"]));
    let old = "/apis/multi.example.com/v1beta1/gadgets";
    let new = "/apis/multi.example.com/v1/gadgets";
    wait_until("both versions served", Duration::from_secs(10), || {
        s.get(old).status == 200 && s.get(new).status == 200
    });
    let r = s.send_json(
        "POST",
        old,
        &json!({"apiVersion": "multi.example.com/v1beta1", "kind": "Gadget",
                "metadata": {"name": "g"}, "spec": {"size": 9}}),
    );
    assert_eq!(r.status, 201, "v1beta1 has no maximum: {}", r.body);
    assert_eq!(
        s.get(&format!("{new}/g")).json()["apiVersion"],
        "multi.example.com/v1"
    );
    assert_eq!(
        s.get(&format!("{old}/g")).json()["apiVersion"],
        "multi.example.com/v1beta1"
    );
    let listed = s.get(new).json();
    assert_eq!(
        listed["items"][0]["apiVersion"], "multi.example.com/v1",
        "{listed}"
    );
    // Each version validates with its own schema.
    let r = s.send_json(
        "POST",
        new,
        &json!({"apiVersion": "multi.example.com/v1", "kind": "Gadget",
                "metadata": {"name": "h"}, "spec": {"size": 9}}),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let discovery = s.get("/apis/multi.example.com").json();
    assert_eq!(
        discovery["preferredVersion"]["version"], "v1",
        "{discovery}"
    );
}

/// CEL rules: evaluated on writes (transition rules on updates only); a rule using a
/// function this server lacks is refused when the definition is written.
#[test]
fn validation_rules() {
    let s = start();
    let definition = |rules: Value| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "ranges.cel.example.com"},
            "spec": {
                "group": "cel.example.com", "scope": "Namespaced",
                "names": {"plural": "ranges", "kind": "Range"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                        "type": "object",
                        "x-kubernetes-validations": rules,
                        "properties": {"min": {"type": "integer"}, "max": {"type": "integer"},
                                       "owner": {"type": "string"}}}}}}}],
            },
        })
    };
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let r = s.send_json(
        "POST",
        crds,
        &definition(json!([{"rule": "{'a': 1}.all(k, v, v > 0)"}])),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.body.contains("'all'") && r.body.contains("not supported"),
        "{}",
        r.body
    );

    let rules = json!([
        {"rule": "self.min <= self.max", "message": "min must not exceed max"},
        {"rule": "self.owner == oldSelf.owner", "message": "owner is immutable"},
    ]);
    let r = s.send_json("POST", crds, &definition(rules));
    assert_eq!(r.status, 201, "{}", r.body);
    let ranges = "/apis/cel.example.com/v1/namespaces/default/ranges";
    wait_until("served", Duration::from_secs(10), || {
        s.get(ranges).status == 200
    });
    let range = |min: i64, max: i64, owner: &str| {
        json!({"apiVersion": "cel.example.com/v1", "kind": "Range", "metadata": {"name": "r"},
               "spec": {"min": min, "max": max, "owner": owner}})
    };
    let r = s.send_json("POST", ranges, &range(5, 1, "a"));
    assert_eq!(r.status, 422, "{}", r.body);
    let status = r.json();
    assert_eq!(status["details"]["causes"][0]["field"], "spec", "{status}");
    assert!(r.body.contains("min must not exceed max"), "{}", r.body);
    let r = s.send_json("POST", ranges, &range(1, 5, "a"));
    assert_eq!(
        r.status, 201,
        "oldSelf rules wait for an update: {}",
        r.body
    );
    let mut changed = r.json();
    changed["spec"]["owner"] = json!("b");
    let r = s.send_json("PUT", &format!("{ranges}/r"), &changed);
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(r.body.contains("owner is immutable"), "{}", r.body);
}

/// A second server on the same etcd serves the custom resources from its first request (its
/// readiness waits for the stored definitions), and both see each other's writes.
#[test]
fn another_server_serves_stored_definitions() {
    let etcd = EtcdServer::start_blocking();
    let endpoint = etcd.endpoint();
    let a = start_with_args(Some(etcd), Some(endpoint.clone()), &[]);
    established(&a);
    a.with_manifest("apply", &crontab("first", ""));
    let b = start_with_args(None, Some(endpoint), &[]);
    let verbose = b.get("/readyz?verbose");
    assert_eq!(verbose.status, 200, "{}", verbose.body);
    assert!(
        verbose
            .body
            .contains("[+]poststarthook/crd-informer-synced ok"),
        "{}",
        verbose.body
    );
    let r = b.get(&format!("{CRONTABS}/first"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["spec"]["replicas"], 1);
    let table = b.kubectl(&["get", "crontabs"]);
    assert!(
        table.starts_with("NAME") && table.contains("REPLICAS"),
        "{table}"
    );
}

/// A definition whose root keeps unknown fields: `/openapi/v2` lists no fixed fields for it
/// (only apiVersion, kind and metadata), as upstream's v2 conversion gives it, so clients
/// validating against v2 accept the unknown fields the server keeps.
#[test]
fn openapi_v2_keeps_unknown_fields_open_where_the_schema_does() {
    let s = start();
    s.with_manifest(
        "apply",
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: loose.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: loose, singular: loose, kind: Loose}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
"#,
    );
    let definition =
        || s.get("/openapi/v2").json()["definitions"]["com.example.stable.v1.Loose"].clone();
    wait_until(
        "the definition in /openapi/v2",
        Duration::from_secs(20),
        || definition().is_object(),
    );
    let loose = definition();
    let mut fields: Vec<String> = loose["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    fields.sort();
    assert_eq!(fields, ["apiVersion", "kind", "metadata"], "{loose}");
    assert_eq!(loose["x-kubernetes-preserve-unknown-fields"], true);
    // The object keeps what its schema does not name.
    s.with_manifest(
        "create",
        "apiVersion: stable.example.com/v1\nkind: Loose\nmetadata:\n  name: a\nspec:\n  size: 1\nother: kept\n",
    );
    let stored = s
        .get("/apis/stable.example.com/v1/namespaces/default/loose/a")
        .json();
    assert_eq!(stored["other"], "kept", "{stored}");

    // The group-version has its APIService while a definition serves it, as upstream
    // registers one for custom resources.
    const APISERVICE: &str = "/apis/apiregistration.k8s.io/v1/apiservices/v1.stable.example.com";
    wait_until("the APIService registered", Duration::from_secs(20), || {
        s.get(APISERVICE).json()["status"]["conditions"][0]["status"] == "True"
    });
    let service = s.get(APISERVICE).json();
    assert_eq!(
        service["spec"],
        json!({"group": "stable.example.com", "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 100})
    );
    assert_eq!(
        service["metadata"]["labels"],
        json!({"kube-aggregator.kubernetes.io/automanaged": "true"})
    );
    assert_eq!(service["status"]["conditions"][0]["reason"], "Local");
    s.kubectl(&["delete", "crd", "loose.stable.example.com"]);
    wait_until("the APIService removed", Duration::from_secs(20), || {
        s.get(APISERVICE).status == 404
    });
}
