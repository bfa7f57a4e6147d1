use super::*;
use crate::path::Path;
use serde_json::json;

/// A Deployment's Apply entry as `kubectl apply --server-side` leaves it.
const DEPLOYMENT: &str = concat!(
    r#"{"f:metadata":{"f:labels":{"f:app":{}},"f:name":{}},"#,
    r#""f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"#,
    r#""f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{},"#,
    r#""f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}"#,
    r#"}}}}}}}}"#
);

/// An Update entry written by a controller: a granular map that is a member, a set list.
const STATUS_AND_FINALIZERS: &str = concat!(
    r#"{"f:metadata":{"f:annotations":{".":{},"f:a":{}},"f:finalizers":{".":{},"#,
    r#""v:\"example.com/x\"":{},"v:\"example.com/y\"":{}}},"f:status":{"f:conditions":{"i:0":{},"i:1":{"f:type":{}}}}}"#
);

fn p(elements: Vec<PathElement>) -> Vec<PathElement> {
    elements
}

#[test]
fn deployment_round_trips_byte_for_byte() {
    let set = from_json_str(DEPLOYMENT).unwrap();
    assert_eq!(to_json_string(&set), DEPLOYMENT);
    let nginx = PathElement::key([("name", json!("nginx"))]);
    let containers = p(vec![
        PathElement::field("spec"),
        PathElement::field("template"),
        PathElement::field("spec"),
        PathElement::field("containers"),
        nginx.clone(),
    ]);
    assert!(set.has(&containers), "the list item is a member (\".\")");
    let mut image = containers.clone();
    image.push(PathElement::field("image"));
    assert!(set.has(&image));
    assert!(!set.has(&[PathElement::field("metadata")]));
    assert!(set.has(&[PathElement::field("spec"), PathElement::field("selector")]));
}

#[test]
fn values_indices_and_members_with_children_round_trip() {
    let set = from_json_str(STATUS_AND_FINALIZERS).unwrap();
    assert_eq!(to_json_string(&set), STATUS_AND_FINALIZERS);
    let fin = [
        PathElement::field("metadata"),
        PathElement::field("finalizers"),
    ];
    assert!(set.has(&fin));
    assert!(set.has(&[
        fin[0].clone(),
        fin[1].clone(),
        PathElement::Value(json!("example.com/x"))
    ]));
    let cond = [
        PathElement::field("status"),
        PathElement::field("conditions"),
    ];
    assert!(set.has(&[cond[0].clone(), cond[1].clone(), PathElement::Index(0)]));
    assert!(!set.has(&[cond[0].clone(), cond[1].clone(), PathElement::Index(1)]));
}

#[test]
fn encoding_sorts_entries_whatever_the_insert_order() {
    let set = Set::from_paths([
        vec![PathElement::Index(1)],
        vec![PathElement::Value(json!(3))],
        vec![PathElement::key([("b", json!(1)), ("a", json!("x"))])],
        vec![PathElement::field("z")],
        vec![PathElement::field("a")],
    ]);
    assert_eq!(
        to_json_string(&set),
        r#"{"f:a":{},"f:z":{},"k:{\"a\":\"x\",\"b\":1}":{},"v:3":{},"i:1":{}}"#
    );
    assert_eq!(from_value(&to_value(&set)).unwrap(), set);
}

#[test]
fn empty_set_is_an_empty_object() {
    assert_eq!(to_json_string(&Set::new()), "{}");
    assert!(from_json_str("{}").unwrap().is_empty());
}

#[test]
fn key_objects_in_any_order_name_the_same_element() {
    let a = from_json_str(r#"{"k:{\"protocol\":\"TCP\",\"port\":80}":{}}"#).unwrap();
    let b = from_json_str(r#"{"k:{\"port\":80,\"protocol\":\"TCP\"}":{}}"#).unwrap();
    assert_eq!(a, b);
    assert_eq!(
        to_json_string(&a),
        r#"{"k:{\"port\":80,\"protocol\":\"TCP\"}":{}}"#
    );
}

#[test]
fn unknown_element_kinds_are_dropped() {
    let set = from_json_str(r#"{"f:a":{},"x:future":{"f:b":{}}}"#).unwrap();
    assert_eq!(set, Set::from_paths([vec![PathElement::field("a")]]));
}

#[test]
fn malformed_input_is_an_error_not_a_panic() {
    let cases = [
        "",
        "[]",
        "null",
        r#"{"f:a":[]}"#,
        r#"{"f:a":{"f:b":"x"}}"#,
        r#"{"nocolon":{}}"#,
        r#"{"fx:a":{}}"#,
        r#"{"k:[1]":{}}"#,
        r#"{"k:{bad":{}}"#,
        r#"{"v:":{}}"#,
        r#"{"i:-1":{}}"#,
        r#"{"i:x":{}}"#,
    ];
    for case in cases {
        match from_json_str(case) {
            Err(Error::FieldsV1(msg)) => assert!(!msg.is_empty()),
            other => panic!("{case:?} gave {other:?}"),
        }
    }
}

#[test]
fn field_names_with_quotes_survive() {
    let set = Set::from_paths([vec![PathElement::field(r#"we"ird"#)]]);
    let text = to_json_string(&set);
    assert_eq!(text, r#"{"f:we\"ird":{}}"#);
    assert_eq!(from_json_str(&text).unwrap(), set);
    let paths: Vec<String> = set.paths().iter().map(Path::to_string).collect();
    assert_eq!(paths, vec![r#".we"ird"#]);
}

#[test]
fn to_value_is_the_text_parsed() {
    let text = concat!(
        r#"{"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{"f:containers":{"#,
        r#""k:{\"name\":\"a\"}":{".":{},"f:image":{},"f:ports":{"v:1":{}}}},"f:replicas":{}}}"#
    );
    let Ok(set) = from_json_str(text) else {
        panic!("parses")
    };
    let parsed: Value = serde_json::from_str(&to_json_string(&set)).expect("json");
    assert_eq!(to_value(&set), parsed);
    assert_eq!(to_json_string(&set), text);
}
