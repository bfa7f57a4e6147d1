//! Every streamed format against the encoders of a whole list (the oracle: what the server
//! answered before lists were streamed), byte for byte.

#[cfg(target_os = "linux")]
mod elsewhere;
mod formats;
mod large;
mod random;

use std::sync::Arc;

use axum::http::{header, StatusCode};
use axum::response::Response;
use chrono::{DateTime, Utc};
use futures::StreamExt;
use registry::store::ListStream;
use registry::{Catalogue, RegistryError, ResourceInfo};
use serde_json::{json, Map, Value};

use super::{response, ListEncoding};
use crate::api::response::{encoded, Format};
use crate::table::{self, IncludeObject};

/// Every way a list is written, with the Table's inclusions.
/// (Protobuf is checked apart, on lists of valid objects only: see [`assert_protobuf_identical`].)
const ENCODINGS: [Encoding; 8] = [
    Encoding::Json,
    Encoding::PrettyJson,
    Encoding::Yaml,
    Encoding::Table(IncludeObject::Metadata),
    Encoding::Table(IncludeObject::None),
    Encoding::Table(IncludeObject::Object),
    Encoding::PrettyTable(IncludeObject::Metadata),
    Encoding::PrettyTable(IncludeObject::Object),
];

#[derive(Clone, Copy, Debug)]
enum Encoding {
    Json,
    PrettyJson,
    Yaml,
    /// Built whole, not chunked; its oracle is the encoder of one object run on the list.
    Protobuf,
    Table(IncludeObject),
    /// `?pretty=true`: json.MarshalIndent of the whole Table.
    PrettyTable(IncludeObject),
}

/// 2024-05-01T12:00:00Z: Table ages are computed against a fixed clock.
fn noon() -> DateTime<Utc> {
    DateTime::from_timestamp(1_714_564_800, 0).unwrap_or_default()
}

fn info(plural: &str) -> Arc<ResourceInfo> {
    Catalogue::builtin()
        .lookup("", "v1", plural)
        .expect("a built-in resource")
}

/// The parts of a list, as `Store::list_stream` hands them out.
#[derive(Clone)]
struct Parts {
    api_version: String,
    kind: String,
    metadata: Map<String, Value>,
    items: Vec<Value>,
}

impl Parts {
    fn new(kind: &str, metadata: Value, items: Vec<Value>) -> Self {
        Self {
            api_version: "v1".into(),
            kind: kind.into(),
            metadata: metadata.as_object().cloned().unwrap_or_default(),
            items,
        }
    }

    fn stream(self) -> ListStream {
        ListStream {
            api_version: self.api_version,
            kind: self.kind,
            metadata: self.metadata,
            items: futures::stream::iter(self.items.into_iter().map(Ok)).boxed(),
        }
    }

    /// The list as `Store::list` answers it.
    fn whole(&self) -> Value {
        json!({
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": self.metadata,
            "items": self.items,
        })
    }
}

async fn body_of(response: Response) -> Vec<u8> {
    axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("the whole body")
        .to_vec()
}

/// What the server answered before lists were streamed: the whole list, then its encoder.
async fn old(list: Value, info: &ResourceInfo, encoding: Encoding) -> Vec<u8> {
    let response = match encoding {
        Encoding::Json => encoded(StatusCode::OK, &list, Format::Json, false),
        Encoding::PrettyJson => encoded(StatusCode::OK, &list, Format::Json, true),
        Encoding::Yaml => encoded(StatusCode::OK, &list, Format::Yaml, false),
        Encoding::Protobuf => encoded(StatusCode::OK, &list, Format::Protobuf, false),
        Encoding::Table(include) | Encoding::PrettyTable(include) => {
            let items = list["items"].as_array().cloned().unwrap_or_default();
            let metadata = table::list_table_metadata(list.get("metadata"));
            let table = table::table_at(info, &items, metadata, include, noon());
            let pretty = matches!(encoding, Encoding::PrettyTable(_));
            crate::api::response::json_in(StatusCode::OK, &table, pretty)
        }
    };
    body_of(response).await
}

fn list_encoding(info: &ResourceInfo, encoding: Encoding) -> ListEncoding<'_> {
    match encoding {
        Encoding::Json => ListEncoding::Json,
        Encoding::PrettyJson => ListEncoding::PrettyJson,
        Encoding::Yaml => ListEncoding::Yaml,
        Encoding::Protobuf => ListEncoding::Protobuf,
        Encoding::Table(include) => ListEncoding::Table {
            info,
            include,
            now: noon(),
            pretty: false,
            yaml: false,
        },
        Encoding::PrettyTable(include) => ListEncoding::Table {
            info,
            include,
            now: noon(),
            pretty: true,
            yaml: false,
        },
    }
}

/// The streamed response of a list.
async fn streamed_response(
    list: ListStream,
    info: &ResourceInfo,
    encoding: Encoding,
) -> Result<Response, RegistryError> {
    response(list, list_encoding(info, encoding)).await
}

async fn streamed(list: ListStream, info: &ResourceInfo, encoding: Encoding) -> Vec<u8> {
    let response = streamed_response(list, info, encoding)
        .await
        .expect("a list response");
    assert_eq!(response.status(), StatusCode::OK);
    let content_type = match encoding {
        Encoding::Yaml => "application/yaml",
        Encoding::Protobuf => "application/vnd.kubernetes.protobuf",
        _ => "application/json",
    };
    assert_eq!(response.headers()[header::CONTENT_TYPE], content_type);
    body_of(response).await
}

/// Asserts the protobuf list (items encoded as they come, the rest of a large list on the
/// low-priority runtime) is the one-object encoder's bytes for the whole list.
async fn assert_protobuf_identical(parts: &Parts, info: &ResourceInfo) {
    let want = old(parts.whole(), info, Encoding::Protobuf).await;
    let got = streamed(parts.clone().stream(), info, Encoding::Protobuf).await;
    assert!(
        want.starts_with(b"k8s\0"),
        "{}",
        String::from_utf8_lossy(&want)
    );
    assert_eq!(got, want);
}

/// Asserts every encoding of `parts` streams the oracle's bytes.
async fn assert_identical(parts: &Parts, info: &ResourceInfo) {
    for encoding in ENCODINGS {
        let want = old(parts.whole(), info, encoding).await;
        let got = streamed(parts.clone().stream(), info, encoding).await;
        if got != want {
            panic!(
                "{encoding:?} differs from the whole list's encoding\n--- streamed\n{}\n--- whole\n{}",
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want)
            );
        }
    }
}
