//! What some kinds do beyond the generic store, as their upstream storage and conversion do,
//! through plain HTTP against the real binary: DELETE answering the deleted object, a
//! Secret's stringData merged into its data.

mod support;

use serde_json::{json, Value};
use support::start;

#[test]
fn deletes_answer_the_object_where_upstream_does() {
    let s = start();
    let ns = "/api/v1/namespaces/default";
    let created = |path: &str, body: Value| {
        let r = s.send_json("POST", &format!("{ns}/{path}"), &body);
        assert_eq!(r.status, 201, "{}", r.body);
    };
    created(
        "services",
        json!({"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}),
    );
    created("serviceaccounts", json!({"metadata": {"name": "sa"}}));
    created("configmaps", json!({"metadata": {"name": "cm"}}));
    // Services, service accounts (and pods, volumes, claims, storage classes) answer a
    // DELETE with the deleted object, as their upstream storage sets ReturnDeletedObject.
    for (path, kind) in [
        ("services/svc", "Service"),
        ("serviceaccounts/sa", "ServiceAccount"),
    ] {
        let r = s.request("DELETE", &format!("{ns}/{path}"), &[], b"");
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["kind"], kind, "{}", r.body);
    }
    let r = s.request("DELETE", &format!("{ns}/configmaps/cm"), &[], b"");
    assert_eq!(r.json()["kind"], "Status", "{}", r.body);
}

#[test]
fn secret_string_data_is_merged_into_data() {
    let s = start();
    let path = "/api/v1/namespaces/default/secrets";
    let r = s.send_json(
        "POST",
        path,
        &json!({"metadata": {"name": "s"}, "data": {"a": "YWFh", "b": "YmJi"},
                "stringData": {"b": "override", "c": "new"}}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let secret = r.json();
    assert_eq!(
        secret["data"],
        json!({"a": "YWFh", "b": "b3ZlcnJpZGU=", "c": "bmV3"})
    );
    assert!(secret.get("stringData").is_none(), "{secret}");
    let mut update = s.get(&format!("{path}/s")).json();
    update["stringData"] = json!({"a": "again"});
    let r = s.send_json("PUT", &format!("{path}/s"), &update);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["a"], "YWdhaW4=");
    assert!(s
        .get(&format!("{path}/s"))
        .json()
        .get("stringData")
        .is_none());
}
