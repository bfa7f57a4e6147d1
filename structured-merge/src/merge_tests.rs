use super::*;
use crate::fixtures::{root, schema};
use serde_json::json;

fn merged(live: Value, applied: Value) -> Value {
    match merge(&schema(), &root(), &live, &applied) {
        Ok(v) => v,
        Err(e) => panic!("merge failed: {e}"),
    }
}

#[test]
fn struct_fields_merge_one_by_one() {
    let out = merged(
        json!({"metadata": {"name": "web", "labels": {"a": "1"}}, "spec": {"replicas": 1}}),
        json!({"metadata": {"labels": {"b": "2"}}, "spec": {"replicas": 3}}),
    );
    assert_eq!(
        out,
        json!({"metadata": {"name": "web", "labels": {"a": "1", "b": "2"}},
            "spec": {"replicas": 3}})
    );
}

#[test]
fn map_list_merges_by_key_in_the_applied_order() {
    let out = merged(
        json!({"spec": {"containers": [
            {"name": "b", "image": "b:1", "args": ["x"]},
            {"name": "a", "image": "a:1"}]}}),
        json!({"spec": {"containers": [
            {"name": "c", "image": "c:1"},
            {"name": "a", "image": "a:2"},
            {"name": "b", "args": ["y", "z"]}]}}),
    );
    assert_eq!(
        out,
        json!({"spec": {"containers": [
            {"name": "c", "image": "c:1"},
            {"name": "a", "image": "a:2"},
            {"name": "b", "image": "b:1", "args": ["y", "z"]}]}}),
        "args is atomic: replaced whole"
    );
}

#[test]
fn map_list_with_compound_key_and_default_matches_items() {
    let out = merged(
        json!({"spec": {"containers": [{"name": "a", "ports": [
            {"containerPort": 80, "protocol": "TCP", "name": "http"}]}]}}),
        json!({"spec": {"containers": [{"name": "a", "ports": [
            {"containerPort": 80, "name": "web"}, {"containerPort": 80, "protocol": "UDP"}]}]}}),
    );
    assert_eq!(
        out,
        json!({"spec": {"containers": [{"name": "a", "ports": [
            {"containerPort": 80, "protocol": "TCP", "name": "web"},
            {"containerPort": 80, "protocol": "UDP"}]}]}})
    );
}

#[test]
fn set_list_keeps_unapplied_live_items_in_place_around_the_applied_order() {
    let out = merged(
        json!({"metadata": {"finalizers": ["b", "a"]}}),
        json!({"metadata": {"finalizers": ["c", "a"]}}),
    );
    assert_eq!(out, json!({"metadata": {"finalizers": ["b", "c", "a"]}}));
    let out = merged(
        json!({"metadata": {"finalizers": ["a", "x", "b", "y", "c"]}}),
        json!({"metadata": {"finalizers": ["c", "b", "a"]}}),
    );
    assert_eq!(
        out,
        json!({"metadata": {"finalizers": ["x", "y", "c", "b", "a"]}}),
        "shared items move to the applied order; x and y keep their live neighbours"
    );
    let out = merged(
        json!({"metadata": {"finalizers": ["a", "b", "c", "d"]}}),
        json!({"metadata": {"finalizers": ["a", "d", "c", "b"]}}),
    );
    assert_eq!(
        out,
        json!({"metadata": {"finalizers": ["a", "d", "c", "b"]}})
    );
}

#[test]
fn live_duplicates_are_kept_unless_applied_then_collapse_into_the_applied_item() {
    let out = merged(
        json!({"metadata": {"finalizers": ["x", "a", "x"]}}),
        json!({"metadata": {"finalizers": ["b"]}}),
    );
    assert_eq!(
        out,
        json!({"metadata": {"finalizers": ["x", "a", "x", "b"]}})
    );
    let out = merged(
        json!({"spec": {"containers": [
            {"name": "a", "image": "1"}, {"name": "a", "image": "2", "args": ["x"]}]}}),
        json!({"spec": {"containers": [{"name": "a", "image": "3"}]}}),
    );
    assert_eq!(
        out,
        json!({"spec": {"containers": [{"name": "a", "image": "3"}]}}),
        "duplicates are not merged into"
    );
}

#[test]
fn atomic_values_are_replaced_whole() {
    let out = merged(
        json!({"spec": {"selector": {"matchLabels": {"a": "1"}}, "port": 80}}),
        json!({"spec": {"selector": {"matchLabels": {"b": "2"}}, "port": "http"}}),
    );
    assert_eq!(
        out,
        json!({"spec": {"selector": {"matchLabels": {"b": "2"}}, "port": "http"}})
    );
}

#[test]
fn preserved_unknown_objects_merge_and_their_lists_are_atomic() {
    let out = merged(
        json!({"spec": {"config": {"a": {"x": 1}, "l": [1, 2], "keep": true}}}),
        json!({"spec": {"config": {"a": {"y": 2}, "l": [3]}}}),
    );
    assert_eq!(
        out,
        json!({"spec": {"config": {"a": {"x": 1, "y": 2}, "l": [3], "keep": true}}})
    );
}

#[test]
fn applied_into_missing_or_mismatched_live_takes_the_applied_value() {
    assert_eq!(
        merged(json!({}), json!({"spec": {"replicas": 2}})),
        json!({"spec": {"replicas": 2}})
    );
    assert_eq!(
        merged(json!({"spec": null}), json!({"spec": {"replicas": 2}})),
        json!({"spec": {"replicas": 2}})
    );
}

#[test]
fn bad_lists_are_errors() {
    let err = merge(
        &schema(),
        &root(),
        &json!({}),
        &json!({"spec": {"replicas": 1, "containers": [{"name": "a"}, {"name": "a"}]}}),
    );
    assert!(
        err.is_ok(),
        "an applied list with no live counterpart is taken as is"
    );
    let err = merge(
        &schema(),
        &root(),
        &json!({"spec": {"containers": []}}),
        &json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}),
    );
    assert!(
        matches!(err, Err(Error::Value { ref path, .. }) if path == ".spec.containers"),
        "{err:?}"
    );
    let err = merge(
        &schema(),
        &root(),
        &json!({"spec": {"containers": [{"image": "x"}]}}),
        &json!({"spec": {"containers": [{"name": "a"}]}}),
    );
    assert!(matches!(err, Err(Error::Value { .. })), "{err:?}");
    let err = merge(
        &schema(),
        &root(),
        &json!({"spec": {}}),
        &json!({"spec": {"bogus": 1}}),
    );
    assert!(
        matches!(err, Err(Error::Value { ref path, .. }) if path == ".spec.bogus"),
        "{err:?}"
    );
}
