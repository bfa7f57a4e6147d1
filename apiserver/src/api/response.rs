//! Responses: JSON bodies, and every error as a metav1.Status with its code (the one place
//! registry errors become HTTP).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, HttpBody};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use registry::store::JsonPieces;
use registry::RegistryError;
use serde_json::Value;

pub const JSON: &str = "application/json";
pub const YAML: &str = "application/yaml";

/// A plain-text body (pod logs).
pub fn text(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain")], body).into_response()
}

pub fn json(status: StatusCode, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    raw_json(status, Bytes::from(bytes))
}

/// The body in the negotiated format; `pretty` indents JSON as `?pretty=true` asks.
pub fn encoded(status: StatusCode, body: &Value, format: Format, pretty: bool) -> Response {
    match format {
        Format::Yaml => {
            let text = serde_yaml_ng::to_string(body).unwrap_or_default();
            (status, [(header::CONTENT_TYPE, YAML)], text).into_response()
        }
        _ if pretty => {
            let mut bytes = serde_json::to_vec_pretty(body).unwrap_or_default();
            bytes.push(b'\n');
            raw_json(status, Bytes::from(bytes))
        }
        _ => json(status, body),
    }
}

pub fn raw_json(status: StatusCode, body: Bytes) -> Response {
    (status, [(header::CONTENT_TYPE, JSON)], body).into_response()
}

/// A JSON object from shared pieces (a stored object around its spliced resourceVersion):
/// written as they are, never joined, with the exact Content-Length.
pub fn json_pieces(status: StatusCode, body: JsonPieces) -> Response {
    let pieces = Pieces {
        remaining: body.len() as u64,
        rest: body.into_pieces().into_iter(),
    };
    (status, [(header::CONTENT_TYPE, JSON)], Body::new(pieces)).into_response()
}

struct Pieces {
    rest: std::array::IntoIter<Bytes, 3>,
    remaining: u64,
}

impl HttpBody for Pieces {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let next = this.rest.by_ref().find(|piece| !piece.is_empty());
        if let Some(piece) = &next {
            this.remaining -= piece.len() as u64;
        }
        Poll::Ready(next.map(|piece| Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

pub fn error(err: RegistryError) -> Response {
    let status = err.status();
    let code = StatusCode::from_u16(status.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if code.is_server_error() {
        tracing::warn!(code = status.code, message = %status.message, "request failed");
    }
    let retry_after = status.details.as_ref().and_then(|d| d.retry_after_seconds);
    let mut response = json(code, &serde_json::to_value(status).unwrap_or(Value::Null));
    // Upstream's writers turn a Status's retryAfterSeconds into the header clients back off by.
    if let Some(seconds) = retry_after.filter(|s| *s > 0) {
        if let Ok(value) = header::HeaderValue::from_str(&seconds.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    response
}

/// What kube-apiserver answers for a path it does not serve.
pub async fn not_found() -> Response {
    let status = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server could not find the requested resource",
        "reason": "NotFound",
        "details": {},
        "code": 404
    });
    json(StatusCode::NOT_FOUND, &status)
}

/// What the client accepts, as far as we can answer it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
    /// meta.k8s.io/v1 Table (`kubectl get`).
    Table,
}

/// Picks the response format from Accept, upstream-style: the first media type we can
/// produce wins; only unproducible types (protobuf) is 406 so clients fall back.
pub fn negotiate(headers: &HeaderMap) -> Result<Format, RegistryError> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if accept.trim().is_empty() {
        return Ok(Format::Json);
    }
    for item in accept.split(',') {
        let mut params = item.split(';').map(str::trim);
        let media = params.next().unwrap_or("");
        let params: Vec<&str> = params.collect();
        let param = |name: &str| {
            params
                .iter()
                .find_map(|p| p.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
        };
        match media {
            "application/json" | "application/*" | "*/*" => {
                match (param("as"), param("g"), param("v")) {
                    (Some("Table"), Some("meta.k8s.io"), Some("v1" | "v1beta1")) => {
                        return Ok(Format::Table)
                    }
                    (None, _, _) => return Ok(Format::Json),
                    // Other transformed forms (PartialObjectMetadata, ...) are not served yet.
                    _ => continue,
                }
            }
            "application/yaml" if param("as").is_none() => return Ok(Format::Yaml),
            _ => continue,
        }
    }
    Err(RegistryError::NotAcceptable(format!(
        "only the following media types are accepted: application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io (requested: {accept})"
    )))
}

/// Warnings as upstream sends them: `Warning: 299 - "<text>"`, one header each, the text
/// quoted as Go's strconv.Quote does (non-ASCII text goes out as UTF-8 bytes, as Go's does).
pub fn add_warnings(response: &mut Response, warnings: &[String]) {
    for text in warnings {
        if let Ok(value) = header::HeaderValue::from_bytes(warning_value(text).as_bytes()) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
}

fn warning_value(text: &str) -> String {
    format!("299 - {}", registry::validation::quote(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn pieces_are_sent_whole_with_their_exact_length() {
        use http_body_util::BodyExt;
        let body = JsonPieces::whole(Bytes::from_static(br#"{"kind":"ConfigMap"}"#));
        let response = json_pieces(StatusCode::OK, body);
        assert_eq!(response.headers()[header::CONTENT_TYPE], JSON);
        let body = response.into_body();
        assert_eq!(body.size_hint().exact(), Some(20));
        let collected = body.collect().await.expect("body").to_bytes();
        assert_eq!(&collected[..], br#"{"kind":"ConfigMap"}"#);
    }

    #[test]
    fn warnings_are_quoted_as_go_does() {
        assert_eq!(
            warning_value(r#"duplicate field "spec.replicas""#),
            r#"299 - "duplicate field \"spec.replicas\"""#
        );
        assert_eq!(warning_value("a\\b\né"), r#"299 - "a\\b\né""#);
    }
}
