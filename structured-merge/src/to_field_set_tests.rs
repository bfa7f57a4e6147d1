use super::*;
use crate::fieldsv1::to_json_string;
use crate::fixtures::{root, schema};
use serde_json::json;

fn fields(value: Value) -> Result<String, Error> {
    to_field_set(&schema(), &root(), &value).map(|s| to_json_string(&s))
}

#[test]
fn deployment_as_kubectl_applies_it() {
    let text = fields(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "containers": [{"name": "nginx", "image": "nginx:1.27",
                "ports": [{"containerPort": 80}]}]}
    }))
    .unwrap();
    assert_eq!(
        text,
        concat!(
            r#"{"f:apiVersion":{},"f:kind":{},"f:metadata":{"f:labels":{"f:app":{}},"f:name":{}},"#,
            r#""f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{},"#,
            r#""f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"#,
            r#""f:containerPort":{}}}}},"f:replicas":{},"f:selector":{}}}"#
        ),
        "map entries and list items are members; the absent protocol key takes its default"
    );
}

#[test]
fn set_lists_name_items_by_value_and_atomic_lists_are_one_leaf() {
    let text = fields(json!({
        "metadata": {"finalizers": ["b", "a"]},
        "spec": {"containers": [{"name": "c", "args": ["x", "y"]}]}
    }))
    .unwrap();
    assert_eq!(
        text,
        concat!(
            r#"{"f:metadata":{"f:finalizers":{"v:\"a\"":{},"v:\"b\"":{}}},"#,
            r#""f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:args":{},"f:name":{}}}}}"#
        )
    );
}

#[test]
fn preserved_unknown_fields_are_deduced_and_int_or_string_is_a_leaf() {
    let text = fields(json!({"spec": {
        "config": {"a": {"b": 1}, "list": [1, 2]},
        "port": "http"
    }}))
    .unwrap();
    assert_eq!(
        text,
        r#"{"f:spec":{"f:config":{"f:a":{".":{},"f:b":{}},"f:list":{}},"f:port":{}}}"#
    );
}

#[test]
fn empty_or_null_struct_fields_are_leaves_empty_lists_set_nothing() {
    assert_eq!(
        fields(json!({"metadata": {}, "spec": {"containers": []}})).unwrap(),
        r#"{"f:metadata":{}}"#
    );
    assert_eq!(
        fields(json!({"metadata": null, "spec": {"replicas": null}})).unwrap(),
        r#"{"f:metadata":{},"f:spec":{"f:replicas":{}}}"#
    );
}

#[test]
fn live_duplicates_are_owned_whole_when_allowed() {
    let live = json!({"metadata": {"finalizers": ["x", "x", "y"]},
        "spec": {"containers": [{"name": "a", "image": "1"}, {"name": "a", "image": "2"}]}});
    let set = to_field_set_allowing_duplicates(&schema(), &root(), &live).unwrap();
    assert_eq!(
        to_json_string(&set),
        concat!(
            r#"{"f:metadata":{"f:finalizers":{"v:\"x\"":{},"v:\"y\"":{}}},"#,
            r#""f:spec":{"f:containers":{"k:{\"name\":\"a\"}":{}}}}"#
        )
    );
}

fn error_of(value: Value) -> (String, String) {
    match to_field_set(&schema(), &root(), &value) {
        Err(Error::Value { path, message }) => (path, message),
        other => panic!("{value} gave {other:?}"),
    }
}

#[test]
fn duplicate_keys_are_errors() {
    let (path, message) = error_of(json!({"spec": {"containers": [
        {"name": "a"}, {"name": "a", "image": "x"}]}}));
    assert_eq!(path, ".spec.containers");
    assert_eq!(message, r#"duplicate entries for key [name="a"]"#);
    let (path, message) = error_of(json!({"metadata": {"finalizers": ["x", "x"]}}));
    assert_eq!(path, ".metadata.finalizers");
    assert!(message.contains(r#"[="x"]"#), "{message}");
}

#[test]
fn missing_key_field_is_an_error() {
    let (path, message) = error_of(json!({"spec": {"containers": [{"image": "x"}]}}));
    assert_eq!(path, ".spec.containers");
    assert_eq!(
        message,
        "element 0: associative list with keys has an element that omits key field \"name\" \
         (and doesn't have default value)"
    );
}

#[test]
fn shape_mismatches_and_unknown_fields_are_errors() {
    let cases = [
        (
            json!({"spec": {"replicas": {"a": 1}}}),
            ".spec.replicas",
            "expected a scalar, found a map",
        ),
        (json!({"spec": []}), ".spec", "expected a map, found a list"),
        (
            json!({"spec": {"containers": {}}}),
            ".spec.containers",
            "expected a list, found a map",
        ),
        (
            json!({"metadata": {"finalizers": [{}]}}),
            ".metadata.finalizers",
            "element 0: a list of type set holds scalars, found a map",
        ),
        (
            json!({"spec": {"containers": ["c"]}}),
            ".spec.containers",
            "element 0: a list of type map holds maps, found a string",
        ),
        (
            json!({"spec": {"bogus": 1}}),
            ".spec.bogus",
            "field not declared in schema",
        ),
        (json!("x"), ".", "expected a map, found a string"),
    ];
    for (value, want_path, want_message) in cases {
        let (path, message) = error_of(value);
        assert_eq!((path.as_str(), message.as_str()), (want_path, want_message));
    }
}
