//! Protobuf answers from the real binary, on both backends, as client-go asks for them
//! (`Accept: application/vnd.kubernetes.protobuf,application/json`): a get, a list, a watch
//! and an error, each read back with the API's protobuf definitions and compared with the
//! JSON answer for the same object; custom resources and Tables stay JSON (but for their
//! metadata and scale). The rest (subresources, reviews, metadata, Accept) is in
//! `protobuf_forms.rs`.

mod support;
#[path = "support/protobuf_wire.rs"]
mod wire;

use std::time::Duration;

use apiserver::api::protobuf;
use serde_json::{json, Value};
use support::{start, start_on_etcd, Server};
use wire::*;

fn protobuf_answers(s: &Server) {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "pb", "labels": {"app": "pb"}, "annotations": {"a": ""}},
        // Another scheduler's pod: nothing changes it while the test reads it.
        "spec": {"schedulerName": "test-scheduler", "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}],
                                 "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}}}]}});
    assert_eq!(
        s.send_json("POST", "/api/v1/namespaces/default/pods", &pod)
            .status,
        201
    );
    let path = "/api/v1/namespaces/default/pods/pb";
    let as_json = without_nulls(s.get(path).json());

    // A get: the object's protobuf, the same object as the JSON answer.
    let (head, body) = raw(s, path, CLIENT_GO);
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("content-type: {PROTOBUF}")),
        "{head}"
    );
    assert_eq!(envelope_type(&body), ("v1".into(), "Pod".into()));
    assert_eq!(protobuf::decode(&body).expect("decodes"), as_json);
    // Byte for byte what the encoder makes of the JSON answer.
    assert_eq!(protobuf::encode::encode(&as_json).expect("encodes"), body);
    // And independently of our decoder: fields read with the definitions alone.
    let pod = message_of(&body, "api.core.v1.Pod");
    let pod = serde_json::to_value(&pod).expect("as protobuf JSON");
    assert_eq!(pod["metadata"]["uid"], as_json["metadata"]["uid"]);
    assert_eq!(
        pod["metadata"]["resourceVersion"],
        as_json["metadata"]["resourceVersion"]
    );
    assert_eq!(pod["spec"]["containers"][0]["image"], "nginx");
    assert_eq!(
        pod["spec"]["containers"][0]["resources"]["limits"]["cpu"]["string"],
        "500m"
    );

    // A list: PodList, its items those of the JSON list.
    let list_path = "/api/v1/namespaces/default/pods";
    let json_list = without_nulls(s.get(list_path).json());
    let (head, body) = raw(s, list_path, CLIENT_GO);
    assert!(head.contains(PROTOBUF), "{head}");
    assert_eq!(envelope_type(&body), ("v1".into(), "PodList".into()));
    let list = protobuf::decode(&body).expect("the list decodes");
    assert_eq!(list["items"], json_list["items"]);
    assert_eq!(
        list["metadata"]["resourceVersion"].as_str().is_some(),
        json_list["metadata"]["resourceVersion"].as_str().is_some()
    );

    // A watch: length-delimited WatchEvents without an envelope, the object inside with one.
    let (head, body) = raw(
        s,
        &format!("{list_path}?watch=true&timeoutSeconds=1"),
        CLIENT_GO,
    );
    assert!(
        head.contains("application/vnd.kubernetes.protobuf;stream=watch"),
        "{head}"
    );
    let (event_type, object) = first_watch_event(&body);
    assert_eq!(event_type, "ADDED");
    assert_eq!(
        protobuf::decode(&object).expect("the event's object"),
        as_json
    );

    // An error: a Status in protobuf, for a client that asked for protobuf.
    let (head, body) = raw(s, "/api/v1/namespaces/default/pods/nope", CLIENT_GO);
    assert!(head.contains(" 404 "), "{head}");
    assert_eq!(envelope_type(&body), ("v1".into(), "Status".into()));
    let status = protobuf::decode(&body).expect("a Status");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["code"], 404);

    // Tables are JSON, whatever comes first.
    let (head, body) = raw(
        s,
        list_path,
        "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json;as=Table;g=meta.k8s.io;v=v1",
    );
    assert!(head.contains("application/json"), "{head}");
    let table: Value = serde_json::from_slice(&body).expect("a JSON Table");
    assert_eq!(table["kind"], "Table");

    // Delete answers the object in protobuf too.
    let (status, body) = delete(s, path);
    assert_eq!(status, 200);
    assert_eq!(
        protobuf::decode(&body).expect("decodes")["metadata"]["name"],
        "pb"
    );
}

fn delete(s: &Server, path: &str) -> (u16, Vec<u8>) {
    let (head, body) = request(s, "DELETE", path, CLIENT_GO);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, body)
}

#[test]
fn protobuf_answers_on_the_embedded_store() {
    protobuf_answers(&start());
}

#[test]
fn protobuf_answers_on_etcd() {
    protobuf_answers(&start_on_etcd());
}

#[test]
fn custom_resources_answer_json_or_406() {
    let s = start();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "subresources": {"scale": {
                                   "specReplicasPath": ".spec.replicas",
                                   "statusReplicasPath": ".status.replicas"}},
                               "schema": {"openAPIV3Schema": {"type": "object",
                                   "x-kubernetes-preserve-unknown-fields": true}}}]}});
    assert_eq!(
        s.send_json(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd
        )
        .status,
        201
    );
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    let mut established = false;
    for _ in 0..100 {
        if s.get(path).status == 200 {
            established = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(established, "the CRD is never served");
    let (head, _) = raw(&s, path, PROTOBUF);
    assert!(head.contains(" 406 "), "{head}");
    let (head, body) = raw(&s, path, CLIENT_GO);
    assert!(head.contains(" 200 "), "{head}");
    assert!(head.contains("application/json"), "{head}");
    let list: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(list["kind"], "WidgetList");
    // Their metadata has a protobuf form (the garbage collector's metadata informers).
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"replicas": 2}});
    assert_eq!(s.send_json("POST", path, &widget).status, 201);
    let (head, body) = raw(&s, path, &format!("{PROTOBUF};{POM_LIST}"));
    assert!(head.contains(" 200 "), "{head}");
    assert_eq!(
        envelope_type(&body),
        ("meta.k8s.io/v1".into(), "PartialObjectMetadataList".into())
    );
    let partial = protobuf::decode(&body).expect("decodes");
    assert_eq!(partial["items"][0]["metadata"]["name"], "w");
    // So has their scale: an autoscaling/v1 Scale.
    let (head, body) = raw(&s, &format!("{path}/w/scale"), CLIENT_GO);
    assert!(head.contains(" 200 "), "{head}");
    assert_eq!(
        envelope_type(&body),
        ("autoscaling/v1".into(), "Scale".into())
    );
    assert_eq!(
        protobuf::decode(&body).expect("a Scale")["spec"]["replicas"],
        2
    );
    // And an error is a Status, which has one too: protobuf for a client asking for it.
    let (head, body) = raw(&s, &format!("{path}/nope"), CLIENT_GO);
    assert!(head.contains(" 404 "), "{head}");
    assert_eq!(envelope_type(&body), ("v1".into(), "Status".into()));
}
