use axum::http::{header, HeaderMap, HeaderValue};
use serde_json::json;

use super::parse;

fn headers(ct: &'static str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    h
}

const DUPLICATED: &str = r#"{"kind":"Deployment","metadata":{"name":"a","name":"b"},
  "spec":{"replicas":1,"template":{"spec":{"containers":[{"name":"x","image":"i","image":"j"}]}},"replicas":3}}"#;

#[test]
fn duplicates_are_noted_and_the_last_wins() {
    let parsed = parse(
        &headers("application/json"),
        DUPLICATED.as_bytes(),
        "Deployment",
    )
    .expect("parsed");
    assert_eq!(parsed.value["metadata"]["name"], "b");
    assert_eq!(parsed.value["spec"]["replicas"], 3);
    assert_eq!(
        parsed.duplicates,
        [
            r#"duplicate field "metadata.name""#,
            r#"duplicate field "spec.template.spec.containers[0].image""#,
            r#"duplicate field "spec.replicas""#,
        ]
    );
}

#[test]
fn yaml_is_checked_too() {
    let yaml = "kind: Deployment\nmetadata:\n  name: a\n  labels: {x: '1', x: '2'}\n";
    let parsed = parse(&headers("application/yaml"), yaml.as_bytes(), "Deployment").expect("yaml");
    assert_eq!(parsed.value["metadata"]["labels"], json!({"x": "2"}));
    assert_eq!(
        parsed.duplicates,
        [r#"duplicate field "metadata.labels.x""#]
    );
}

#[test]
fn malformed_bodies_are_bad_requests() {
    for (ct, body) in [
        ("application/json", "{"),
        ("application/json", "{} trailing"),
        ("application/json", "[1,2]"),
        ("application/yaml", "a: [1"),
    ] {
        let err = parse(&headers(ct), body.as_bytes(), "Pod").err();
        assert_eq!(err.map(|e| e.code()), Some(400), "{body}");
    }
}

#[test]
fn deeply_nested_bodies_are_bad_requests_not_a_crash() {
    let deep = "[".repeat(200_000);
    let err = parse(&headers("application/json"), deep.as_bytes(), "Pod").err();
    assert_eq!(err.map(|e| e.code()), Some(400));
}

#[test]
fn undecodable_bodies_name_the_kind_and_show_their_start() {
    let message = |ct: &'static str, body: &str| {
        parse(&headers(ct), body.as_bytes(), "Pod")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert_eq!(
        message("application/json", "{\"a\" 1}"),
        "the object provided is unrecognized (must be of type Pod): couldn't get version/kind; \
         json parse error: invalid character '1' after object key ({\"a\" 1})"
    );
    assert!(
        message("application/yaml", "a: [1").starts_with(
            "the object provided is unrecognized (must be of type Pod): error converting YAML \
             to JSON: yaml: "
        ),
        "{}",
        message("application/yaml", "a: [1")
    );
}
