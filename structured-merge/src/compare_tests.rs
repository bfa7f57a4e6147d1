use super::*;
use crate::fieldsv1::{from_json_str, to_json_string};
use crate::fixtures::{root, schema};
use serde_json::json;

/// The comparison as FieldsV1 text: (added, modified, removed).
fn diff_with(old: Value, new: Value, struct_members: bool) -> (String, String, String) {
    let options = CompareOptions { struct_members };
    match compare(&schema(), &root(), &old, &new, options) {
        Ok(c) => (
            to_json_string(&c.added),
            to_json_string(&c.modified),
            to_json_string(&c.removed),
        ),
        Err(e) => panic!("compare failed: {e}"),
    }
}

fn diff(old: Value, new: Value) -> (String, String, String) {
    diff_with(old, new, false)
}

#[test]
fn equal_values_are_the_same() {
    let v = json!({"metadata": {"name": "web", "labels": {"a": "1"}},
        "spec": {"replicas": 1, "containers": [{"name": "a", "image": "x"}]}});
    let options = CompareOptions::default();
    let Ok(c) = compare(&schema(), &root(), &v, &v, options) else {
        panic!()
    };
    assert!(c.is_same());
    let Ok(c) = compare(
        &schema(),
        &root(),
        &json!({"spec": {"replicas": 1}}),
        &json!({"spec": {"replicas": 1.0}}),
        options,
    ) else {
        panic!()
    };
    assert!(c.is_same(), "1 and 1.0 are one value");
}

#[test]
fn scalars_are_added_modified_and_removed() {
    let (added, modified, removed) = diff(
        json!({"metadata": {"name": "web"}, "spec": {"replicas": 1, "port": 80}}),
        json!({"spec": {"replicas": 2, "port": 80}, "kind": "Deployment"}),
    );
    assert_eq!(added, r#"{"f:kind":{}}"#);
    assert_eq!(modified, r#"{"f:spec":{"f:replicas":{}}}"#);
    assert_eq!(
        removed, r#"{"f:metadata":{"f:name":{}}}"#,
        "struct fields are not members by default"
    );
}

#[test]
fn struct_fields_are_members_when_asked() {
    let (added, _, removed) = diff_with(
        json!({"metadata": {"name": "web"}}),
        json!({"spec": {"replicas": 2}}),
        true,
    );
    assert_eq!(added, r#"{"f:spec":{".":{},"f:replicas":{}}}"#);
    assert_eq!(removed, r#"{"f:metadata":{".":{},"f:name":{}}}"#);
}

#[test]
fn map_entries_and_the_map_itself_are_members() {
    let (added, modified, removed) = diff(
        json!({"metadata": {"name": "x"}}),
        json!({"metadata": {"name": "x", "labels": {"a": "1"}}}),
    );
    assert_eq!(added, r#"{"f:metadata":{"f:labels":{".":{},"f:a":{}}}}"#);
    assert_eq!((modified.as_str(), removed.as_str()), ("{}", "{}"));
    let (added, modified, removed) = diff(
        json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
        json!({"metadata": {"labels": {"a": "2", "c": "3"}}}),
    );
    assert_eq!(added, r#"{"f:metadata":{"f:labels":{"f:c":{}}}}"#);
    assert_eq!(modified, r#"{"f:metadata":{"f:labels":{"f:a":{}}}}"#);
    assert_eq!(removed, r#"{"f:metadata":{"f:labels":{"f:b":{}}}}"#);
}

#[test]
fn map_list_items_by_key_with_key_defaults() {
    let (added, modified, removed) = diff(
        json!({"spec": {"containers": [
            {"name": "a", "image": "1", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "1"}]}}),
        json!({"spec": {"containers": [
            {"name": "c", "image": "1"},
            {"name": "a", "image": "2",
                "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]}]}}),
    );
    assert_eq!(
        added,
        concat!(
            r#"{"f:spec":{"f:containers":{"k:{\"name\":\"a\"}":{"f:ports":{"#,
            r#""k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{"f:name":{},"f:protocol":{}}}},"#,
            r#""k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{}}}}}"#
        ),
        "an absent protocol key is its default, so the port is the same item"
    );
    assert_eq!(
        modified,
        r#"{"f:spec":{"f:containers":{"k:{\"name\":\"a\"}":{"f:image":{}}}}}"#
    );
    assert_eq!(
        removed,
        r#"{"f:spec":{"f:containers":{"k:{\"name\":\"b\"}":{".":{},"f:image":{},"f:name":{}}}}}"#
    );
}

#[test]
fn set_lists_by_value_and_reordering_is_no_change() {
    let (added, modified, removed) = diff(
        json!({"metadata": {"finalizers": ["a", "b"]}}),
        json!({"metadata": {"finalizers": ["c", "a"]}}),
    );
    assert_eq!(added, r#"{"f:metadata":{"f:finalizers":{"v:\"c\"":{}}}}"#);
    assert_eq!(modified, "{}");
    assert_eq!(removed, r#"{"f:metadata":{"f:finalizers":{"v:\"b\"":{}}}}"#);
    let (added, modified, removed) = diff(
        json!({"metadata": {"finalizers": ["a", "b"]}}),
        json!({"metadata": {"finalizers": ["b", "a"]}}),
    );
    assert_eq!(
        (added, modified, removed),
        ("{}".into(), "{}".into(), "{}".into())
    );
}

#[test]
fn atomic_lists_maps_and_untyped_values_change_whole() {
    let (_, modified, _) = diff(
        json!({"spec": {"selector": {"matchLabels": {"a": "1"}}, "port": 80,
            "containers": [{"name": "a", "args": ["x", "y"]}]}}),
        json!({"spec": {"selector": {"matchLabels": {"a": "2"}}, "port": "http",
            "containers": [{"name": "a", "args": ["y", "x"]}]}}),
    );
    assert_eq!(
        modified,
        concat!(
            r#"{"f:spec":{"f:containers":{"k:{\"name\":\"a\"}":{"f:args":{}}},"#,
            r#""f:port":{},"f:selector":{}}}"#
        )
    );
}

#[test]
fn deduced_objects_are_granular_their_lists_atomic() {
    let (added, modified, removed) = diff(
        json!({"spec": {"config": {"a": {"x": 1}, "l": [1], "gone": true}}}),
        json!({"spec": {"config": {"a": {"x": 1, "y": {"z": 2}}, "l": [1, 2]}}}),
    );
    assert_eq!(
        added,
        r#"{"f:spec":{"f:config":{"f:a":{"f:y":{".":{},"f:z":{}}}}}}"#
    );
    assert_eq!(modified, r#"{"f:spec":{"f:config":{"f:l":{}}}}"#);
    assert_eq!(removed, r#"{"f:spec":{"f:config":{"f:gone":{}}}}"#);
}

#[test]
fn empty_and_null_granular_values_are_leaves() {
    let (added, modified, _) = diff(
        json!({"metadata": {"labels": null}}),
        json!({"metadata": {"labels": {}}, "spec": {"containers": []}}),
    );
    assert_eq!(
        added, r#"{"f:spec":{"f:containers":{}}}"#,
        "an empty list that appears is recorded whole"
    );
    assert_eq!(
        modified, r#"{"f:metadata":{"f:labels":{}}}"#,
        "null and {{}} differ"
    );
}

#[test]
fn live_duplicates_compare_as_a_whole() {
    let dup = |images: [&str; 2]| {
        json!({"spec": {"containers": [
            {"name": "a", "image": images[0]}, {"name": "a", "image": images[1]}]}})
    };
    let a = r#"{"f:spec":{"f:containers":{"k:{\"name\":\"a\"}":{}}}}"#;
    assert_eq!(diff(dup(["1", "2"]), dup(["1", "2"])).1, "{}");
    assert_eq!(diff(dup(["1", "2"]), dup(["1", "3"])).1, a);
    let single = json!({"spec": {"containers": [{"name": "a", "image": "1"}]}});
    let (added, _, removed) = diff(dup(["1", "2"]), single.clone());
    assert_eq!(removed, a, "the duplicated item goes");
    let whole =
        r#"{"f:spec":{"f:containers":{"k:{\"name\":\"a\"}":{".":{},"f:image":{},"f:name":{}}}}}"#;
    assert_eq!(added, whole, "and the single one comes, as upstream");
    let (added, _, removed) = diff(single, dup(["1", "2"]));
    assert_eq!(added, a);
    assert_eq!(removed, whole);
}

#[test]
fn without_drops_ignored_subtrees() {
    let Ok(c) = compare(
        &schema(),
        &root(),
        &json!({"spec": {"replicas": 1, "containers": [{"name": "a", "image": "1"}]}}),
        &json!({"spec": {"replicas": 2, "containers": [{"name": "a", "image": "2"}]}}),
        CompareOptions::default(),
    ) else {
        panic!()
    };
    let Ok(ignored) = from_json_str(r#"{"f:spec":{"f:containers":{}}}"#) else {
        panic!()
    };
    let c = c.without(&ignored);
    assert_eq!(
        to_json_string(&c.modified),
        r#"{"f:spec":{"f:replicas":{}}}"#
    );
    assert_eq!(
        to_json_string(&c.changed()),
        r#"{"f:spec":{"f:replicas":{}}}"#
    );
}

#[test]
fn values_that_do_not_fit_are_errors() {
    let err = compare(
        &schema(),
        &root(),
        &json!({}),
        &json!({"spec": {"containers": [{"image": "x"}]}}),
        CompareOptions::default(),
    );
    assert!(
        matches!(err, Err(Error::Value { ref path, .. }) if path == ".spec.containers"),
        "{err:?}"
    );
}

#[test]
fn a_required_list_of_a_typed_object_was_there_already() {
    let doc = json!({"definitions": {
        "Spec": {"type": "object", "required": ["containers"], "properties": {
            "containers": {"type": "array", "items": {"type": "object",
                "properties": {"name": {"type": "string"}}},
                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
            "ports": {"type": "array", "items": {"type": "object",
                "properties": {"port": {"type": "integer"}}},
                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"]}
        }}
    }});
    let Ok(schema) = crate::from_openapi::from_document(&doc) else {
        panic!("schema")
    };
    let new = json!({"containers": [{"name": "a"}], "ports": [{"port": 80}]});
    let added = |struct_members| {
        let options = CompareOptions { struct_members };
        match compare(&schema, &TypeRef::named("Spec"), &json!({}), &new, options) {
            Ok(c) => to_json_string(&c.added),
            Err(e) => panic!("{e}"),
        }
    };
    // As upstream records a create of a typed object: the optional list appears, the
    // required one (never omitted by Go) does not.
    assert_eq!(
        added(false),
        r#"{"f:containers":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}}},"f:ports":{".":{},"k:{\"port\":80}":{".":{},"f:port":{}}}}"#
    );
    // Plain maps (custom resources) have no such fields.
    assert!(added(true).starts_with(r#"{"f:containers":{".":{}"#));
}
