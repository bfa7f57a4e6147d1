use super::*;
use serde_json::json;

#[test]
fn identifiers_are_upstreams_json_appliers_without_version() {
    let update = ManagerInfo {
        manager: "kubectl-create".into(),
        operation: UPDATE.into(),
        api_version: "apps/v1".into(),
        subresource: String::new(),
    };
    assert_eq!(
        update.identifier(),
        r#"{"manager":"kubectl-create","operation":"Update","apiVersion":"apps/v1"}"#
    );
    let apply = ManagerInfo {
        manager: "kubectl".into(),
        operation: APPLY.into(),
        api_version: "apps/v1".into(),
        subresource: "status".into(),
    };
    assert_eq!(
        apply.identifier(),
        r#"{"manager":"kubectl","operation":"Apply","subresource":"status"}"#
    );
    assert_eq!(ManagerInfo::parse(&update.identifier()), update);
    assert_eq!(ManagerInfo::parse("plain").manager, "plain");
}

#[test]
fn decode_then_encode_round_trips_and_sorts_as_upstream() {
    let entries = json!([
        {"manager": "b", "operation": "Update", "apiVersion": "v1",
         "time": "2026-01-01T00:00:02Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:data": {"f:x": {}}}},
        {"manager": "a", "operation": "Update", "apiVersion": "v1",
         "time": "2026-01-01T00:00:01Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:data": {"f:y": {}}}},
        {"manager": "z", "operation": "Apply", "apiVersion": "v1",
         "time": "2026-01-01T00:00:09Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:data": {"f:z": {}}}, "subresource": "status"}
    ]);
    let managed = decode(Some(&entries)).expect("decodes");
    assert_eq!(managed.fields.len(), 3);
    let out = encode(&managed);
    let names: Vec<&str> = out
        .iter()
        .map(|e| e["manager"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["z", "a", "b"], "Apply first, then by time");
    assert_eq!(out[0]["subresource"], "status");
    assert_eq!(
        out[0]["apiVersion"], "v1",
        "an applier's entry keeps its version"
    );
    assert_eq!(out[1]["fieldsV1"], json!({"f:data": {"f:y": {}}}));
    assert_eq!(decode(Some(&Value::Array(out))).expect("again"), managed);
}

#[test]
fn bad_entries_are_errors_not_panics() {
    for bad in [
        json!("x"),
        json!([1]),
        json!([{"manager": "a", "operation": "Update", "fieldsType": "FieldsV2"}]),
        json!([{"manager": 3, "fieldsType": "FieldsV1"}]),
        json!([{"manager": "a", "fieldsType": "FieldsV1", "fieldsV1": {"k:notjson": {}}}]),
    ] {
        assert!(decode(Some(&bad)).is_err(), "{bad}");
    }
    assert_eq!(decode(None), Ok(Managed::default()));
}

#[test]
fn reset_is_an_empty_list_or_one_empty_entry() {
    assert!(is_reset(Some(&json!([]))));
    assert!(is_reset(Some(&json!([{}]))));
    assert!(!is_reset(None));
    assert!(!is_reset(Some(&json!([{}, {}]))));
    assert!(!is_reset(Some(&json!([{"manager": "a"}]))));
}
