//! Bodies encoded as client-go sends them: messages described in protobuf's own JSON mapping
//! (times as {seconds, nanos}, int-or-strings as {type, intVal, strVal}), encoded to the wire
//! format, wrapped in the runtime.Unknown envelope.

use prost_reflect::prost::Message;
use prost_reflect::DynamicMessage;
use serde_json::{json, Value};

use super::{decode, go_duration, pool, GO_ZERO_TIME};

fn encode(message: &str, fields: Value) -> Vec<u8> {
    let descriptor = pool()
        .get_message_by_name(message)
        .unwrap_or_else(|| panic!("no {message}"));
    DynamicMessage::deserialize(descriptor, fields)
        .unwrap_or_else(|e| panic!("{message}: {e}"))
        .encode_to_vec()
}

fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    use base64::Engine;
    let raw = base64::engine::general_purpose::STANDARD.encode(raw);
    let unknown = encode(
        "apimachinery.pkg.runtime.Unknown",
        json!({"typeMeta": {"apiVersion": api_version, "kind": kind}, "raw": raw}),
    );
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown);
    body
}

/// ObjectMeta as Go's marshalling writes it: empty strings and a zero time included.
fn go_meta(name: &str) -> Value {
    json!({
        "name": name, "generateName": "", "namespace": "", "selfLink": "", "uid": "",
        "resourceVersion": "", "generation": 0,
        "creationTimestamp": {"seconds": GO_ZERO_TIME, "nanos": 0}
    })
}

#[test]
fn namespace_as_kubectl_create_sends_it() {
    let raw = encode(
        "api.core.v1.Namespace",
        json!({"metadata": go_meta("team-a"), "spec": {}, "status": {"phase": ""}}),
    );
    let obj = decode(&envelope("v1", "Namespace", raw)).expect("decode");
    assert_eq!(
        obj,
        json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "team-a"},
            "spec": {},
            "status": {}
        })
    );
}

#[test]
fn configmap_and_secret_maps() {
    let raw = encode(
        "api.core.v1.ConfigMap",
        json!({"metadata": go_meta("cfg"), "data": {"a": "1", "empty": ""},
               "binaryData": {"bin": "AAEC"}}),
    );
    let obj = decode(&envelope("v1", "ConfigMap", raw)).expect("decode");
    assert_eq!(obj["data"], json!({"a": "1", "empty": ""}));
    assert_eq!(obj["binaryData"], json!({"bin": "AAEC"}));

    let raw = encode(
        "api.core.v1.Secret",
        json!({"metadata": go_meta("s"), "data": {"password": "aHVudGVyMg=="}, "type": "Opaque"}),
    );
    let obj = decode(&envelope("v1", "Secret", raw)).expect("decode");
    assert_eq!(obj["data"]["password"], "aHVudGVyMg==");
    assert_eq!(obj["type"], "Opaque");
}

#[test]
fn deployment_with_special_types() {
    let container = json!({
        "name": "web", "image": "nginx", "args": ["", "-v"], "stdin": false,
        "ports": [{"containerPort": 80, "protocol": "TCP", "name": "", "hostPort": 0}],
        "resources": {"limits": {"cpu": {"string": "500m"}}}
    });
    let raw = encode(
        "api.apps.v1.Deployment",
        json!({
            "metadata": go_meta("web"),
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": go_meta(""), "spec": {"containers": [container]}},
                "strategy": {"rollingUpdate": {
                    "maxSurge": {"type": 1, "strVal": "25%"},
                    "maxUnavailable": {"type": 0, "intVal": 2}
                }}
            }
        }),
    );
    let obj = decode(&envelope("apps/v1", "Deployment", raw)).expect("decode");
    assert_eq!(obj["apiVersion"], "apps/v1");
    // An explicit zero in a pointer field is kept: replicas 0 is not "unset".
    assert_eq!(obj["spec"]["replicas"], 0);
    assert_eq!(
        obj["spec"]["selector"],
        json!({"matchLabels": {"app": "web"}})
    );
    assert_eq!(
        obj["spec"]["strategy"]["rollingUpdate"],
        json!({"maxSurge": "25%", "maxUnavailable": 2})
    );
    let c = &obj["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["name"], "web");
    // Elements of a list are kept even when empty.
    assert_eq!(c["args"], json!(["", "-v"]));
    assert_eq!(
        c["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}])
    );
    assert_eq!(c["resources"], json!({"limits": {"cpu": "500m"}}));
    assert_eq!(obj["spec"]["template"]["metadata"], json!({}));
    assert!(c.get("stdin").is_none());
}

#[test]
fn times_and_delete_options() {
    let raw = encode(
        "apimachinery.pkg.apis.meta.v1.DeleteOptions",
        json!({"propagationPolicy": "Foreground", "gracePeriodSeconds": 0,
               "preconditions": {"uid": "abc"}}),
    );
    // client-go sends DeleteOptions under the resource's apiVersion.
    let obj = decode(&envelope("apps/v1", "DeleteOptions", raw)).expect("decode");
    assert_eq!(obj["propagationPolicy"], "Foreground");
    assert_eq!(obj["gracePeriodSeconds"], 0);
    assert_eq!(obj["preconditions"], json!({"uid": "abc"}));

    let raw = encode(
        "api.coordination.v1.Lease",
        json!({"metadata": go_meta("l"), "spec": {
            "holderIdentity": "a",
            "acquireTime": {"seconds": 1_800_000_000, "nanos": 0},
            "renewTime": {"seconds": 1_800_000_000, "nanos": 123_456_000}
        }}),
    );
    let obj = decode(&envelope("coordination.k8s.io/v1", "Lease", raw)).expect("decode");
    assert_eq!(obj["spec"]["renewTime"], "2027-01-15T08:00:00.123456Z");
    assert_eq!(obj["spec"]["acquireTime"], "2027-01-15T08:00:00.000000Z");

    let raw = encode(
        "api.core.v1.Pod",
        json!({"metadata": {"name": "p", "creationTimestamp": {"seconds": 1_800_000_000}}}),
    );
    let obj = decode(&envelope("v1", "Pod", raw)).expect("decode");
    assert_eq!(obj["metadata"]["creationTimestamp"], "2027-01-15T08:00:00Z");
}

#[test]
fn garbage_is_a_bad_request() {
    for body in [
        b"not protobuf".to_vec(),
        b"k8s\0\xff\xff\xff".to_vec(),
        envelope("v1", "NoSuchKind", vec![]),
        envelope("nope/v9", "Pod", vec![]),
        envelope("v1", "Namespace", vec![0x0a, 0xff]),
    ] {
        let err = decode(&body).expect_err("must fail");
        assert_eq!(err.code(), 400, "{err:?}");
    }
}

#[test]
fn durations_print_as_go_does() {
    assert_eq!(go_duration(0), "0s");
    assert_eq!(go_duration(1_500), "1.5µs");
    assert_eq!(go_duration(100_000_000), "100ms");
    assert_eq!(go_duration(1_500_000_000), "1.5s");
    assert_eq!(go_duration(3_723_000_000_000), "1h2m3s");
    assert_eq!(go_duration(-60_000_000_000), "-1m0s");
}

#[test]
fn inline_structs_are_flattened_into_their_parent() {
    let raw = encode(
        "api.networking.v1.Ingress",
        json!({
            "metadata": go_meta("simple"),
            "spec": {"rules": [{"host": "foo.com", "ingressRuleValue": {"http": {"paths": [{
                "path": "/bar", "pathType": "Exact",
                "backend": {"service": {"name": "svc1", "port": {"number": 8080, "name": ""}}}
            }]}}}]}
        }),
    );
    let obj = decode(&envelope("networking.k8s.io/v1", "Ingress", raw)).expect("decode");
    assert_eq!(
        obj["spec"]["rules"][0],
        json!({"host": "foo.com", "http": {"paths": [{
            "path": "/bar", "pathType": "Exact",
            "backend": {"service": {"name": "svc1", "port": {"number": 8080}}}
        }]}})
    );
    let raw = encode(
        "api.core.v1.Pod",
        json!({
            "metadata": go_meta("p"),
            "spec": {
                "containers": [{"name": "c", "image": "busybox", "envFrom": [
                    {"configMapRef": {"localObjectReference": {"name": "cm"}}}
                ]}],
                "volumes": [{"name": "v", "volumeSource": {"emptyDir": {}}}]
            }
        }),
    );
    let obj = decode(&envelope("v1", "Pod", raw)).expect("decode");
    assert_eq!(
        obj["spec"]["volumes"],
        json!([{"name": "v", "emptyDir": {}}])
    );
    assert_eq!(
        obj["spec"]["containers"][0]["envFrom"],
        json!([{"configMapRef": {"name": "cm"}}])
    );
}
