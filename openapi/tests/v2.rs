//! `/openapi/v2`: one Swagger 2.0 document of everything served.

mod common;

use common::{json, openapi};
use serde_json::{json, Value};

#[test]
fn swagger_document_with_definitions_and_paths() {
    let api = openapi();
    let doc = json(api.v2().bytes());
    assert_eq!(doc["swagger"], "2.0");
    let definitions = doc["definitions"].as_object().expect("definitions");
    let pod = &definitions["io.k8s.api.core.v1.Pod"];
    assert_eq!(
        pod["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "Pod", "version": "v1"}])
    );
    assert_eq!(
        pod["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert!(definitions.contains_key("io.k8s.api.apps.v1.Deployment"));
    assert!(definitions.contains_key("io.k8s.api.core.v1.ConfigMapList"));
    let containers = &definitions["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(
        definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"],
        "string"
    );
    assert_eq!(
        definitions["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"],
        "string"
    );

    let paths = doc["paths"].as_object().expect("paths");
    assert!(paths.contains_key("/api/v1/namespaces/{namespace}/pods"));
    let patch = &paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert_eq!(patch["operationId"], "patchAppsV1NamespacedDeployment");
    assert!(patch["consumes"]
        .as_array()
        .expect("consumes")
        .contains(&json!("application/strategic-merge-patch+json")));
    let params = patch["parameters"].as_array().expect("parameters");
    assert!(params.iter().any(|p| p["in"] == "body"
        && p["schema"]["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"));
    assert!(params
        .iter()
        .any(|p| p["name"] == "fieldValidation" && p["in"] == "query" && p["type"] == "string"));

    // Self-contained: every reference names a definition of the document.
    let mut refs = Vec::new();
    collect(&doc, &mut refs);
    for r in refs {
        let name = r.strip_prefix("#/definitions/").expect("v2 reference");
        assert!(definitions.contains_key(name), "{name} is missing");
    }
    assert_eq!(api.v2().hash(), openapi().v2().hash());
}

fn collect(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                out.push(r.clone());
            }
            map.values().for_each(|v| collect(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
        _ => {}
    }
}

/// A field of a protobuf message: its number and, for length-delimited fields, its bytes.
type Field<'a> = (u64, Option<&'a [u8]>);

/// Reads the fields of a protobuf message (varints, fixed64 and length-delimited only).
fn fields(mut buf: &[u8]) -> Vec<Field<'_>> {
    fn varint(buf: &mut &[u8]) -> u64 {
        let mut value = 0;
        for shift in (0..64).step_by(7) {
            let (byte, rest) = buf.split_first().expect("varint continues");
            *buf = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
        }
        value
    }
    let mut out = Vec::new();
    while !buf.is_empty() {
        let key = varint(&mut buf);
        match key & 7 {
            0 => {
                varint(&mut buf);
                out.push((key >> 3, None));
            }
            1 => {
                buf = &buf[8..];
                out.push((key >> 3, None));
            }
            2 => {
                let len = usize::try_from(varint(&mut buf)).expect("length");
                let (value, rest) = buf.split_at(len);
                buf = rest;
                out.push((key >> 3, Some(value)));
            }
            other => panic!("wire type {other}"),
        }
    }
    out
}

fn field(buf: &[u8], number: u64) -> Vec<&[u8]> {
    fields(buf)
        .into_iter()
        .filter(|(n, _)| *n == number)
        .filter_map(|(_, v)| v)
        .collect()
}

/// The value of the Named* entry called `name` among a message's `number` fields.
fn entry<'a>(buf: &'a [u8], number: u64, name: &str) -> &'a [u8] {
    field(buf, number)
        .into_iter()
        .find(|named| field(named, 1).first() == Some(&name.as_bytes()))
        .and_then(|named| field(named, 2).first().copied())
        .unwrap_or_else(|| panic!("{name} is present"))
}

fn text(buf: &[u8], number: u64) -> String {
    String::from_utf8(field(buf, number)[0].to_vec()).expect("UTF-8")
}

#[test]
fn protobuf_form_carries_the_same_document() {
    let api = openapi();
    let doc = api.v2_protobuf();
    assert_ne!(doc.hash(), api.v2().hash());
    let buf = doc.bytes().as_ref();
    assert_eq!(text(buf, 1), "2.0");
    let info = field(buf, 2)[0];
    assert_eq!(text(info, 1), "Kubernetes");

    let paths = field(buf, 8)[0];
    let item = entry(paths, 2, "/api/v1/namespaces/{namespace}/pods/{name}");
    let patch = field(item, 8)[0];
    assert_eq!(text(patch, 5), "patchCoreV1NamespacedPod");
    // Parameters: the body, then query parameters with fieldValidation among them.
    let names: Vec<String> = field(patch, 8)
        .into_iter()
        .map(|item| {
            let parameter = field(item, 1)[0];
            match field(parameter, 1).first() {
                Some(body) => text(body, 2),
                None => {
                    let non_body = field(parameter, 2)[0];
                    text(field(non_body, 3)[0], 4)
                }
            }
        })
        .collect();
    assert_eq!(names[0], "body");
    assert!(names.contains(&"fieldValidation".to_string()));
    let gvk = entry(patch, 13, "x-kubernetes-group-version-kind");
    let gvk: Value = serde_json::from_str(&text(gvk, 2)).expect("YAML that is JSON");
    assert_eq!(gvk, json!({"group": "", "kind": "Pod", "version": "v1"}));

    let definitions = field(buf, 9)[0];
    let spec = entry(definitions, 1, "io.k8s.api.core.v1.PodSpec");
    let containers = entry(field(spec, 25)[0], 1, "containers");
    let key = entry(containers, 31, "x-kubernetes-patch-merge-key");
    assert_eq!(text(key, 2), "\"name\"");
    let items = field(field(containers, 23)[0], 1)[0];
    assert_eq!(text(items, 1), "#/definitions/io.k8s.api.core.v1.Container");
}

/// Connect subresources as upstream's installer documents them: one `connect<Method>`
/// operation per method, any media type in and out, a string answered, the options kind's
/// fields as the path's query parameters, and a proxy's second route for the proxied path.
#[test]
fn connect_subresources() {
    let doc = json(openapi().v2().bytes());
    let paths = &doc["paths"];
    let exec = &paths["/api/v1/namespaces/{namespace}/pods/{name}/exec"];
    let methods: Vec<&str> = exec
        .as_object()
        .expect("exec path")
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "parameters")
        .collect();
    assert_eq!(methods, ["get", "post"]);
    let get = &exec["get"];
    assert_eq!(get["operationId"], "connectCoreV1GetNamespacedPodExec");
    assert_eq!(get["description"], "connect GET requests to exec of Pod");
    assert_eq!(get["consumes"], json!(["*/*"]));
    assert_eq!(get["produces"], json!(["*/*"]));
    assert_eq!(get["x-kubernetes-action"], "connect");
    assert_eq!(
        get["x-kubernetes-group-version-kind"],
        json!({"group": "", "kind": "PodExecOptions", "version": "v1"})
    );
    assert_eq!(get["responses"]["200"]["schema"], json!({"type": "string"}));
    assert_eq!(
        exec["post"]["operationId"],
        "connectCoreV1PostNamespacedPodExec"
    );
    let names: Vec<(&str, &str, &str)> = exec["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default(),
                p["in"].as_str().unwrap_or_default(),
                p["type"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("command", "query", "string"),
            ("container", "query", "string"),
            ("name", "path", "string"),
            ("namespace", "path", "string"),
            ("stderr", "query", "boolean"),
            ("stdin", "query", "boolean"),
            ("stdout", "query", "boolean"),
            ("tty", "query", "boolean"),
        ]
    );

    for (path, suffix) in [
        ("/api/v1/namespaces/{namespace}/pods/{name}/proxy", ""),
        (
            "/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}",
            "WithPath",
        ),
    ] {
        let item = &paths[path];
        for (method, name) in [
            ("delete", "Delete"),
            ("get", "Get"),
            ("head", "Head"),
            ("options", "Options"),
            ("patch", "Patch"),
            ("post", "Post"),
            ("put", "Put"),
        ] {
            assert_eq!(
                item[method]["operationId"],
                format!("connectCoreV1{name}NamespacedPodProxy{suffix}"),
                "{path} {method}"
            );
        }
        let params: Vec<(&str, &str)> = item["parameters"]
            .as_array()
            .expect("parameters")
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().unwrap_or_default(),
                    p["in"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        let mut expected = vec![("name", "path"), ("namespace", "path")];
        if suffix == "WithPath" {
            expected.push(("path", "path"));
        }
        expected.push(("path", "query"));
        assert_eq!(params, expected, "{path}");
    }
    // The protobuf form carries them too (kubectl reads it).
    assert!(!openapi().v2_protobuf().bytes().is_empty());
}
