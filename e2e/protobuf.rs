//! Protobuf answers from the real binary, on both backends, as client-go asks for them
//! (`Accept: application/vnd.kubernetes.protobuf,application/json`): a get, a list, a watch
//! and an error, each read back with the API's protobuf definitions and compared with the
//! JSON answer for the same object; custom resources and Tables stay JSON.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use apiserver::api::protobuf;
use prost_reflect::{DescriptorPool, DynamicMessage, Value as Pb};
use serde_json::{json, Value};
use support::{start, start_on_etcd, Server};

const CLIENT_GO: &str = "application/vnd.kubernetes.protobuf,application/json";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// An answer's head and its body as bytes. HTTP/1.0, so the body is never chunked: it runs
/// to the end of the connection.
fn raw(s: &Server, path: &str, accept: &str) -> (String, Vec<u8>) {
    request(s, "GET", path, accept)
}

fn request(s: &Server, method: &str, path: &str, accept: &str) -> (String, Vec<u8>) {
    let mut stream = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let head = format!("{method} {path} HTTP/1.0\r\nHost: localhost\r\nAccept: {accept}\r\n\r\n");
    stream.write_all(head.as_bytes()).expect("send");
    let mut all = Vec::new();
    let _ = stream.read_to_end(&mut all);
    let split = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&all[..split]).into_owned();
    (head, all[split + 4..].to_vec())
}

fn pool() -> DescriptorPool {
    DescriptorPool::decode(&include_bytes!(concat!(env!("OUT_DIR"), "/kubernetes.fds"))[..])
        .expect("the descriptor set")
}

fn text(message: &DynamicMessage, field: &str) -> String {
    match message.get_field_by_name(field).as_deref() {
        Some(Pb::String(s)) => s.clone(),
        other => panic!("{field}: {other:?}"),
    }
}

/// The envelope's apiVersion and kind, read with the definitions alone.
fn envelope_type(body: &[u8]) -> (String, String) {
    let envelope = body.strip_prefix(b"k8s\0").expect("the magic");
    let unknown = DynamicMessage::decode(
        pool()
            .get_message_by_name("apimachinery.pkg.runtime.Unknown")
            .expect("Unknown"),
        envelope,
    )
    .expect("an Unknown");
    match unknown.get_field_by_name("typeMeta").as_deref() {
        Some(Pb::Message(t)) => (text(t, "apiVersion"), text(t, "kind")),
        other => panic!("typeMeta: {other:?}"),
    }
}

/// The JSON answer without its null members: protobuf has no null (a nil pointer or slice is
/// not written), and Go's JSON would not write them either (`omitempty`); the stored pod
/// carries one (`spec.initContainers`).
fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

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
    let envelope = DynamicMessage::decode(
        pool()
            .get_message_by_name("apimachinery.pkg.runtime.Unknown")
            .expect("Unknown"),
        &body[4..],
    )
    .expect("an Unknown");
    let message = match envelope.get_field_by_name("raw").as_deref() {
        Some(Pb::Bytes(bytes)) => bytes.clone(),
        other => panic!("raw: {other:?}"),
    };
    let pod = DynamicMessage::decode(
        pool().get_message_by_name("api.core.v1.Pod").expect("Pod"),
        message,
    )
    .expect("a Pod");
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
    let length = u32::from_be_bytes(body[..4].try_into().expect("a length")) as usize;
    let event = DynamicMessage::decode(
        pool()
            .get_message_by_name("apimachinery.pkg.apis.meta.v1.WatchEvent")
            .expect("WatchEvent"),
        &body[4..4 + length],
    )
    .expect("a WatchEvent");
    assert_eq!(text(&event, "type"), "ADDED");
    let object = match event.get_field_by_name("object").as_deref() {
        Some(Pb::Message(extension)) => match extension.get_field_by_name("raw").as_deref() {
            Some(Pb::Bytes(raw)) => raw.to_vec(),
            other => panic!("raw: {other:?}"),
        },
        other => panic!("object: {other:?}"),
    };
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
}
