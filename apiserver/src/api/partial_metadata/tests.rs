use serde_json::json;

use super::*;
use crate::api::response::{Encoding, Metadata};

fn meta(list: bool) -> Metadata {
    Metadata {
        beta: false,
        list,
        encoding: Encoding::Json,
    }
}

#[test]
fn an_object_keeps_its_metadata_whole() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "a", "namespace": "n", "labels": {"x": "y"}, "resourceVersion": "7"},
        "spec": {"containers": []}});
    assert_eq!(
        transform(&pod, meta(false)).expect("transforms"),
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
               "metadata": {"name": "a", "namespace": "n", "labels": {"x": "y"},
                            "resourceVersion": "7"}})
    );
    let status = json!({"apiVersion": "v1", "kind": "Status", "status": "Success"});
    assert_eq!(transform(&status, meta(true)).expect("as it is"), status);
}

#[test]
fn a_list_keeps_its_list_metadata_and_items_metadata() {
    let list = json!({"apiVersion": "apps/v1", "kind": "DeploymentList",
        "metadata": {"resourceVersion": "9", "continue": "c", "selfLink": "/x"},
        "items": [{"metadata": {"name": "d"}, "spec": {}}]});
    let beta = Metadata {
        beta: true,
        ..meta(true)
    };
    assert_eq!(
        transform(&list, beta).expect("transforms"),
        json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1beta1",
               "metadata": {"resourceVersion": "9", "continue": "c"},
               "items": [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1beta1",
                          "metadata": {"name": "d"}}]})
    );
}

#[test]
fn the_wrong_form_is_406_naming_upstreams_type() {
    let message = |obj: Value, list: bool| {
        let err = transform(&obj, meta(list)).expect_err("406");
        let status = err.status();
        assert_eq!(status.code, 406);
        assert_eq!(status.reason, "NotAcceptable");
        status.message
    };
    assert_eq!(
        message(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {}}), true),
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.Pod)"
    );
    assert_eq!(
        message(
            json!({"apiVersion": "apps/v1", "kind": "DeploymentList", "items": []}),
            false
        ),
        "you requested PartialObjectMetadata, but the requested object is a list (*apps.DeploymentList)"
    );
    assert_eq!(
        message(
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {}}),
            true
        ),
        "you requested PartialObjectMetadataList, but the requested object is not a list (*unstructured.Unstructured)"
    );
    assert_eq!(
        message(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleList", "items": []}),
            false
        ),
        "you requested PartialObjectMetadata, but the requested object is a list (*rbac.RoleList)"
    );
}

/// Protobuf answers, against upstream's bytes: the metadata a PartialObjectMetadata carries
/// is upstream's ObjectMeta message of the same object (field 1 of the Pod in its fixture),
/// and the lists put ListMeta and items where meta v1 and v1beta1 number them.
mod protobuf {
    use super::*;
    use crate::api::protobuf::encode;

    fn varint(out: &mut Vec<u8>, mut value: u64) {
        while value >= 0x80 {
            out.push((value as u8) | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
    }

    fn read_varint(bytes: &[u8], at: &mut usize) -> u64 {
        let mut value = 0;
        let mut shift = 0;
        loop {
            let byte = bytes[*at];
            *at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return value;
            }
            shift += 7;
        }
    }

    /// The first length-delimited field `number` of a message.
    fn field(message: &[u8], number: u64) -> Vec<u8> {
        let mut at = 0;
        while at < message.len() {
            let tag = read_varint(message, &mut at);
            match tag & 7 {
                0 => {
                    read_varint(message, &mut at);
                }
                2 => {
                    let len = read_varint(message, &mut at) as usize;
                    if tag >> 3 == number {
                        return message[at..at + len].to_vec();
                    }
                    at += len;
                }
                other => panic!("wire type {other}"),
            }
        }
        panic!("no field {number}")
    }

    fn delimited(number: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![number << 3 | 2];
        varint(&mut out, bytes.len() as u64);
        out.extend_from_slice(bytes);
        out
    }

    fn fixture(name: &str) -> (Value, Vec<u8>) {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("protobuf/fixtures");
        let json = std::fs::read(dir.join(format!("{name}.json"))).expect("json");
        let pb = std::fs::read(dir.join(format!("{name}.pb"))).expect("pb");
        let object: Value = serde_json::from_slice(&json).expect("fixture JSON");
        // The object's message is the envelope's `raw`; its metadata is field 1.
        let raw = field(&pb[4..], 2);
        (object, field(&raw, 1))
    }

    fn encoding(beta: bool, list: bool) -> Metadata {
        Metadata {
            beta,
            list,
            encoding: Encoding::Protobuf,
        }
    }

    #[test]
    fn an_objects_metadata_is_upstreams_object_meta() {
        let (pod, object_meta) = fixture("core.v1.Pod");
        let partial = transform(&pod, encoding(false, false)).expect("transforms");
        let body = encode::encode(&partial).expect("encodes");
        assert_eq!(
            body,
            encode::envelope(
                "meta.k8s.io/v1",
                "PartialObjectMetadata",
                &delimited(1, &object_meta)
            )
        );
    }

    #[test]
    fn lists_in_both_versions() {
        let (pod, pod_meta) = fixture("core.v1.Pod");
        let (config_map, config_map_meta) = fixture("core.v1.ConfigMap");
        let list = json!({"apiVersion": "v1", "kind": "List",
            "metadata": {"resourceVersion": "5", "continue": "c", "remainingItemCount": 3},
            "items": [pod, config_map]});
        // ListMeta: selfLink and resourceVersion and continue (strings, always written),
        // remainingItemCount (a pointer, set).
        let list_meta = [0x0a, 0, 0x12, 1, b'5', 0x1a, 1, b'c', 0x20, 3];
        let items = [
            delimited(2, &delimited(1, &pod_meta)),
            delimited(2, &delimited(1, &config_map_meta)),
        ]
        .concat();
        for beta in [false, true] {
            let partial = transform(&list, encoding(beta, true)).expect("transforms");
            let api_version = partial["apiVersion"]
                .as_str()
                .expect("apiVersion")
                .to_string();
            let messages: Vec<Vec<u8>> = partial["items"]
                .as_array()
                .expect("items")
                .iter()
                .map(|item| {
                    encode::message(&api_version, "PartialObjectMetadata", item).expect("item")
                })
                .collect();
            let body = encode::list(
                &api_version,
                "PartialObjectMetadataList",
                &partial["metadata"],
                &messages,
            )
            .expect("encodes");
            // v1 numbers metadata 1 and items 2; v1beta1 the other way round.
            let raw = if beta {
                let mut raw = [
                    delimited(1, &delimited(1, &pod_meta)),
                    delimited(1, &delimited(1, &config_map_meta)),
                ]
                .concat();
                raw.extend(delimited(2, &list_meta));
                raw
            } else {
                [delimited(1, &list_meta), items.clone()].concat()
            };
            assert_eq!(
                body,
                encode::envelope(&api_version, "PartialObjectMetadataList", &raw),
                "{api_version}"
            );
        }
    }
}
