use chrono::TimeZone;
use serde_json::json;

use super::*;

fn event(level: Level) -> Event {
    let at = Utc
        .with_ymd_and_hms(2024, 5, 6, 7, 8, 9)
        .single()
        .expect("a time")
        + chrono::Duration::microseconds(12_345);
    Event {
        kind: "Event",
        api_version: "audit.k8s.io/v1",
        level,
        audit_id: "0a1b2c3d-0000-4000-8000-000000000001".into(),
        stage: Stage::ResponseComplete,
        request_uri: "/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create&fieldValidation=Strict".into(),
        verb: "create".into(),
        user: User {
            username: "system:admin".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
            ..Default::default()
        },
        impersonated_user: None,
        source_ips: vec!["127.0.0.1".into()],
        user_agent: "kubectl/v1.31.0 (linux/amd64) kubernetes/abc".into(),
        object_ref: Some(ObjectReference {
            resource: "configmaps".into(),
            namespace: "default".into(),
            api_version: "v1".into(),
            ..Default::default()
        }),
        response_status: Some(ResponseStatus::code(201)),
        request_object: None,
        response_object: None,
        request_received_timestamp: at,
        stage_timestamp: at + chrono::Duration::microseconds(2_000),
        annotations: BTreeMap::from([
            ("authorization.k8s.io/reason".to_string(), String::new()),
            ("authorization.k8s.io/decision".to_string(), "allow".to_string()),
        ]),
    }
}

fn body(json: &str) -> Body {
    Body {
        chunks: json
            .as_bytes()
            .chunks(7)
            .map(Bytes::copy_from_slice)
            .collect(),
        ..Default::default()
    }
}

#[test]
fn serializes_as_upstream_writes_it() {
    let line = event(Level::Metadata).to_line().expect("serializes");
    assert_eq!(
        line,
        concat!(
            r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","#,
            r#""auditID":"0a1b2c3d-0000-4000-8000-000000000001","stage":"ResponseComplete","#,
            r#""requestURI":"/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create\u0026fieldValidation=Strict","#,
            r#""verb":"create","user":{"username":"system:admin","groups":["system:masters","system:authenticated"]},"#,
            r#""sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.31.0 (linux/amd64) kubernetes/abc","#,
            r#""objectRef":{"resource":"configmaps","namespace":"default","apiVersion":"v1"},"#,
            r#""responseStatus":{"metadata":{},"code":201},"#,
            r#""requestReceivedTimestamp":"2024-05-06T07:08:09.012345Z","stageTimestamp":"2024-05-06T07:08:09.014345Z","#,
            r#""annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}"#
        )
    );
    let parsed: Value = serde_json::from_str(&line).expect("valid JSON");
    assert_eq!(
        parsed["requestURI"],
        "/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create&fieldValidation=Strict"
    );
}

#[test]
fn a_create_body_names_the_object_and_is_recorded_from_level_request() {
    let create = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"default",
        "managedFields":[{"manager":"kubectl"}]},"data":{"a":"<b>"}}"#;
    let mut metadata = event(Level::Metadata);
    metadata.log_request(&body(create), false, false);
    let reference = metadata.object_ref.clone().expect("a reference");
    assert_eq!(
        (reference.name.as_str(), reference.namespace.as_str()),
        ("web", "default")
    );
    assert!(metadata.request_object.is_none(), "no body at Metadata");

    let mut request = event(Level::Request);
    request.log_request(&body(create), false, true);
    let object = request.request_object.clone().expect("recorded");
    assert_eq!(object["data"]["a"], "<b>");
    assert!(
        object["metadata"].get("managedFields").is_none(),
        "omitManagedFields"
    );
    // The body, pretty or not, is one compact line in the log.
    let line = request.to_line().expect("line");
    assert!(!line.contains('\n'));
    assert!(line.contains(r#""data":{"a":"\u003cb\u003e"}"#), "{line}");
}

#[test]
fn a_patch_is_recorded_as_sent_and_names_nothing() {
    let mut e = event(Level::Request);
    e.log_request(&body(r#"{"metadata":{"name":"other"}}"#), true, true);
    assert_eq!(e.object_ref.as_ref().map(|r| r.name.as_str()), Some(""));
    assert_eq!(
        e.request_object,
        Some(json!({"metadata": {"name": "other"}}))
    );
    let mut yaml = event(Level::Request);
    yaml.log_request(
        &Body {
            format: Format::Yaml,
            ..body("metadata:\n  name: applied\n")
        },
        true,
        false,
    );
    assert_eq!(
        yaml.request_object,
        Some(json!({"metadata": {"name": "applied"}}))
    );
}

#[test]
fn a_status_body_fills_the_response_status_at_every_level() {
    let status = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
        "message":"configmaps \"x\" not found","reason":"NotFound",
        "details":{"name":"x","kind":"configmaps"},"code":404}"#;
    let mut e = event(Level::Metadata);
    e.response_status = Some(ResponseStatus::code(404));
    e.log_response(&body(status), false);
    let rs = e.response_status.clone().expect("status");
    assert_eq!(
        serde_json::to_value(&rs).expect("json"),
        json!({"metadata": {}, "status": "Failure", "message": "configmaps \"x\" not found",
               "reason": "NotFound", "details": {"name": "x", "kind": "configmaps"}, "code": 404})
    );
    assert!(e.response_object.is_none());
    let mut full = event(Level::RequestResponse);
    full.log_response(&body(status), false);
    assert_eq!(
        full.response_object.expect("recorded")["reason"],
        "NotFound"
    );
}

#[test]
fn response_objects_lose_managed_fields_of_items_when_asked() {
    let list = r#"{"kind":"SecretList","items":[{"metadata":{"name":"a","managedFields":[{}]}}],
        "metadata":{"resourceVersion":"5"}}"#;
    let mut e = event(Level::RequestResponse);
    e.log_response(&body(list), true);
    let object = e.response_object.expect("recorded");
    assert_eq!(object["items"][0]["metadata"], json!({"name": "a"}));
    let mut kept = event(Level::RequestResponse);
    kept.log_response(&body(list), false);
    assert!(
        kept.response_object.expect("recorded")["items"][0]["metadata"]["managedFields"].is_array()
    );
}

#[test]
fn an_oversized_body_is_left_out_and_marked() {
    let mut e = event(Level::RequestResponse);
    e.log_response(
        &Body {
            truncated: true,
            ..Default::default()
        },
        false,
    );
    assert!(e.response_object.is_none());
    assert_eq!(
        e.annotations.get(TRUNCATED).map(String::as_str),
        Some("true")
    );
    // Something that is not JSON is simply not recorded.
    let mut garbage = event(Level::RequestResponse);
    garbage.log_response(&body("not json"), false);
    assert!(garbage.response_object.is_none() && !garbage.annotations.contains_key(TRUNCATED));
}
