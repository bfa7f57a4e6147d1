//! What kube-apiserver answers in protobuf besides a resource's own verbs, from the real
//! binary on both backends: subresources, the create-only reviews, componentstatuses and
//! objects cut down to their metadata (PartialObjectMetadata[List]); and Accept headers with
//! several types and qualities, negotiated as upstream's goautoneg does; discovery documents,
//! per-version and aggregated. kubectl, which asks for protobuf first, keeps working.

mod support;
#[path = "support/protobuf_wire.rs"]
mod wire;

use apiserver::api::protobuf;
use serde_json::{json, Value};
use support::{start, start_on_etcd, Server};
use wire::*;

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
    discovery(s);
    kubectl_still_works(s);
}

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

    // A collection's deletion answers the list of what it deleted, cut down the same way.
    let config_maps = "/api/v1/namespaces/default/configmaps";
    let doomed = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "doomed", "labels": {"doomed": "yes"}}});
    assert_eq!(s.send_json("POST", config_maps, &doomed).status, 201);
    let (head, body) = request(
        s,
        "DELETE",
        &format!("{config_maps}?labelSelector=doomed%3Dyes"),
        &format!("application/json;{POM_LIST}"),
    );
    assert_eq!(code(&head), 200, "{head}");
    let text = String::from_utf8_lossy(&body);
    assert!(
        text.contains(r#""items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"doomed","#),
        "{text}"
    );

    // A watch: each event's object cut down.
    let (head, body) = raw(
        s,
        &format!("{list}?watch=true&timeoutSeconds=1"),
        &format!("{PROTOBUF};{POM}"),
    );
    assert!(head.contains("stream=watch"), "{head}");
    let (_, object) = first_watch_event(&body);
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

/// Discovery documents in protobuf, as upstream serves them: the per-version ones (meta/v1
/// APIVersions, APIGroupList, APIGroup, APIResourceList) for a plain protobuf Accept, the
/// aggregated APIGroupDiscoveryList for protobuf with its g/v/as; each the bytes our encoder
/// makes of the JSON document, and read back with the definitions alone. No Tables.
fn discovery(s: &Server) {
    for (path, api_version, kind) in [
        ("/api", "", "APIVersions"),
        ("/apis", "v1", "APIGroupList"),
        ("/apis/apps", "v1", "APIGroup"),
        ("/apis/apps/v1", "v1", "APIResourceList"),
        // The legacy group's list carries no apiVersion upstream, in JSON or the envelope.
        ("/api/v1", "", "APIResourceList"),
    ] {
        let as_json = s.get(path).json();
        let (head, body) = raw(s, path, CLIENT_GO);
        assert_eq!(code(&head), 200, "{path}: {head}");
        assert!(
            head.to_ascii_lowercase()
                .contains(&format!("content-type: {PROTOBUF}\r")),
            "{path}: {head}"
        );
        assert_eq!(envelope_type(&body), (api_version.into(), kind.into()));
        assert_eq!(
            protobuf::encode::encode(&as_json).expect("encodes"),
            body,
            "{path}"
        );
        let message = message_of(&body, &format!("apimachinery.pkg.apis.meta.v1.{kind}"));
        let read = serde_json::to_value(&message).expect("as protobuf JSON");
        match kind {
            "APIVersions" => assert_eq!(read["versions"], json!(["v1"])),
            "APIGroupList" => assert!(read["groups"]
                .as_array()
                .expect("groups")
                .iter()
                .any(|g| g["name"] == "apps")),
            "APIGroup" => assert_eq!(read["preferredVersion"]["groupVersion"], "apps/v1"),
            _ => {
                // Verbs is a message of one repeated string in protobuf, a list in JSON.
                let resources = read["resources"].as_array().expect("resources");
                let first = &as_json["resources"][0];
                assert_eq!(resources[0]["name"], first["name"]);
                assert_eq!(resources[0]["verbs"]["items"], first["verbs"]);
                let decoded = protobuf::decode(&body).expect("decodes");
                assert_eq!(decoded["resources"][0]["verbs"], first["verbs"]);
            }
        }
    }
    // Aggregated, in protobuf when asked for first (as upstream's handler negotiates it).
    let aggregated = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let json_accept =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let (_, json_body) = raw(s, "/apis", json_accept);
    let as_json: Value = serde_json::from_slice(&json_body).expect("aggregated JSON");
    let (head, body) = raw(s, "/apis", aggregated);
    assert_eq!(code(&head), 200, "{head}");
    assert!(
        head.contains(
            "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ),
        "{head}"
    );
    assert_eq!(
        envelope_type(&body),
        (
            "apidiscovery.k8s.io/v2".into(),
            "APIGroupDiscoveryList".into()
        )
    );
    assert_eq!(protobuf::encode::encode(&as_json).expect("encodes"), body);
    let message = message_of(&body, "api.apidiscovery.v2.APIGroupDiscoveryList");
    let read = serde_json::to_value(&message).expect("as protobuf JSON");
    let apps = read["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|g| g["metadata"]["name"] == "apps")
        .expect("the apps group");
    let deployments = apps["versions"][0]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["resource"] == "deployments")
        .expect("deployments");
    assert_eq!(deployments["responseKind"]["kind"], "Deployment");
    assert_eq!(deployments["scope"], "Namespaced");
    // YAML when asked for; a Table is passed over (discovery has none); HTML is 406.
    let (head, body) = raw(s, "/apis", "application/yaml");
    assert!(head.contains("application/yaml"), "{head}");
    let groups: Value = serde_yaml_ng::from_slice(&body).expect("YAML");
    assert_eq!(groups["kind"], "APIGroupList");
    let (head, _) = raw(
        s,
        "/apis/apps/v1",
        "application/json;as=Table;g=meta.k8s.io;v=v1, application/vnd.kubernetes.protobuf;q=0.5",
    );
    assert!(head.contains(PROTOBUF), "{head}");
    let (head, _) = raw(s, "/apis", "text/html");
    assert_eq!(code(&head), 406, "{head}");
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
