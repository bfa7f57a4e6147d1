//! A list in protobuf. The runtime.Unknown envelope gives the length of the list's message
//! before its items, so the body is built whole: each item's message as it is read (the JSON
//! item dropped at once), then the envelope around them.

use axum::http::StatusCode;
use axum::response::Response;
use futures::TryStreamExt;
use registry::store::ListStream;
use registry::RegistryError;
use serde_json::Value;

use crate::api::protobuf::encode;
use crate::api::response;

fn encode_error(e: encode::EncodeError) -> RegistryError {
    RegistryError::Internal(format!("encoding the list as protobuf: {e}"))
}

pub(super) async fn response(list: ListStream) -> Result<Response, RegistryError> {
    let ListStream {
        api_version,
        kind,
        metadata,
        mut items,
    } = list;
    let item_kind = kind.strip_suffix("List").unwrap_or(&kind).to_string();
    let mut messages = Vec::new();
    while let Some(item) = items.try_next().await? {
        messages.push(encode::message(&api_version, &item_kind, &item).map_err(encode_error)?);
    }
    let body = encode::list(&api_version, &kind, &Value::Object(metadata), &messages)
        .map_err(encode_error)?;
    Ok(response::protobuf(StatusCode::OK, body))
}
