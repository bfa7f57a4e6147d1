use super::*;
use crate::api::response::{Encoding, Format, Metadata};

const BUILT_IN: Endpoint = Endpoint {
    protobuf: true,
    metadata: true,
    tables: true,
};
const CUSTOM: Endpoint = Endpoint {
    protobuf: false,
    metadata: true,
    tables: true,
};

fn pick(accept: &str) -> Option<Format> {
    negotiate(accept, BUILT_IN).ok()
}

fn metadata(list: bool, encoding: Encoding) -> Format {
    Format::Metadata(Metadata {
        beta: false,
        list,
        encoding,
    })
}

#[test]
fn clauses_are_taken_by_quality_then_specificity() {
    assert_eq!(pick(""), Some(Format::Json));
    assert_eq!(
        pick("application/vnd.kubernetes.protobuf;q=0.9, application/json;q=0.5"),
        Some(Format::Protobuf)
    );
    assert_eq!(
        pick("application/json;q=0.5, application/vnd.kubernetes.protobuf;q=0.9"),
        Some(Format::Protobuf)
    );
    assert_eq!(
        pick("application/vnd.kubernetes.protobuf;q=0.1, application/yaml"),
        Some(Format::Yaml)
    );
    // A wildcard comes after a specific type of the same quality; the first serializer
    // (JSON) answers it.
    assert_eq!(
        pick("*/*, application/vnd.kubernetes.protobuf"),
        Some(Format::Protobuf)
    );
    assert_eq!(pick("*/*;q=0.1"), Some(Format::Json));
    assert_eq!(pick("*"), Some(Format::Json));
    assert_eq!(pick("application/*"), Some(Format::Json));
    assert_eq!(pick("text/html, */*;q=0.1"), Some(Format::Json));
    // goautoneg keeps q=0 clauses, and an unparsable q is 0.
    assert_eq!(pick("application/yaml;q=0"), Some(Format::Yaml));
    assert_eq!(
        pick("application/json;q=x, application/yaml;q=0.5"),
        Some(Format::Yaml)
    );
    // Unknown parameters are ignored.
    assert_eq!(pick("application/json;charset=utf-8"), Some(Format::Json));
}

#[test]
fn nothing_acceptable_is_upstreams_406() {
    for accept in [
        "text/html",
        "application/cbor",
        "application",
        " ",
        "text/*;q=1",
    ] {
        let err = negotiate(accept, BUILT_IN).expect_err(accept);
        let status = err.status();
        assert_eq!(status.code, 406, "{accept}");
        assert_eq!(status.reason, "NotAcceptable");
        assert_eq!(
            status.message,
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
    }
}

#[test]
fn custom_resources_have_no_protobuf_of_their_own() {
    assert!(negotiate("application/vnd.kubernetes.protobuf", CUSTOM).is_err());
    assert_eq!(
        negotiate(
            "application/vnd.kubernetes.protobuf,application/json",
            CUSTOM
        )
        .ok(),
        Some(Format::Json)
    );
    // Their metadata has one.
    assert_eq!(
        negotiate(
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
            CUSTOM
        )
        .ok(),
        Some(metadata(true, Encoding::Protobuf))
    );
}

#[test]
fn tables_are_json_and_metadata_any_serializer() {
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io";
    assert_eq!(pick(table), Some(Format::Table));
    assert_eq!(
        pick("application/json;as=Table;v=v1beta1;g=meta.k8s.io"),
        Some(Format::Table)
    );
    // No protobuf Table: passed over for the next clause, or 406.
    assert_eq!(
        pick(&format!(
            "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1, {table}"
        )),
        Some(Format::Table)
    );
    assert!(pick("application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1").is_none());
    assert_eq!(
        pick("application/yaml;as=Table;g=meta.k8s.io;v=v1"),
        Some(Format::YamlTable)
    );
    // A wildcard's first serializer is JSON.
    assert_eq!(pick("*/*;as=Table;g=meta.k8s.io;v=v1"), Some(Format::Table));
    // Other groups, versions and kinds are no transform upstream knows.
    for other in [
        "application/json;as=Table;g=meta.k8s.io;v=v2",
        "application/json;as=Table",
        "application/json;as=Pod;g=meta.k8s.io;v=v1",
        "application/json;g=meta.k8s.io;v=v1",
    ] {
        assert!(pick(other).is_none(), "{other}");
    }
    assert_eq!(
        pick("application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"),
        Some(metadata(false, Encoding::Protobuf))
    );
    assert_eq!(
        pick("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1"),
        Some(Format::Metadata(Metadata {
            beta: true,
            list: true,
            encoding: Encoding::Json
        }))
    );
    assert_eq!(
        pick("application/yaml;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"),
        Some(metadata(false, Encoding::Yaml))
    );
    // An endpoint without the transform (the metrics API) passes it over.
    let plain = Endpoint {
        protobuf: false,
        metadata: false,
        tables: true,
    };
    assert_eq!(
        negotiate(
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
            plain
        )
        .ok(),
        Some(Format::Json)
    );
}

#[test]
fn stream_and_server_version_parameters() {
    assert_eq!(pick("application/json;stream=watch"), Some(Format::Json));
    assert_eq!(
        pick("application/vnd.kubernetes.protobuf;stream=watch"),
        Some(Format::Protobuf)
    );
    assert!(pick("application/yaml;stream=watch").is_none());
    assert!(pick("application/json;stream=other").is_none());
    assert_eq!(pick("application/json;sv=v1"), Some(Format::Json));
    assert!(pick("application/json;sv=v2").is_none());
}

#[test]
fn the_order_is_goautonegs() {
    let order = |header: &str| -> Vec<String> {
        parse(header)
            .iter()
            .map(|c| format!("{}/{}", c.kind, c.sub))
            .collect()
    };
    // Its comparison puts a specific type before a wildcard whatever their qualities.
    assert_eq!(
        order("*/*, text/*, text/plain;q=0.5, application/json"),
        ["application/json", "text/plain", "text/*", "*/*"]
    );
    assert_eq!(order("a/b;q=0.2, c/d;q=0.8, e/f"), ["e/f", "c/d", "a/b"]);
}

#[test]
fn an_endpoint_without_tables_passes_a_table_over() {
    // Discovery's documents: JSON, YAML or protobuf, never a Table.
    let discovery = Endpoint {
        protobuf: true,
        metadata: false,
        tables: false,
    };
    let table_then_protobuf =
        "application/json;as=Table;g=meta.k8s.io;v=v1,application/vnd.kubernetes.protobuf";
    assert_eq!(
        negotiate(table_then_protobuf, discovery).ok(),
        Some(Format::Protobuf)
    );
    assert_eq!(pick(table_then_protobuf), Some(Format::Table));
    assert!(negotiate("application/json;as=Table;g=meta.k8s.io;v=v1", discovery).is_err());
}
