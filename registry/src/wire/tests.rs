//! The expected bytes are written by hand from upstream's Go types (k8s.io/api core/v1 and
//! apimachinery meta/v1 types.go) and encoding/json's rules, not from the generated table.

use serde_json::json;

use super::*;

fn compact(value: &Value) -> String {
    let mut out = Vec::new();
    write(&mut out, value, Style::Compact).expect("encodes");
    String::from_utf8(out).expect("utf-8")
}

#[test]
fn a_configmap_as_created() {
    let cm = json!({
        "apiVersion": "v1",
        "data": {"b": "2", "a": "1"},
        "kind": "ConfigMap",
        "metadata": {
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": {"tier": "web", "app": "demo"},
            "managedFields": [{
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:a": {}, "f:b": {}}},
                "manager": "kubectl-create",
                "operation": "Update",
                "time": "2025-01-01T00:00:00Z",
            }],
            "name": "demo",
            "namespace": "default",
            "resourceVersion": "42",
            "uid": "0b5e3a55-8f6c-4d0c-9d8e-2f5f0e2a6c11",
        },
    });
    let expected = concat!(
        r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"demo","namespace":"default","#,
        r#""uid":"0b5e3a55-8f6c-4d0c-9d8e-2f5f0e2a6c11","resourceVersion":"42","#,
        r#""creationTimestamp":"2025-01-01T00:00:00Z","labels":{"app":"demo","tier":"web"},"#,
        r#""managedFields":[{"manager":"kubectl-create","operation":"Update","apiVersion":"v1","#,
        r#""time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","#,
        r#""fieldsV1":{"f:data":{".":{},"f:a":{},"f:b":{}}}}]},"data":{"a":"1","b":"2"}}"#,
    );
    assert_eq!(compact(&cm), expected);
    let body = body(&cm, Style::Compact).expect("encodes");
    assert_eq!(body, format!("{expected}\n").into_bytes());
}

#[test]
fn a_pod_as_defaulted() {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "uid": "u1",
                     "resourceVersion": "7", "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {
            "containers": [{
                "image": "nginx", "imagePullPolicy": "Always", "name": "web",
                "ports": [{"protocol": "TCP", "containerPort": 80}],
                "resources": {"limits": {"memory": "64Mi", "cpu": "100m"}},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready",
                             "operator": "Exists", "tolerationSeconds": 300}],
            "volumes": [{"emptyDir": {}, "name": "data"}],
        },
        "status": {"qosClass": "Burstable", "phase": "Pending"},
    });
    let expected = concat!(
        r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"default","#,
        r#""uid":"u1","resourceVersion":"7","creationTimestamp":"2025-01-01T00:00:00Z"},"#,
        r#""spec":{"volumes":[{"name":"data","emptyDir":{}}],"containers":[{"name":"web","#,
        r#""image":"nginx","ports":[{"containerPort":80,"protocol":"TCP"}],"#,
        r#""resources":{"limits":{"cpu":"100m","memory":"64Mi"}},"#,
        r#""volumeMounts":[{"name":"data","mountPath":"/data"}],"#,
        r#""terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","#,
        r#""imagePullPolicy":"Always"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"#,
        r#""dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","#,
        r#""securityContext":{},"schedulerName":"default-scheduler","#,
        r#""tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","#,
        r#""effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"#,
        r#""preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"Pending","qosClass":"Burstable"}}"#,
    );
    assert_eq!(compact(&pod), expected);
}

#[test]
fn a_status() {
    let status = json!({
        "apiVersion": "v1", "code": 404,
        "details": {"kind": "configmaps", "name": "nope"},
        "kind": "Status", "message": "configmaps \"nope\" not found",
        "metadata": {}, "reason": "NotFound", "status": "Failure",
    });
    assert_eq!(
        compact(&status),
        concat!(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","#,
            r#""message":"configmaps \"nope\" not found","reason":"NotFound","#,
            r#""details":{"name":"nope","kind":"configmaps"},"code":404}"#
        )
    );
}

#[test]
fn custom_resources_are_maps() {
    let widget = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "uid": "u", "namespace": "default", "generation": 1},
        "spec": {"size": 3, "color": "red"},
    });
    assert_eq!(
        compact(&widget),
        concat!(
            r#"{"apiVersion":"example.com/v1","kind":"Widget","#,
            r#""metadata":{"generation":1,"name":"w","namespace":"default","uid":"u"},"#,
            r#""spec":{"color":"red","size":3}}"#
        )
    );
}

#[test]
fn list_items_of_built_in_kinds_carry_no_type_meta() {
    let item = json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "a"}, "data": {"k": "v"}});
    let mut out = Vec::new();
    write_item(&mut out, &item, type_of(&item), Style::Compact).expect("encodes");
    assert_eq!(out, br#"{"metadata":{"name":"a"},"data":{"k":"v"}}"#);
    let list = json!({"apiVersion": "v1", "kind": "ConfigMapList",
                      "metadata": {"resourceVersion": "5", "continue": "c"}, "items": [item]});
    assert_eq!(
        compact(&list),
        concat!(
            r#"{"kind":"ConfigMapList","apiVersion":"v1","#,
            r#""metadata":{"resourceVersion":"5","continue":"c"},"#,
            r#""items":[{"metadata":{"name":"a"},"data":{"k":"v"}}]}"#
        )
    );
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {}});
    let mut out = Vec::new();
    write_item(&mut out, &widget, type_of(&widget), Style::Compact).expect("encodes");
    assert_eq!(
        out,
        br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{}}"#
    );
}

#[test]
fn embedded_objects_are_ordered_by_their_own_kind() {
    let table = json!({
        "apiVersion": "meta.k8s.io/v1", "kind": "Table",
        "columnDefinitions": [{"description": "d", "format": "name", "name": "Name",
                               "priority": 0, "type": "string"}],
        "metadata": {"resourceVersion": "9"},
        "rows": [{"cells": ["a"], "object": {
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": {"uid": "u", "name": "a"}}}],
    });
    assert_eq!(
        compact(&table),
        concat!(
            r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"#,
            r#""columnDefinitions":[{"name":"Name","type":"string","format":"name","#,
            r#""description":"d","priority":0}],"rows":[{"cells":["a"],"object":{"#,
            r#""kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","#,
            r#""metadata":{"name":"a","uid":"u"}}}]}"#
        )
    );
}

#[test]
fn partial_object_metadata_list_items_keep_their_type() {
    let list = json!({
        "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
        "metadata": {"resourceVersion": "9"},
        "items": [{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                   "metadata": {"name": "a"}}],
    });
    assert_eq!(
        compact(&list),
        concat!(
            r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","#,
            r#""metadata":{"resourceVersion":"9"},"items":[{"kind":"PartialObjectMetadata","#,
            r#""apiVersion":"meta.k8s.io/v1","metadata":{"name":"a"}}]}"#
        )
    );
    // A typed list's items have none.
    let pods = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {},
        "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}}]});
    assert_eq!(
        compact(&pods),
        r#"{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a"}}]}"#
    );
}

#[test]
fn strings_and_numbers_as_go_writes_them() {
    let cm = json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {
        "html": "<a href=\"x\">&</a>", "sep": "a\u{2028}b\u{2029}c", "ctl": "\u{1}\t\u{8}\u{c}",
        "uni": "é😀", "del": "\u{7f}",
    }});
    assert_eq!(
        compact(&cm),
        concat!(
            r#"{"kind":"ConfigMap","apiVersion":"v1","data":{"ctl":"\u0001\t\b\f","del":""#,
            "\u{7f}",
            r#"","html":"\u003ca href=\"x\"\u003e\u0026\u003c/a\u003e","sep":"a\u2028b\u2029c","#,
            r#""uni":"é😀"}}"#
        )
    );
    let numbers = json!([1, -2, 0.5, 3.0, 1e21, 1.5e-7, 123456789.25, 1e20, 0.000001]);
    assert_eq!(
        compact(&numbers),
        "[1,-2,0.5,3,1e+21,1.5e-7,123456789.25,100000000000000000000,0.000001]"
    );
}

#[test]
fn pretty_is_marshal_indent() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "a", "labels": {}}, "data": {"k": "v"},
                    "binaryData": {}});
    let body = body(&cm, Style::Pretty).expect("encodes");
    let expected = "{\n  \"kind\": \"ConfigMap\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {\n    \"name\": \"a\",\n    \"labels\": {}\n  },\n  \"data\": {\n    \"k\": \"v\"\n  },\n  \"binaryData\": {}\n}";
    assert_eq!(String::from_utf8(body).expect("utf-8"), expected);
}

#[test]
fn undeclared_fields_follow_declared_ones() {
    let cm = json!({"kind": "ConfigMap", "apiVersion": "v1", "zeta": 1, "alpha": 2,
                    "data": {}});
    assert_eq!(
        compact(&cm),
        r#"{"kind":"ConfigMap","apiVersion":"v1","data":{},"alpha":2,"zeta":1}"#
    );
}
