//! A list in protobuf. The runtime.Unknown envelope gives the length of the list's message
//! before its items, so the body is built whole: each item's message as it is read (the JSON
//! item dropped at once), then the envelope around them. As for the other formats, the first
//! [`CHUNK`] of items is encoded with the request and the rest on the low-priority runtime,
//! yielding every [`ENCODED_PER_POLL`] bytes (see the module above).

use axum::http::StatusCode;
use axum::response::Response;
use futures::stream::BoxStream;
use futures::TryStreamExt;
use registry::object::Object;
use registry::store::ListStream;
use registry::RegistryError;
use serde_json::Value;
use tracing::Instrument;

use super::{CHUNK, ENCODED_PER_POLL};
use crate::api::protobuf::encode;
use crate::api::response;

type Items = BoxStream<'static, Result<Object, RegistryError>>;

fn encode_error(e: encode::EncodeError) -> RegistryError {
    RegistryError::Internal(format!("encoding the list as protobuf: {e}"))
}

/// The items' messages, read and encoded until `limit` bytes (None: the end); whether the
/// end was reached.
async fn encode_items(
    items: &mut Items,
    api_version: &str,
    kind: &str,
    messages: &mut Vec<Vec<u8>>,
    limit: Option<usize>,
) -> Result<bool, RegistryError> {
    let mut size = 0;
    let mut since_yield = 0;
    while limit.is_none_or(|limit| size < limit) {
        let Some(item) = items.try_next().await? else {
            return Ok(true);
        };
        let message = encode::message(api_version, kind, &item).map_err(encode_error)?;
        size += message.len();
        since_yield += message.len();
        messages.push(message);
        if since_yield >= ENCODED_PER_POLL {
            since_yield = 0;
            tokio::task::yield_now().await;
        }
    }
    Ok(false)
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
    let done = encode_items(
        &mut items,
        &api_version,
        &item_kind,
        &mut messages,
        Some(CHUNK),
    )
    .await?;
    if !done {
        // The rest of a large list, away from the requests' threads; a client that goes
        // away (the receiver dropped) stops it at the next item.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let api_version = api_version.clone();
        let rest = async move {
            let mut tx = tx;
            let encoded = tokio::select! {
                r = encode_items(&mut items, &api_version, &item_kind, &mut messages, None) => {
                    r.map(|_| messages)
                }
                _ = tx.closed() => return,
            };
            let _ = tx.send(encoded);
        };
        crate::low_priority::spawn(rest.instrument(tracing::Span::current()));
        messages = rx
            .await
            .map_err(|_| RegistryError::Internal("the list's encoding stopped".to_string()))??;
    }
    let body = encode::list(&api_version, &kind, &Value::Object(metadata), &messages)
        .map_err(encode_error)?;
    Ok(response::protobuf(StatusCode::OK, body))
}
