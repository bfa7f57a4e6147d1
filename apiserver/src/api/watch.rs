//! Watch responses: a chunked stream of WatchEvent JSON lines (or length-delimited protobuf
//! WatchEvents) that ends cleanly on `timeoutSeconds` and on server shutdown.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::{FutureExt, StreamExt};
use registry::store::watch::ServedEvents;
use registry::{ResourceInfo, WatchEvent, WatchEventType};
use serde_json::Value;

use super::protobuf::encode;
use super::response::{Encoding, Format, Metadata, JSON, PROTOBUF_WATCH};
use crate::table::{self, IncludeObject};

/// One watch event as upstream frames it: a metav1.WatchEvent (`type`, then `object`, the
/// object in its own kind's wire order) and a newline.
fn frame(kind: &str, object: &Value) -> Vec<u8> {
    let mut line = Vec::with_capacity(1024);
    // The event types (ADDED, MODIFIED, ...) are plain ASCII words: nothing to escape.
    line.extend_from_slice(br#"{"type":""#);
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(br#"","object":"#);
    // A JSON value always encodes (string keys, finite numbers); were it ever to fail, the
    // frame stays broken and the client's decoder ends the watch, which it then restarts.
    if let Err(e) = registry::wire::write(&mut line, object, registry::wire::Style::Compact) {
        tracing::error!(error = %e, "encoding a watch event");
    }
    line.extend_from_slice(b"}\n");
    line
}

/// The frame of one event in `format`.
fn encoded(
    info: &ResourceInfo,
    event: WatchEvent,
    format: Format,
    include: IncludeObject,
) -> Bytes {
    let object = match (format, event.kind) {
        (
            Format::Table,
            WatchEventType::Added | WatchEventType::Modified | WatchEventType::Deleted,
        ) => table::table_for_watch_event(info, &event.object, include),
        // Upstream sends the object as it is when it cannot be transformed (a watch has
        // no lists), and never transforms an ERROR event's Status.
        (Format::Metadata(meta), _) => {
            super::partial_metadata::transform(&event.object, meta).unwrap_or(event.object)
        }
        _ => event.object,
    };
    let bytes = match format {
        Format::Protobuf
        | Format::Metadata(Metadata {
            encoding: Encoding::Protobuf,
            ..
        }) => match encode::encode(&object) {
            Ok(body) => encode::watch_frame(event.kind.as_str(), &body),
            // The stream cannot carry a half event; the client's decoder would end the
            // watch on a broken frame anyway, so the event is logged and left out.
            Err(e) => {
                tracing::error!(error = %e, "encoding a watch event as protobuf");
                Vec::new()
            }
        },
        _ => frame(event.kind.as_str(), &object),
    };
    Bytes::from(bytes)
}

/// The part of a shared frame's key that is the sender's: the encoding (a Table depends on
/// the request's `includeObject`, and is made per watcher). YAML watches are sent as JSON.
fn shared_format(format: Format) -> Option<u64> {
    match format {
        // PartialObjectMetadata watches are rare (metadata informers): made per watcher.
        Format::Table | Format::YamlTable | Format::Metadata(_) => None,
        Format::Protobuf => Some(1),
        Format::Json | Format::Yaml => Some(0),
    }
}

pub fn stream(
    info: Arc<ResourceInfo>,
    events: ServedEvents,
    format: Format,
    include: IncludeObject,
    timeout_seconds: Option<i64>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Response {
    let sent = crate::metrics::metrics().watch_events(&info.group, &info.version, &info.kind);
    let lines = events.map(move |event| {
        sent.inc();
        // A change of the watch cache is decoded and framed once for all the watchers that
        // send it alike; they send the same bytes, each without a copy of them.
        let shared = shared_format(format).and_then(|tag| {
            event
                .shared()
                .map(|(encodings, key)| (encodings.clone(), key | tag))
        });
        let bytes = match shared {
            Some((encodings, key)) => {
                encodings.get_or_make(key, || encoded(&info, event.into_event(), format, include))
            }
            None => encoded(&info, event.into_event(), format, include),
        };
        Ok::<_, Infallible>(bytes)
    });
    let timeout = match timeout_seconds.filter(|t| *t > 0) {
        Some(t) => tokio::time::sleep(Duration::from_secs(t as u64)).boxed(),
        None => futures::future::pending().boxed(),
    };
    let end = async move {
        tokio::select! {
            _ = timeout => {}
            _ = shutdown => {}
        }
    };
    let body = Body::from_stream(lines.take_until(end));
    let content_type = content_type(format).unwrap_or(JSON);
    (StatusCode::OK, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// The content type of a watch in `format`; None for YAML, which has no streaming form.
pub fn content_type(format: Format) -> Option<&'static str> {
    let encoding = match format {
        Format::Metadata(meta) => meta.encoding,
        Format::Yaml | Format::YamlTable => Encoding::Yaml,
        Format::Protobuf => Encoding::Protobuf,
        Format::Json | Format::Table => Encoding::Json,
    };
    match encoding {
        Encoding::Json => Some(JSON),
        Encoding::Yaml => None,
        Encoding::Protobuf => Some(PROTOBUF_WATCH),
    }
}
