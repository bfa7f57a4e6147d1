//! Maps, directives and errors of strategic merge patch.

use serde_json::{json, Value};

use super::{assert_no_directives, bad_request, names, raw, smp, smp_ok};
use crate::error::RegistryError;
use crate::patch::PatchType;

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web", "tier": "front"}},
        "spec": {
            "replicas": 2,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.24"}, {"name": "side", "image": "envoy"}]}
            }
        }
    })
}

#[test]
fn maps_merge_and_null_deletes() {
    let patch = json!({"metadata": {"labels": {"tier": null, "new": "x"}}, "spec": {"replicas": 3, "paused": null}});
    let out = smp_ok("apps", "Deployment", &deployment(), &patch);
    assert_eq!(out["metadata"]["labels"], json!({"app": "web", "new": "x"}));
    assert_eq!(out["spec"]["replicas"], 3);
    assert!(out["spec"].get("paused").is_none());
}

#[test]
fn retain_keys_switching_to_recreate_drops_rolling_update() {
    let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
    let out = smp_ok("apps", "Deployment", &deployment(), &patch);
    assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
    assert_no_directives(&out);
}

#[test]
fn retain_keys_must_list_every_key_the_patch_sets() {
    let patch =
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 2}}}});
    let msg = bad_request(smp("apps", "Deployment", &deployment(), &patch));
    assert_eq!(msg, "invalid patch format of retainKeys");
    let patch = json!({"spec": {"strategy": {"$retainKeys": "type"}}});
    assert_eq!(
        bad_request(smp("apps", "Deployment", &deployment(), &patch)),
        "invalid patch format of retainKeys"
    );
}

#[test]
fn patch_replace_on_a_map() {
    let patch = json!({"metadata": {"labels": {"$patch": "replace", "only": "this"}}});
    let out = smp_ok("apps", "Deployment", &deployment(), &patch);
    assert_eq!(out["metadata"]["labels"], json!({"only": "this"}));
}

#[test]
fn patch_delete_on_a_map_empties_it() {
    let patch = json!({"spec": {"strategy": {"$patch": "delete"}}});
    let out = smp_ok("apps", "Deployment", &deployment(), &patch);
    assert_eq!(out["spec"]["strategy"], json!({}));
}

#[test]
fn patch_merge_is_refused_as_upstream_refuses_it() {
    let patch = json!({"metadata": {"labels": {"$patch": "merge", "a": "b"}}});
    let msg = bad_request(smp("apps", "Deployment", &deployment(), &patch));
    assert_eq!(
        msg,
        "unknown patch type: merge in map: map[$patch:merge a:b]"
    );
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "$patch": "merge"}]}}}});
    let msg = bad_request(smp("apps", "Deployment", &deployment(), &patch));
    assert_eq!(msg, "merging lists cannot yet be specified in the patch");
}

#[test]
fn kubectl_apply_shape() {
    let last_applied = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}"#;
    let patch = json!({
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": format!("{last_applied}\n")}},
        "spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "side"}, {"name": "app"}],
            "containers": [{"image": "nginx:1.25", "name": "app"}]
        }}}
    });
    let out = smp_ok("apps", "Deployment", &deployment(), &patch);
    assert_eq!(
        out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
        format!("{last_applied}\n")
    );
    let list = &out["spec"]["template"]["spec"]["containers"];
    assert_eq!(names(list), ["side", "app"]);
    assert_eq!(list[1]["image"], "nginx:1.25");
    assert_eq!(
        out["metadata"]["labels"],
        deployment()["metadata"]["labels"]
    );
    assert_no_directives(&out);
}

#[test]
fn null_patch_changes_nothing() {
    let out = raw(PatchType::Strategic, &deployment(), "null").expect("ok");
    assert_eq!(out, deployment());
}

#[test]
fn malformed_strategic_patches_are_400() {
    assert!(!bad_request(raw(PatchType::Strategic, &deployment(), "{")).is_empty());
    assert_eq!(
        bad_request(raw(PatchType::Strategic, &deployment(), "[1]")),
        "json: cannot unmarshal array into Go value of type map[string]interface {}"
    );
    let no_key = json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}});
    assert_eq!(
        bad_request(smp("apps", "Deployment", &deployment(), &no_key)),
        "map: map[image:x] does not contain declared merge key: name"
    );
    let bad_directive =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "$patch": "zap"}]}}}});
    assert_eq!(
        bad_request(smp("apps", "Deployment", &deployment(), &bad_directive)),
        "unknown patch type: zap in map: map[$patch:zap name:app]"
    );
    let bad_order = json!({"metadata": {"$setElementOrder": ["x"]}});
    assert_eq!(
        bad_request(smp("apps", "Deployment", &deployment(), &bad_order)),
        "invalid patch format of setElementOrder list"
    );
    let bad_delete = json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["x"]}});
    assert_eq!(
        bad_request(smp("apps", "Deployment", &deployment(), &bad_delete)),
        "invalid patch format of primitive list"
    );
    let mixed = json!({"metadata": {"finalizers": ["a", 1]}});
    let original = json!({"metadata": {"finalizers": ["b"]}});
    assert!(bad_request(smp("", "Pod", &original, &mixed))
        .starts_with("list element types are not identical"));
    let not_list = json!({"metadata": {"$setElementOrder/finalizers": "a"}});
    assert_eq!(
        bad_request(smp("", "Pod", &original, &not_list)),
        "expected a []interface {}, but received a string"
    );
}

#[test]
fn lists_of_lists_are_422() {
    let original = json!({"metadata": {"finalizers": [["a"]]}});
    let patch = json!({"metadata": {"finalizers": [["b"]]}});
    let err = smp("", "Pod", &original, &patch).unwrap_err();
    assert!(matches!(err, RegistryError::Unprocessable), "{err:?}");
}

#[test]
fn type_changes_replace() {
    let original = json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}});
    let patch =
        json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": "25%"}}, "template": "x"}});
    let out = smp_ok("apps", "Deployment", &original, &patch);
    assert_eq!(out["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    assert_eq!(out["spec"]["template"], "x");
}

#[test]
fn patching_to_an_absent_map_honours_directives() {
    let original = json!({"metadata": {"name": "x"}});
    let patch = json!({"spec": {
        "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
        "template": {"metadata": {"labels": {"a": "1", "gone": null}}}
    }});
    let out = smp_ok("apps", "Deployment", &original, &patch);
    assert_eq!(
        out["spec"],
        json!({"strategy": {"type": "Recreate"}, "template": {"metadata": {"labels": {"a": "1"}}}})
    );
}

#[test]
fn untagged_fields_of_unknown_shape_merge_as_maps() {
    let original = json!({"data": {"a": "1"}, "extra": {"deep": {"x": 1, "y": [1, 2]}}});
    let patch = json!({"data": {"b": "2"}, "extra": {"deep": {"y": [3]}}});
    let out = smp_ok("", "ConfigMap", &original, &patch);
    assert_eq!(
        out,
        json!({"data": {"a": "1", "b": "2"}, "extra": {"deep": {"x": 1, "y": [3]}}})
    );
}
