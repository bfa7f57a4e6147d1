use axum::http::{header, HeaderMap, HeaderValue};
use registry::options::FieldValidation;
use registry::{warning, Catalogue};
use serde_json::json;

use super::Body;

fn headers(ct: &'static str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    h
}

const DUPLICATED: &str = r#"{"kind":"Deployment","metadata":{"name":"a","name":"b"},
  "spec":{"replicas":1,"template":{"spec":{"containers":[{"name":"x","image":"i","image":"j"}]}},"replicas":3}}"#;

fn parse(
    validation: FieldValidation,
    ct: &'static str,
    body: &str,
) -> (
    Result<serde_json::Value, registry::RegistryError>,
    Vec<String>,
) {
    let catalogue = Catalogue::builtin();
    let info = catalogue
        .lookup("apps", "v1", "deployments")
        .expect("deployments");
    let body_parser = Body {
        info: &info,
        validation,
    };
    futures::executor::block_on(warning::collect(async {
        body_parser.parse(&headers(ct), body.as_bytes())
    }))
}

#[test]
fn duplicates_warn_by_default_and_the_last_wins() {
    let (value, warnings) = parse(FieldValidation::Warn, "application/json", DUPLICATED);
    let value = value.expect("parsed");
    assert_eq!(value["metadata"]["name"], "b");
    assert_eq!(value["spec"]["replicas"], 3);
    assert_eq!(
        warnings,
        [
            r#"duplicate field "metadata.name""#,
            r#"duplicate field "spec.template.spec.containers[0].image""#,
            r#"duplicate field "spec.replicas""#,
        ]
    );
}

#[test]
fn strict_refuses_naming_every_duplicate() {
    let (value, warnings) = parse(FieldValidation::Strict, "application/json", DUPLICATED);
    let err = value.expect_err("strict");
    assert_eq!(err.code(), 400);
    let message = err.to_string();
    assert!(
        message.starts_with(r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: duplicate field "metadata.name""#),
        "{message}"
    );
    assert!(
        message.contains(r#"duplicate field "spec.replicas""#),
        "{message}"
    );
    assert!(warnings.is_empty());
}

#[test]
fn ignore_is_silent_and_yaml_is_checked_too() {
    let (value, warnings) = parse(FieldValidation::Ignore, "application/json", DUPLICATED);
    assert!(value.is_ok());
    assert!(warnings.is_empty());
    let yaml = "kind: Deployment\nmetadata:\n  name: a\n  labels: {x: '1', x: '2'}\n";
    let (value, warnings) = parse(FieldValidation::Warn, "application/yaml", yaml);
    assert_eq!(
        value.expect("yaml")["metadata"]["labels"],
        json!({"x": "2"})
    );
    assert_eq!(warnings, [r#"duplicate field "metadata.labels.x""#]);
}

#[test]
fn malformed_bodies_are_bad_requests() {
    for (ct, body) in [
        ("application/json", "{"),
        ("application/json", "{} trailing"),
        ("application/json", "[1,2]"),
        ("application/yaml", "a: [1"),
    ] {
        let (value, _) = parse(FieldValidation::Warn, ct, body);
        assert_eq!(value.expect_err(body).code(), 400, "{body}");
    }
}
