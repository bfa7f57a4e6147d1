//! Plain HTTP against the real binary: discovery, errors as metav1.Status with the right
//! codes, DELETE with a propagationPolicy body, chunked watch streams.

mod support;

use serde_json::json;
use support::start;

#[test]
fn discovery_documents() {
    let s = start();
    let api = s.get("/api").json();
    assert_eq!(api["versions"], json!(["v1"]));
    let groups = s.get("/apis").json();
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .map(|g| g.iter().filter_map(|g| g["name"].as_str()).collect())
        .unwrap_or_default();
    for group in [
        "apps",
        "batch",
        "coordination.k8s.io",
        "rbac.authorization.k8s.io",
    ] {
        assert!(names.contains(&group), "{names:?}");
    }
    let core = s.get("/api/v1").json();
    let pods = core["resources"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["name"] == "pods"))
        .cloned()
        .expect("pods in /api/v1");
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert_eq!(pods["namespaced"], true);
    let aggregated = s.request(
        "GET",
        "/apis",
        &[(
            "Accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        )],
        b"",
    );
    assert!(
        aggregated.headers.contains("apidiscovery.k8s.io"),
        "{}",
        aggregated.headers
    );
    assert_eq!(aggregated.json()["kind"], "APIGroupDiscoveryList");
    assert_eq!(s.get("/apis/apps/v1").json()["groupVersion"], "apps/v1");
    assert_eq!(s.get("/apis/nope/v1").status, 404);
}

#[test]
fn errors_are_statuses_with_upstream_codes() {
    let s = start();
    let status = |r: &support::Response| {
        (
            r.status,
            r.json()["kind"].as_str().map(str::to_string),
            r.json()["reason"].as_str().map(str::to_string),
        )
    };
    let r = s.get("/api/v1/namespaces/default/widgets");
    assert_eq!(
        status(&r),
        (404, Some("Status".into()), Some("NotFound".into()))
    );
    let r = s.get("/api/v1/namespaces/default/configmaps/missing");
    assert_eq!(r.json()["message"], "configmaps \"missing\" not found");
    // Namespaces cannot be deleted as a collection (upstream lists no deletecollection).
    let r = s.request("DELETE", "/api/v1/namespaces", &[], b"");
    assert_eq!(status(&r).0, 405);
    let r = s.request(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("Content-Type", "application/json")],
        b"{not json",
    );
    assert_eq!(
        status(&r),
        (400, Some("Status".into()), Some("BadRequest".into()))
    );
    // Built-in kinds answer protobuf (e2e/protobuf.rs reads it); an unknown type is 406.
    let r = s.request(
        "GET",
        "/api/v1/namespaces",
        &[("Accept", "application/vnd.kubernetes.protobuf")],
        b"",
    );
    assert_eq!(r.status, 200);
    assert!(
        r.headers.contains("application/vnd.kubernetes.protobuf"),
        "{}",
        r.headers
    );
    let r = s.request(
        "GET",
        "/api/v1/namespaces",
        &[("Accept", "application/cbor")],
        b"",
    );
    assert_eq!(r.status, 406);
    let r = s.request(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("Content-Type", "application/vnd.kubernetes.protobuf")],
        b"k8s\0",
    );
    // Protobuf is read; a truncated envelope is malformed, not unsupported.
    assert_eq!(
        status(&r),
        (400, Some("Status".into()), Some("BadRequest".into()))
    );
    let r = s.request(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"a=b",
    );
    assert_eq!(r.status, 415);
    let big = vec![b' '; 4 * 1024 * 1024];
    let r = s.request(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("Content-Type", "application/json")],
        &big,
    );
    assert_eq!(r.status, 413);
    let r = s.send_json(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "Bad_Name"}}),
    );
    assert_eq!(
        status(&r),
        (422, Some("Status".into()), Some("Invalid".into()))
    );
    assert_eq!(r.json()["details"]["causes"][0]["field"], "metadata.name");
    let r = s.send_json(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "ok"}}),
    );
    assert_eq!(r.status, 201);
    let r = s.send_json(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "ok"}}),
    );
    assert_eq!(
        status(&r),
        (409, Some("Status".into()), Some("AlreadyExists".into()))
    );
    // The server is still there after all of it.
    assert_eq!(s.get("/healthz").status, 200);
}

#[test]
fn curl_delete_with_propagation_policy_body() {
    let s = start();
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    });
    assert_eq!(
        s.send_json(
            "POST",
            "/apis/apps/v1/namespaces/default/deployments",
            &deployment
        )
        .status,
        201
    );
    // A dependent that blocks its owner and holds itself with a finalizer keeps the
    // foreground deletion waiting.
    let web = s
        .get("/apis/apps/v1/namespaces/default/deployments/web")
        .json();
    let rs = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-rs", "finalizers": ["example.com/hold"],
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                          "uid": web["metadata"]["uid"], "blockOwnerDeletion": true}]},
        "spec": deployment["spec"]
    });
    let rs_path = "/apis/apps/v1/namespaces/default/replicasets";
    assert_eq!(s.send_json("POST", rs_path, &rs).status, 201);
    let r = s.send_json(
        "DELETE",
        "/apis/apps/v1/namespaces/default/deployments/web",
        &json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}),
    );
    assert_eq!(r.status, 200);
    let body = r.json();
    assert_eq!(
        body["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert!(body["metadata"]["deletionTimestamp"].is_string());
    let stored = s
        .get("/apis/apps/v1/namespaces/default/deployments/web")
        .json();
    assert_eq!(
        stored["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    // Released, the dependent goes and then its owner.
    let release = br#"{"metadata":{"finalizers":null}}"#;
    let r = s.request(
        "PATCH",
        &format!("{rs_path}/web-rs"),
        &[("Content-Type", "application/merge-patch+json")],
        release,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while s
        .get("/apis/apps/v1/namespaces/default/deployments/web")
        .status
        != 404
    {
        assert!(
            std::time::Instant::now() < deadline,
            "foreground owner never went"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(s.get(&format!("{rs_path}/web-rs")).status, 404);
    // Background, from the query string: gone at once, answered with a Success Status.
    assert_eq!(
        s.send_json(
            "POST",
            "/apis/apps/v1/namespaces/default/deployments",
            &json!({"metadata": {"name": "b"}, "spec": deployment["spec"]})
        )
        .status,
        201
    );
    let r = s.request(
        "DELETE",
        "/apis/apps/v1/namespaces/default/deployments/b?propagationPolicy=Background",
        &[],
        b"",
    );
    assert_eq!(
        (r.status, r.json()["status"].as_str()),
        (200, Some("Success"))
    );
    assert_eq!(
        s.get("/apis/apps/v1/namespaces/default/deployments/b")
            .status,
        404
    );
}

#[test]
fn watch_streams_events_and_ends_on_timeout() {
    let s = start();
    let list = s.get("/api/v1/namespaces/default/configmaps").json();
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let port = s.port;
    let watcher = std::thread::spawn(move || {
        // Only w1: the root CA publisher writes kube-root-ca.crt into the namespace meanwhile.
        let path = format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=2&fieldSelector=metadata.name%3Dw1");
        support::Server::send(port, "GET", &path, &[], b"")
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    s.send_json(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "w1"}}),
    );
    s.request(
        "DELETE",
        "/api/v1/namespaces/default/configmaps/w1",
        &[],
        b"",
    );
    let started = std::time::Instant::now();
    let r = watcher.join().expect("watch thread");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "the stream ends at its timeout"
    );
    assert_eq!(r.status, 200);
    let events: Vec<serde_json::Value> = r
        .body
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("event line"))
        .collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds, ["ADDED", "DELETED"]);
    assert_eq!(events[0]["object"]["metadata"]["name"], "w1");
}

#[test]
fn yaml_pretty_and_table_negotiation() {
    let s = start();
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  k: v\n";
    let r = s.request(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("Content-Type", "application/yaml")],
        yaml.as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let r = s.request(
        "GET",
        "/api/v1/namespaces/default/configmaps/y",
        &[("Accept", "application/yaml")],
        b"",
    );
    assert!(
        r.headers
            .to_ascii_lowercase()
            .contains("content-type: application/yaml"),
        "{}",
        r.headers
    );
    assert!(
        r.body.contains("kind: ConfigMap") && r.body.contains("k: v"),
        "{}",
        r.body
    );
    // Plain JSON: the stored object with its resourceVersion spliced in, sent with its length.
    let r = s.get("/api/v1/namespaces/default/configmaps/y");
    let plain = r.json();
    assert_eq!(plain["data"]["k"], "v");
    assert!(plain["metadata"]["resourceVersion"]
        .as_str()
        .is_some_and(|rv| !rv.is_empty()));
    assert!(
        r.headers
            .to_ascii_lowercase()
            .contains(&format!("content-length: {}", r.body.len())),
        "{}",
        r.headers
    );
    let r = s.get("/api/v1/namespaces/default/configmaps/y?pretty=true");
    assert!(r.body.contains("\n  \"metadata\""), "{}", r.body);
    assert_eq!(r.json()["data"]["k"], "v");
    let r = s.request(
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &[(
            "Accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )],
        b"",
    );
    let table = r.json();
    assert_eq!(table["kind"], "Table");
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(columns, ["Name", "Data", "Age"]);
    // Besides y, the namespace holds kube-root-ca.crt (the root CA publisher's).
    let rows = table["rows"].as_array().cloned().unwrap_or_default();
    let y = rows
        .iter()
        .find(|r| r["cells"][0] == "y")
        .unwrap_or_else(|| panic!("{rows:?}"));
    assert_eq!(y["object"]["kind"], "PartialObjectMetadata");
}

#[test]
fn field_validation_and_warning_headers() {
    let s = start();
    let path = "/api/v1/namespaces/default/configmaps";
    let body = br#"{"metadata":{"name":"dup","finalizers":["mine"]},"data":{"a":"1","a":"2"}}"#;
    let json = [("Content-Type", "application/json")];

    // Strict refuses, naming the field; nothing is written.
    let r = s.request(
        "POST",
        &format!("{path}?fieldValidation=Strict"),
        &json,
        body,
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["reason"], "BadRequest");
    assert!(
        r.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains(r#"strict decoding error: duplicate field "data.a""#)),
        "{}",
        r.body
    );
    assert_eq!(s.get(&format!("{path}/dup")).status, 404);

    // An unknown directive is a bad request.
    let r = s.request(
        "POST",
        &format!("{path}?fieldValidation=Loose"),
        &json,
        body,
    );
    assert_eq!(r.status, 400, "{}", r.body);

    // Warn (the default) writes the last value and says why in Warning headers.
    let r = s.request("POST", path, &json, body);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["data"]["a"], "2");
    let warnings: Vec<&str> = r
        .headers
        .lines()
        .filter_map(|l| l.strip_prefix("warning: ").or(l.strip_prefix("Warning: ")))
        .collect();
    assert!(
        warnings.contains(&r#"299 - "duplicate field \"data.a\"""#),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains(
            r#"metadata.finalizers: \"mine\": prefer a domain-qualified finalizer name"#
        )),
        "{warnings:?}"
    );

    // A merge patch naming a field twice: Strict refuses it as an invalid patch, Warn warns
    // and applies the last value.
    let merge = [("Content-Type", "application/merge-patch+json")];
    let patch = br#"{"data":{"b":"1","b":"2"}}"#;
    let r = s.request(
        "PATCH",
        &format!("{path}/dup?fieldValidation=Strict"),
        &merge,
        patch,
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.body
            .contains(r#"strict decoding error: duplicate field \"data.b\""#),
        "{}",
        r.body
    );
    assert!(s.get(&format!("{path}/dup")).json()["data"]
        .get("b")
        .is_none());
    let r = s.request("PATCH", &format!("{path}/dup"), &merge, patch);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["b"], "2");
    assert!(
        r.headers.contains(r#"duplicate field \"data.b\""#),
        "{}",
        r.headers
    );
}

#[test]
fn unknown_fields_and_wrong_types_against_the_schema() {
    let s = start();
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let json = [("Content-Type", "application/json")];
    let deployment = |name: &str, extra: &str| {
        format!(
            r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"{name}"}},"spec":{{"replicas":1,{extra}"selector":{{"matchLabels":{{"app":"a"}}}},"template":{{"metadata":{{"labels":{{"app":"a"}}}},"spec":{{"containers":[{{"name":"c","image":"nginx"}}]}}}}}}}}"#
        )
    };
    let warnings = |r: &support::Response| -> Vec<String> {
        r.headers
            .lines()
            .filter_map(|l| l.strip_prefix("warning: ").or(l.strip_prefix("Warning: ")))
            .map(str::to_string)
            .collect()
    };

    // A wrong type is 422 Invalid naming the field, whatever the directive.
    let body =
        deployment("typed", r#""paused":"yes","#).replace(r#""replicas":1"#, r#""replicas":"one""#);
    for query in ["", "?fieldValidation=Ignore"] {
        let r = s.request("POST", &format!("{path}{query}"), &json, body.as_bytes());
        assert_eq!(r.status, 422, "{}", r.body);
        let status = r.json();
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(status["details"]["kind"], "Deployment");
        let causes = &status["details"]["causes"];
        assert_eq!(causes[0]["field"], "spec.paused");
        assert_eq!(causes[1]["field"], "spec.replicas");
        assert_eq!(causes[1]["reason"], "FieldValueTypeInvalid");
        assert_eq!(
            status["message"],
            r#"Deployment.apps "typed" is invalid: [spec.paused: Invalid value: "string": spec.paused in body must be of type boolean: "string", spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"]"#
        );
    }

    // Strict: duplicates first, then unknown fields, in one 400.
    let body = deployment("strict", r#""bogus":1,"replicas":2,"#);
    let r = s.request(
        "POST",
        &format!("{path}?fieldValidation=Strict"),
        &json,
        body.as_bytes(),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: duplicate field "spec.replicas", unknown field "spec.bogus""#
    );
    assert_eq!(s.get(&format!("{path}/strict")).status, 404);

    // Warn (the default): stored without the field, one Warning each.
    let body = deployment("warned", r#""bogus":1,"#);
    let r = s.request("POST", path, &json, body.as_bytes());
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(warnings(&r), [r#"299 - "unknown field \"spec.bogus\"""#]);
    let stored = s.get(&format!("{path}/warned")).json();
    assert!(stored["spec"].get("bogus").is_none(), "{stored}");

    // A patch is judged on its result: Strict refuses it as an invalid patch.
    let r = s.request(
        "PATCH",
        &format!("{path}/warned?fieldValidation=Strict"),
        &[("Content-Type", "application/merge-patch+json")],
        br#"{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx","imagePullPolicyy":"Never"}]}}}}"#,
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let cause = &r.json()["details"]["causes"][0];
    assert_eq!(cause["field"], "patch");
    assert!(
        cause["message"].as_str().is_some_and(|m| m.ends_with(
            r#"strict decoding error: unknown field "spec.template.spec.containers[0].imagePullPolicyy""#
        )),
        "{}",
        r.body
    );
}

#[test]
fn openapi_documents_with_etags_and_hashes() {
    let s = start();
    let index = s.get("/openapi/v3");
    assert_eq!(index.status, 200);
    let etag = index
        .headers
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("etag: "))
        .map(|l| l["etag: ".len()..].trim().to_string())
        .expect("ETag");
    let index = index.json();
    let apps = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .expect("apps/v1 listed")
        .to_string();
    assert!(index["paths"]["api/v1"].is_object());
    let r = s.request("GET", "/openapi/v3", &[("If-None-Match", &etag)], b"");
    assert_eq!(r.status, 304);

    // The document at its hash is immutable; a stale hash is redirected to the current one.
    let doc = s.get(&apps);
    assert_eq!(doc.status, 200);
    assert!(doc
        .headers
        .to_ascii_lowercase()
        .contains("cache-control: public, immutable"));
    let doc = doc.json();
    let deployment = &doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deployment["x-kubernetes-group-version-kind"][0]["kind"],
        "Deployment"
    );
    let stale = s.get("/openapi/v3/apis/apps/v1?hash=0123");
    assert_eq!(stale.status, 301);
    assert!(stale.headers.contains(&apps), "{}", stale.headers);
    assert_eq!(s.get("/openapi/v3/apis/nope/v1").status, 404);

    // v2: JSON by default, protobuf for kubectl.
    let v2 = s.get("/openapi/v2").json();
    assert!(v2["definitions"]["io.k8s.api.core.v1.Pod"].is_object());
    let pb = s.request(
        "GET",
        "/openapi/v2",
        &[(
            "Accept",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )],
        b"",
    );
    assert_eq!(pb.status, 200);
    assert!(
        pb.headers
            .contains("application/com.github.proto-openapi.spec.v2"),
        "{}",
        pb.headers
    );
}

#[test]
fn pod_binding_subresource_and_legacy_bindings() {
    let s = start();
    let json = [("Content-Type", "application/json")];
    let pod = |name: &str| {
        // Another scheduler's pods: the server's own scheduler leaves them to this test.
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
               "spec": {"schedulerName": "test-scheduler",
                        "containers": [{"name": "c", "image": "nginx"}]}})
        .to_string()
    };
    for name in ["a", "b"] {
        let r = s.request(
            "POST",
            "/api/v1/namespaces/default/pods",
            &json,
            pod(name).as_bytes(),
        );
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let binding = |pod: &str, node: &str| {
        json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod},
               "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
        .to_string()
    };
    let r = s.request(
        "POST",
        "/api/v1/namespaces/default/pods/a/binding",
        &json,
        binding("a", "node-1").as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["status"], "Success");
    let a = s.get("/api/v1/namespaces/default/pods/a").json();
    assert_eq!(a["spec"]["nodeName"], "node-1");
    assert_eq!(a["status"]["conditions"][0]["type"], "PodScheduled");
    assert_eq!(a["status"]["conditions"][0]["status"], "True");
    let r = s.request(
        "POST",
        "/api/v1/namespaces/default/pods/a/binding",
        &json,
        binding("a", "node-2").as_bytes(),
    );
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "Operation cannot be fulfilled on pods/binding \"a\": pod a is already assigned to node \"node-1\""
    );
    assert_eq!(r.json()["details"]["kind"], "pods/binding");
    // The legacy collection names the pod in the body.
    let r = s.request(
        "POST",
        "/api/v1/namespaces/default/bindings",
        &json,
        binding("b", "node-2").as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let b = s.get("/api/v1/namespaces/default/pods/b").json();
    assert_eq!(b["spec"]["nodeName"], "node-2");
    let r = s.request(
        "POST",
        "/api/v1/namespaces/default/pods/b/binding",
        &json,
        json!({"metadata": {"name": "b"}, "target": {}})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(r.json()["details"]["causes"][0]["field"], "target.name");
    let r = s.request("GET", "/api/v1/namespaces/default/pods/b/binding", &[], b"");
    assert_eq!(r.status, 405, "{}", r.body);
    // Discovery lists the legacy collection as upstream does: create only.
    let resources = s.get("/api/v1").json();
    let bindings = resources["resources"]
        .as_array()
        .and_then(|all| all.iter().find(|r| r["name"] == "bindings"))
        .cloned()
        .expect("bindings in discovery");
    assert_eq!(bindings["kind"], "Binding");
    assert_eq!(bindings["namespaced"], true);
    assert_eq!(bindings["verbs"], json!(["create"]));
}
