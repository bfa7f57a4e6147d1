//! List responses written to the socket an item at a time: the items of a [`ListStream`] are
//! encoded as they are decoded and leave in chunks of about [`CHUNK`] bytes, so a list holds
//! about a page and a chunk, never the collection (upstream's streaming list encoders).
//!
//! Every format produces exactly the bytes the whole list would serialise to (JSON, indented
//! JSON, YAML, Table): each item is serialised on its own and framed as it would sit inside
//! the list.
//!
//! The first chunk is filled before answering, so that an error reading the first page is
//! still a Status, and a list that fits in one chunk goes out whole, with a Content-Length,
//! as before. The rest of a longer list is read and encoded on the low-priority runtime. An
//! error after that cannot change the status already sent: the body ends with it, which makes
//! the server abort the response.

mod json;
mod protobuf;
mod table;
mod yaml;

#[cfg(test)]
mod tests;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use registry::object::Object;
use registry::store::ListStream;
use registry::{RegistryError, ResourceInfo};
use serde_json::Value;
use tracing::Instrument;

use super::response::{Format, JSON, YAML};
use crate::table::{IncludeObject, Now};

/// How many bytes the body gathers before handing them to the connection.
pub(crate) const CHUNK: usize = 64 * 1024;
/// How many encoded chunks wait for the connection, at most, while the next is encoded.
pub(super) const QUEUED_CHUNKS: usize = 2;
/// How many bytes are encoded in one poll before the task yields. Items in memory and a fast
/// reader leave the stream always ready: without yielding, the task would encode a whole large
/// list in one poll, holding a worker thread from every other task for as long (Go's scheduler
/// preempts goroutines; tokio's does not): the first chunk's requests on the main runtime,
/// the other large lists on the low-priority one.
const ENCODED_PER_POLL: usize = 4 * 1024;

/// How a list is written out.
pub(crate) enum ListEncoding<'a> {
    Json,
    /// `?pretty=true`.
    PrettyJson,
    Yaml,
    /// Protobuf, written whole (its envelope leads with the list's length).
    Protobuf,
    /// A meta.k8s.io/v1 Table whose rows are aged against `now`, indented when `pretty`, in
    /// YAML when `yaml`.
    Table {
        info: &'a ResourceInfo,
        include: IncludeObject,
        now: Now,
        pretty: bool,
        yaml: bool,
    },
}

impl<'a> ListEncoding<'a> {
    /// The encoding of a list in the negotiated format, indented when `pretty`.
    pub(crate) fn of(
        format: Format,
        pretty: bool,
        info: &'a ResourceInfo,
        include: IncludeObject,
    ) -> Self {
        match format {
            Format::Table | Format::YamlTable => ListEncoding::Table {
                info,
                include,
                now: chrono::Utc::now(),
                pretty,
                yaml: format == Format::YamlTable,
            },
            Format::Yaml => ListEncoding::Yaml,
            Format::Protobuf => ListEncoding::Protobuf,
            // Already cut down to metadata (see `partial_metadata::list`).
            Format::Metadata(meta) => Self::of(meta.encoding.format(), pretty, info, include),
            Format::Json if pretty => ListEncoding::PrettyJson,
            Format::Json => ListEncoding::Json,
        }
    }
}

/// How one format frames the items of a list: what comes before them, between them and after.
trait Framing: Send {
    fn item(&mut self, out: &mut Vec<u8>, item: &Value) -> Result<(), RegistryError>;
    fn tail(&mut self, out: &mut Vec<u8>) -> Result<(), RegistryError>;
}

fn encode_error(e: impl std::fmt::Display) -> RegistryError {
    RegistryError::Internal(format!("encoding the list: {e}"))
}

/// The list's response: status 200 with the list, or the Status of an error met before the
/// first chunk.
pub(crate) async fn response(
    list: ListStream,
    encoding: ListEncoding<'_>,
) -> Result<Response, RegistryError> {
    let content_type = match encoding {
        ListEncoding::Protobuf => return protobuf::response(list).await,
        ListEncoding::Yaml | ListEncoding::Table { yaml: true, .. } => YAML,
        _ => JSON,
    };
    let kind = list.kind.clone();
    let mut chunks = Chunks::new(list, encoding)?;
    let first = chunks.next().await.transpose()?.unwrap_or_default();
    if chunks.done {
        return Ok((
            StatusCode::OK,
            [(header::CONTENT_TYPE, content_type)],
            first,
        )
            .into_response());
    }
    chunks.eager = true;
    let body = Body::from_stream(
        futures::stream::once(async { Ok(first) }).chain(encoded_elsewhere(chunks, kind)),
    );
    Ok((StatusCode::OK, [(header::CONTENT_TYPE, content_type)], body).into_response())
}

/// The rest of a list longer than a chunk, encoded on the low-priority runtime (see
/// [`crate::low_priority`]): reading, decoding and encoding a large list is the bulk of its
/// cost, and there it no longer delays short requests on a busy machine. The chunks come
/// through a channel of [`QUEUED_CHUNKS`], so the list still holds a few chunks at most, and
/// the encoding stops when the response is dropped (the client went away).
fn encoded_elsewhere(
    mut chunks: Chunks,
    kind: String,
) -> impl Stream<Item = Result<Bytes, RegistryError>> + Send + 'static {
    let (tx, rx) = tokio::sync::mpsc::channel(QUEUED_CHUNKS);
    let encode = async move {
        while let Some(chunk) = chunks.next().await {
            if let Err(e) = &chunk {
                tracing::error!(list = %kind, error = %e, "list failed while being sent; aborting the response");
            }
            if tx.send(chunk).await.is_err() {
                return;
            }
        }
    };
    // In the request's span, so that a failure is logged with the request.
    crate::low_priority::spawn(encode.instrument(tracing::Span::current()));
    futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    })
}

/// The encoded list as a stream of chunks.
struct Chunks {
    items: BoxStream<'static, Result<Object, RegistryError>>,
    framing: Box<dyn Framing>,
    buf: Vec<u8>,
    done: bool,
    /// Whether a partial chunk leaves as soon as the next item is not ready (after the first
    /// chunk: the client gets what there is while the next page is read).
    eager: bool,
    /// A yield to the scheduler under way (see [`ENCODED_PER_POLL`]).
    paused: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl Chunks {
    fn new(list: ListStream, encoding: ListEncoding<'_>) -> Result<Self, RegistryError> {
        let ListStream {
            api_version,
            kind,
            metadata,
            items,
        } = list;
        let mut buf = Vec::with_capacity(CHUNK);
        let framing: Box<dyn Framing> = match encoding {
            ListEncoding::Json => Box::new(json::Json::new(
                &mut buf,
                registry::wire::Style::Compact,
                &api_version,
                &kind,
                metadata,
            )?),
            ListEncoding::PrettyJson => Box::new(json::Json::new(
                &mut buf,
                registry::wire::Style::Pretty,
                &api_version,
                &kind,
                metadata,
            )?),
            ListEncoding::Yaml => {
                Box::new(yaml::Yaml::new(&mut buf, &api_version, &kind, metadata)?)
            }
            ListEncoding::Protobuf => {
                return Err(RegistryError::Internal(
                    "a protobuf list is not chunked".to_string(),
                ))
            }
            ListEncoding::Table {
                info,
                include,
                now,
                pretty,
                yaml,
            } => {
                let style = match (yaml, pretty) {
                    (true, _) => table::Style::Yaml,
                    (false, true) => table::Style::Json(registry::wire::Style::Pretty),
                    (false, false) => table::Style::Json(registry::wire::Style::Compact),
                };
                Box::new(table::Table::new(
                    &mut buf, info, metadata, include, now, style,
                )?)
            }
        };
        Ok(Self {
            items,
            framing,
            buf,
            done: false,
            eager: false,
            paused: None,
        })
    }

    fn take(&mut self) -> Bytes {
        Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)))
    }

    fn fail(&mut self, e: RegistryError) -> Poll<Option<Result<Bytes, RegistryError>>> {
        self.done = true;
        self.buf = Vec::new();
        Poll::Ready(Some(Err(e)))
    }
}

impl Stream for Chunks {
    type Item = Result<Bytes, RegistryError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(pause) = this.paused.as_mut() {
            if pause.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.paused = None;
        }
        let start = this.buf.len();
        loop {
            if this.buf.len() >= CHUNK {
                return Poll::Ready(Some(Ok(this.take())));
            }
            if this.buf.len() - start >= ENCODED_PER_POLL {
                // Let other tasks run (tokio's yield, which also lets the I/O driver see
                // other connections first); the chunk goes on filling at the next poll.
                let mut pause = Box::pin(tokio::task::yield_now());
                if pause.as_mut().poll(cx).is_pending() {
                    this.paused = Some(pause);
                    return Poll::Pending;
                }
            }
            match this.items.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(item))) => {
                    if let Err(e) = this.framing.item(&mut this.buf, &item) {
                        return this.fail(e);
                    }
                }
                Poll::Ready(Some(Err(e))) => return this.fail(e),
                Poll::Ready(None) => {
                    if let Err(e) = this.framing.tail(&mut this.buf) {
                        return this.fail(e);
                    }
                    this.done = true;
                    return Poll::Ready((!this.buf.is_empty()).then(|| Ok(this.take())));
                }
                Poll::Pending if this.eager && !this.buf.is_empty() => {
                    return Poll::Ready(Some(Ok(this.take())));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
