//! Protobuf answers from the real binary, on both backends, as client-go asks for them
//! (`Accept: application/vnd.kubernetes.protobuf,application/json`): a get, a list, a watch
//! and an error, each read back with the API's protobuf definitions and compared with the
//! JSON answer for the same object; custom resources and Tables stay JSON. Then what else
//! upstream answers in protobuf: subresources, the create-only reviews, componentstatuses,
//! PartialObjectMetadata(List); and Accept headers with qualities.

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
    send(s, method, path, accept, ("application/json", b""))
}

/// A request with a body of a content type.
fn send(
    s: &Server,
    method: &str,
    path: &str,
    accept: &str,
    (content_type, body): (&str, &[u8]),
) -> (String, Vec<u8>) {
    let mut stream = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let head = format!(
        "{method} {path} HTTP/1.0\r\nHost: localhost\r\nAccept: {accept}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("send");
    stream.write_all(body).expect("send the body");
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

/// The status code of an answer's head.
fn code(head: &str) -> u16 {
    head.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// POSTs `body` as JSON; the answer's head and protobuf object, checked to be `kind`.
fn post(s: &Server, path: &str, body: &Value, api_version: &str, kind: &str) -> Value {
    let json = serde_json::to_vec(body).expect("JSON");
    let (head, answer) = send(s, "POST", path, CLIENT_GO, ("application/json", &json));
    assert_eq!(
        code(&head),
        201,
        "{path}: {head}{}",
        String::from_utf8_lossy(&answer)
    );
    assert!(head.contains(PROTOBUF), "{path}: {head}");
    assert_eq!(envelope_type(&answer), (api_version.into(), kind.into()));
    protobuf::decode(&answer).expect("decodes")
}

/// What kube-apiserver answers in protobuf besides a resource's own verbs: subresources, the
/// create-only reviews, componentstatuses, and objects cut down to their metadata.
fn subresources_reviews_and_metadata(s: &Server) {
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"schedulerName": "test-scheduler",
                                       "containers": [{"name": "c", "image": "nginx"}]}}}});
    let r = s.send_json(
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        &deployment,
    );
    assert_eq!(r.status, 201, "{}", r.body);

    // scale: an autoscaling/v1 Scale, the JSON answer's object (but for what the deployment
    // controller changes meanwhile).
    let scale = "/apis/apps/v1/namespaces/default/deployments/web/scale";
    let (head, body) = raw(s, scale, CLIENT_GO);
    assert_eq!(code(&head), 200, "{head}");
    assert_eq!(
        envelope_type(&body),
        ("autoscaling/v1".into(), "Scale".into())
    );
    let decoded = protobuf::decode(&body).expect("a Scale");
    let as_json = without_nulls(s.get(scale).json());
    assert_eq!(decoded["spec"], json!({"replicas": 1}));
    assert_eq!(decoded["status"]["selector"], "app=web");
    assert_eq!(decoded["metadata"]["uid"], as_json["metadata"]["uid"]);
    assert_eq!(decoded["metadata"]["name"], "web");

    // status: the parent object.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sub"},
        "spec": {"schedulerName": "test-scheduler",
                 "containers": [{"name": "c", "image": "nginx"}]}});
    let pods = "/api/v1/namespaces/default/pods";
    assert_eq!(s.send_json("POST", pods, &pod).status, 201);
    let (head, body) = raw(s, &format!("{pods}/sub/status"), CLIENT_GO);
    assert_eq!(code(&head), 200, "{head}");
    assert_eq!(envelope_type(&body), ("v1".into(), "Pod".into()));

    // binding and eviction: a Status; token: a TokenRequest.
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "sub"},
        "target": {"kind": "Node", "name": "n1"}});
    let status = post(s, &format!("{pods}/sub/binding"), &binding, "v1", "Status");
    assert_eq!(status["status"], "Success");
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": "sub", "namespace": "default"}});
    let status = post(
        s,
        &format!("{pods}/sub/eviction"),
        &eviction,
        "v1",
        "Status",
    );
    assert_eq!(status["status"], "Success");
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "pb"}});
    let accounts = "/api/v1/namespaces/default/serviceaccounts";
    assert_eq!(s.send_json("POST", accounts, &account).status, 201);
    let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"audiences": ["pb"]}});
    let token = format!("{accounts}/pb/token");
    let issued = post(
        s,
        &token,
        &request,
        "authentication.k8s.io/v1",
        "TokenRequest",
    );
    let jwt = issued["status"]["token"]
        .as_str()
        .expect("a token")
        .to_string();

    // The create-only reviews, one of them sent in protobuf as client-go's typed clients do.
    let review = post(
        s,
        "/apis/authentication.k8s.io/v1/tokenreviews",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                "spec": {"token": jwt, "audiences": ["pb"]}}),
        "authentication.k8s.io/v1",
        "TokenReview",
    );
    assert_eq!(review["status"]["authenticated"], true, "{review}");
    assert_eq!(
        review["status"]["user"]["username"],
        "system:serviceaccount:default:pb"
    );
    let attributes = json!({"verb": "get", "resource": "pods", "namespace": "default"});
    let access = json!({"apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": attributes}});
    let (head, body) = send(
        s,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        CLIENT_GO,
        (
            PROTOBUF,
            &protobuf::encode::encode(&access).expect("encodes"),
        ),
    );
    assert_eq!(code(&head), 201, "{head}");
    assert_eq!(
        envelope_type(&body),
        (
            "authorization.k8s.io/v1".into(),
            "SelfSubjectAccessReview".into()
        )
    );
    assert_eq!(
        protobuf::decode(&body).expect("decodes")["status"]["allowed"],
        true
    );
    let subject = json!({"resourceAttributes": attributes, "user": "jane"});
    for (path, kind, spec) in [
        (
            "subjectaccessreviews",
            "SubjectAccessReview",
            subject.clone(),
        ),
        (
            "namespaces/default/localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            subject,
        ),
        (
            "selfsubjectrulesreviews",
            "SelfSubjectRulesReview",
            json!({"namespace": "default"}),
        ),
    ] {
        let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": kind,
            "metadata": {"namespace": if kind.starts_with("Local") { "default" } else { "" }},
            "spec": spec});
        let path = format!("/apis/authorization.k8s.io/v1/{path}");
        post(s, &path, &body, "authorization.k8s.io/v1", kind);
    }
    let whoami = post(
        s,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
        "authentication.k8s.io/v1",
        "SelfSubjectReview",
    );
    assert!(
        whoami["status"]["userInfo"]["username"].is_string(),
        "{whoami}"
    );

    // componentstatuses.
    let (head, body) = raw(s, "/api/v1/componentstatuses", CLIENT_GO);
    assert_eq!(code(&head), 200, "{head}");
    assert_eq!(
        envelope_type(&body),
        ("v1".into(), "ComponentStatusList".into())
    );
    let statuses = protobuf::decode(&body).expect("decodes");
    assert!(statuses["items"]
        .as_array()
        .expect("items")
        .iter()
        .any(|c| c["metadata"]["name"] == "scheduler"));

    partial_object_metadata(s);
    negotiation(s);
    kubectl_still_works(s);
}

const POM: &str = "as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const POM_LIST: &str = "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// Metadata clients (kube-controller-manager's metadata informers) ask for
/// `application/vnd.kubernetes.protobuf;as=PartialObjectMetadata[List]`.
fn partial_object_metadata(s: &Server) {
    // An object nothing changes meanwhile.
    let account = "/api/v1/namespaces/default/serviceaccounts/pb";
    let metadata = s.get(account).json()["metadata"].clone();
    let (head, body) = raw(s, account, &format!("{PROTOBUF};{POM},application/json"));
    assert_eq!(code(&head), 200, "{head}");
    assert!(head.contains(PROTOBUF), "{head}");
    assert_eq!(
        envelope_type(&body),
        ("meta.k8s.io/v1".into(), "PartialObjectMetadata".into())
    );
    let partial = protobuf::decode(&body).expect("decodes");
    assert_eq!(partial["metadata"], without_nulls(metadata.clone()));
    assert!(partial.get("spec").is_none());

    let path = "/apis/apps/v1/namespaces/default/deployments/web";
    let list = "/apis/apps/v1/namespaces/default/deployments";
    for (version, item) in [("v1", "meta.k8s.io/v1"), ("v1beta1", "meta.k8s.io/v1beta1")] {
        let accept = format!("{PROTOBUF};as=PartialObjectMetadataList;g=meta.k8s.io;v={version}");
        let (head, body) = raw(s, list, &accept);
        assert_eq!(code(&head), 200, "{head}");
        assert_eq!(
            envelope_type(&body),
            (item.into(), "PartialObjectMetadataList".into())
        );
        let partial = protobuf::decode(&body).expect("decodes");
        assert_eq!(partial["items"][0]["metadata"]["name"], "web");
        assert!(partial["metadata"]["resourceVersion"].is_string());
    }
    // In JSON: upstream's order, each item with its own kind.
    let (head, body) = raw(s, list, &format!("application/json;{POM_LIST}"));
    assert_eq!(code(&head), 200, "{head}");
    let text = String::from_utf8_lossy(&body);
    assert!(
        text.starts_with(r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"#),
        "{text}"
    );
    assert!(
        text.contains(r#""items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"web","#),
        "{text}"
    );

    // A watch: each event's object cut down.
    let (head, body) = raw(
        s,
        &format!("{list}?watch=true&timeoutSeconds=1"),
        &format!("{PROTOBUF};{POM}"),
    );
    assert!(head.contains("stream=watch"), "{head}");
    let length = u32::from_be_bytes(body[..4].try_into().expect("a length")) as usize;
    let event = DynamicMessage::decode(
        pool()
            .get_message_by_name("apimachinery.pkg.apis.meta.v1.WatchEvent")
            .expect("WatchEvent"),
        &body[4..4 + length],
    )
    .expect("a WatchEvent");
    let object = match event.get_field_by_name("object").as_deref() {
        Some(Pb::Message(extension)) => match extension.get_field_by_name("raw").as_deref() {
            Some(Pb::Bytes(raw)) => raw.to_vec(),
            other => panic!("raw: {other:?}"),
        },
        other => panic!("object: {other:?}"),
    };
    assert_eq!(
        envelope_type(&object),
        ("meta.k8s.io/v1".into(), "PartialObjectMetadata".into())
    );

    // The wrong one of the two is 406, in JSON (the error's own negotiation has no
    // transformed forms).
    let (head, body) = raw(s, path, &format!("{PROTOBUF};{POM_LIST}"));
    assert_eq!(code(&head), 406, "{head}");
    let status: Value = serde_json::from_slice(&body).expect("a JSON Status");
    assert_eq!(
        status["message"],
        "you requested PartialObjectMetadataList, but the requested object is not a list (*apps.Deployment)"
    );
    let (head, body) = raw(s, list, &format!("application/json;{POM}"));
    assert_eq!(code(&head), 406, "{head}");
    let status: Value = serde_json::from_slice(&body).expect("a JSON Status");
    assert_eq!(
        status["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*apps.DeploymentList)"
    );
}

/// Accept headers with several types and qualities, as goautoneg orders them.
fn negotiation(s: &Server) {
    let path = "/api/v1/namespaces/default/serviceaccounts/pb";
    for (accept, content_type) in [
        (
            "application/vnd.kubernetes.protobuf;q=0.9, application/json;q=0.5",
            PROTOBUF,
        ),
        (
            "application/json;q=0.9, application/vnd.kubernetes.protobuf;q=0.5",
            "application/json",
        ),
        ("*/*;q=0.1", "application/json"),
        ("text/html, application/yaml;q=0.2", "application/yaml"),
        ("*/*, application/vnd.kubernetes.protobuf", PROTOBUF),
    ] {
        let (head, _) = raw(s, path, accept);
        assert_eq!(code(&head), 200, "{accept}: {head}");
        assert!(
            head.to_ascii_lowercase()
                .contains(&format!("content-type: {content_type}")),
            "{accept}: {head}"
        );
    }
    // YAML has no streaming form: a watch in YAML is 406 (its Status in YAML).
    let (head, body) = raw(
        s,
        "/api/v1/namespaces/default/serviceaccounts?watch=true&timeoutSeconds=1",
        "application/yaml",
    );
    assert_eq!(code(&head), 406, "{head}");
    let text = String::from_utf8_lossy(&body);
    assert!(
        text.contains("only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"),
        "{text}"
    );
    // A Table in YAML, not in protobuf.
    let (head, body) = raw(
        s,
        "/api/v1/namespaces/default/serviceaccounts",
        "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1, application/yaml;as=Table;g=meta.k8s.io;v=v1;q=0.5",
    );
    assert_eq!(code(&head), 200, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/yaml"),
        "{head}"
    );
    let table: Value = serde_yaml_ng::from_slice(&body).expect("a YAML Table");
    assert_eq!(table["kind"], "Table");
    assert!(table["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .any(|row| row["cells"][0] == "pb"));
    // An error is a Status in the negotiated serializer, YAML too.
    let (head, body) = raw(s, &format!("{path}x"), "application/yaml, application/json");
    assert_eq!(code(&head), 404, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/yaml"),
        "{head}"
    );
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("reason: NotFound"), "{text}");
    for accept in [
        "text/html",
        "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1",
    ] {
        let (head, body) = raw(s, path, accept);
        assert_eq!(code(&head), 406, "{accept}: {head}");
        let status: Value = serde_json::from_slice(&body).expect("a JSON Status");
        assert_eq!(status["reason"], "NotAcceptable");
        assert_eq!(
            status["message"],
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
    }
}

/// kubectl asks for protobuf first; what it does with the answers must not change.
fn kubectl_still_works(s: &Server) {
    use support::Kubectl;
    let wide = s.kubectl(&["get", "pods", "-o", "wide", "-n", "default"]);
    assert!(wide.starts_with("NAME"), "{wide}");
    s.kubectl(&[
        "scale",
        "deployment",
        "web",
        "--replicas=2",
        "-n",
        "default",
    ]);
    let scale = "/apis/apps/v1/namespaces/default/deployments/web/scale";
    assert_eq!(s.get(scale).json()["spec"]["replicas"], 2);
    let yes = s.kubectl(&["auth", "can-i", "create", "pods", "-n", "default"]);
    assert_eq!(yes.trim(), "yes");
    let token = s.kubectl(&["create", "token", "pb", "-n", "default"]);
    assert_eq!(token.trim().split('.').count(), 3, "{token}");
}

#[test]
fn subresources_reviews_and_metadata_on_the_embedded_store() {
    subresources_reviews_and_metadata(&start());
}

#[test]
fn subresources_reviews_and_metadata_on_etcd() {
    subresources_reviews_and_metadata(&start_on_etcd());
}
