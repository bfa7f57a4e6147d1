use serde_json::{json, Value};

use super::{bad_request, raw};
use crate::error::RegistryError;
use crate::patch::PatchType;

fn cm() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": "1", "b": "2"}},
        "data": {"k": "v", "list": "x"}
    })
}

#[test]
fn json_patch_add_remove_replace_test() {
    let body = r#"[
        {"op": "test", "path": "/data/k", "value": "v"},
        {"op": "add", "path": "/data/new", "value": "n"},
        {"op": "remove", "path": "/metadata/labels/a"},
        {"op": "replace", "path": "/metadata/labels/b", "value": "3"}
    ]"#;
    let out = raw(PatchType::Json, &cm(), body).expect("applies");
    assert_eq!(out["data"]["new"], "n");
    assert_eq!(out["metadata"]["labels"], json!({"b": "3"}));
    assert_eq!(out["data"]["k"], "v");
}

/// Found by the `patch` fuzz target: a `move` that fails after a `copy` onto its source made
/// json_patch's undo panic; it is a 422 like any operation that does not apply.
#[test]
fn json_patch_failing_move_after_copy_is_a_422_not_a_panic() {
    let body = r#"[{"op": "copy", "from": "/metadata/labels", "path": "/metadata/annotations"},
                   {"op": "move", "from": "/metadata/annotations", "path": "/nope/x/y"}]"#;
    let err = raw(PatchType::Json, &cm(), body).unwrap_err();
    assert!(matches!(err, RegistryError::Unprocessable), "{err:?}");
}

#[test]
fn json_patch_failing_test_is_a_bare_422() {
    let body = r#"[{"op": "test", "path": "/data/k", "value": "other"},
                   {"op": "add", "path": "/data/new", "value": "n"}]"#;
    let err = raw(PatchType::Json, &cm(), body).unwrap_err();
    assert!(matches!(err, RegistryError::Unprocessable));
    let status = serde_json::to_value(err.status()).expect("json");
    assert_eq!(status["code"], 422);
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "the server rejected our request due to an error in our request"
    );
    assert_eq!(status["details"], json!({}));
}

#[test]
fn json_patch_on_a_missing_path_is_422() {
    for body in [
        r#"[{"op": "remove", "path": "/spec/nothing"}]"#,
        r#"[{"op": "replace", "path": "/data/missing", "value": 1}]"#,
        r#"[{"op": "add", "path": "/no/such/parent", "value": 1}]"#,
        r#"[{"op": "frobnicate", "path": "/data"}]"#,
        r#"[{"op": "add", "value": 1}]"#,
        r#"[null]"#,
    ] {
        let err = raw(PatchType::Json, &cm(), body).unwrap_err();
        assert_eq!(err.code(), 422, "{body}");
    }
}

#[test]
fn malformed_json_patches_are_400() {
    assert!(!bad_request(raw(PatchType::Json, &cm(), "[{")).is_empty());
    assert_eq!(
        bad_request(raw(PatchType::Json, &cm(), r#"{"op": "add"}"#)),
        "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
    );
    assert_eq!(
        bad_request(raw(PatchType::Json, &cm(), r#"["add"]"#)),
        "json: cannot unmarshal string into Go value of type jsonpatch.Operation"
    );
    assert!(!bad_request(raw(PatchType::Json, &cm(), "")).is_empty());
}

#[test]
fn json_patch_null_body_and_empty_list_change_nothing() {
    assert_eq!(raw(PatchType::Json, &cm(), "null").expect("ok"), cm());
    assert_eq!(raw(PatchType::Json, &cm(), "[]").expect("ok"), cm());
}

#[test]
fn json_patch_operation_cap_is_413() {
    let ops: Vec<Value> = (0..10_001)
        .map(|_| json!({"op": "test", "path": "/data/k", "value": "v"}))
        .collect();
    let err = raw(PatchType::Json, &cm(), &Value::Array(ops).to_string()).unwrap_err();
    let status = err.status();
    assert_eq!(status.code, 413);
    assert_eq!(
        status.message,
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    );
}

#[test]
fn json_patch_replacing_the_root_with_a_non_object_is_invalid() {
    let err = raw(
        PatchType::Json,
        &cm(),
        r#"[{"op": "replace", "path": "", "value": [1]}]"#,
    )
    .unwrap_err();
    let status = err.status();
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains("patch: Invalid value: \"[1]\""),
        "{}",
        status.message
    );
}

#[test]
fn merge_patch_merges_and_null_deletes() {
    let body = r#"{"metadata": {"labels": {"a": null, "c": "3"}}, "data": {"k": "w"}}"#;
    let out = raw(PatchType::Merge, &cm(), body).expect("applies");
    assert_eq!(out["metadata"]["labels"], json!({"b": "2", "c": "3"}));
    assert_eq!(out["data"], json!({"k": "w", "list": "x"}));
}

#[test]
fn merge_patch_replaces_lists_and_prunes_nulls_of_new_maps() {
    let original = json!({"spec": {"items": [1, 2]}});
    let body = r#"{"spec": {"items": [3], "fresh": {"a": null, "b": 1}}}"#;
    let out = raw(PatchType::Merge, &original, body).expect("applies");
    assert_eq!(out["spec"], json!({"items": [3], "fresh": {"b": 1}}));
}

#[test]
fn malformed_merge_patches_are_400() {
    for body in ["{", "null", "\"x\"", "3", ""] {
        assert_eq!(
            bad_request(raw(PatchType::Merge, &cm(), body)),
            "Invalid JSON Patch",
            "{body}"
        );
    }
    let err = raw(PatchType::Merge, &cm(), "[1, 2]").unwrap_err();
    assert_eq!(err.code(), 422);
}
