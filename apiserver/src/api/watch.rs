//! Watch responses: a chunked stream of WatchEvent JSON lines that ends cleanly on
//! `timeoutSeconds` and on server shutdown.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::{FutureExt, StreamExt};
use registry::store::watch::WatchEvents;
use registry::{ResourceInfo, WatchEventType};
use serde_json::json;

use super::response::{Format, JSON};
use crate::table::{self, IncludeObject};

pub fn stream(
    info: Arc<ResourceInfo>,
    events: WatchEvents,
    format: Format,
    include: IncludeObject,
    timeout_seconds: Option<i64>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Response {
    let sent = crate::metrics::metrics().watch_events(&info.group, &info.version, &info.kind);
    let lines = events.map(move |event| {
        sent.inc();
        let object = match (format, event.kind) {
            (
                Format::Table,
                WatchEventType::Added | WatchEventType::Modified | WatchEventType::Deleted,
            ) => table::table_for_watch_event(&info, &event.object, include),
            _ => event.object,
        };
        let mut line = serde_json::to_vec(&json!({"type": event.kind.as_str(), "object": object}))
            .unwrap_or_default();
        line.push(b'\n');
        Ok::<_, Infallible>(Bytes::from(line))
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
    (StatusCode::OK, [(header::CONTENT_TYPE, JSON)], body).into_response()
}
