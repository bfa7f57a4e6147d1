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
use registry::wire::{self, Style};
use registry::RegistryError;
use serde_json::Value;

use super::negotiation::{self, Endpoint};

pub const JSON: &str = "application/json";
pub const YAML: &str = "application/yaml";
pub const PROTOBUF: &str = super::protobuf::MEDIA_TYPE;
/// A protobuf watch: length-delimited frames.
pub const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// A plain-text body (pod logs).
pub fn text(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain")], body).into_response()
}

/// A JSON body as kube-apiserver writes it (registry's `wire`: Go field order, a newline).
pub fn json(status: StatusCode, body: &Value) -> Response {
    json_in(status, body, false)
}

/// A JSON body, indented when `pretty` (see [`is_pretty`]).
pub fn json_in(status: StatusCode, body: &Value, pretty: bool) -> Response {
    let style = if pretty {
        Style::Pretty
    } else {
        Style::Compact
    };
    match wire::body(body, style) {
        Ok(bytes) => raw_json(status, Bytes::from(bytes)),
        Err(e) => error(e),
    }
}

/// An answer in the negotiated format, cut down to its metadata first when that was asked
/// for: that failing is an error for the caller to write as it writes the request's errors
/// (upstream negotiates an error's format again, without the transformed forms).
pub fn answer(
    status: StatusCode,
    body: &Value,
    format: Format,
    pretty: bool,
) -> Result<Response, RegistryError> {
    Ok(match format {
        Format::Metadata(meta) => {
            let partial = super::partial_metadata::transform(body, meta)?;
            encoded(status, &partial, format, pretty)
        }
        _ => encoded(status, body, format, pretty),
    })
}

/// The body in the negotiated format; `pretty` indents JSON (see [`is_pretty`]).
pub fn encoded(status: StatusCode, body: &Value, format: Format, pretty: bool) -> Response {
    match format {
        // Already cut down (see [`answer`]).
        Format::Metadata(meta) => encoded(status, body, meta.encoding.format(), pretty),
        Format::Protobuf => match super::protobuf::encode::encode(body) {
            Ok(bytes) => protobuf(status, bytes),
            Err(e) => error(RegistryError::Internal(format!("encoding protobuf: {e}"))),
        },
        // YAML keys come sorted, as upstream's JSON-to-YAML conversion writes them.
        Format::Yaml | Format::YamlTable => {
            let text = serde_yaml_ng::to_string(body).unwrap_or_default();
            (status, [(header::CONTENT_TYPE, YAML)], text).into_response()
        }
        _ => json_in(status, body, pretty),
    }
}

/// Whether JSON answers are indented, as upstream's negotiation decides (isPrettyPrint):
/// a `pretty` query parameter that is set says so as Go's strconv.ParseBool reads it;
/// without one, clients people type at (curl, Wget, browsers) get indented answers.
pub fn is_pretty(pretty_param: Option<&str>, headers: &HeaderMap) -> bool {
    match pretty_param.filter(|p| !p.is_empty()) {
        Some(value) => matches!(value, "1" | "t" | "T" | "TRUE" | "true" | "True"),
        None => headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|agent| {
                ["curl", "Wget", "Mozilla/5.0"]
                    .iter()
                    .any(|prefix| agent.starts_with(prefix))
            }),
    }
}

/// [`is_pretty`] for a request not yet parsed: its query's first `pretty` value.
pub fn is_pretty_request(query: Option<&str>, headers: &HeaderMap) -> bool {
    let param = query.and_then(|q| {
        q.split('&').find_map(|pair| match pair.split_once('=') {
            Some(("pretty", value)) => Some(value),
            None if pair == "pretty" => Some(""),
            _ => None,
        })
    });
    is_pretty(param, headers)
}

/// A protobuf body (see `api::protobuf::encode`).
pub fn protobuf(status: StatusCode, body: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, PROTOBUF)], body).into_response()
}

pub fn raw_json(status: StatusCode, body: Bytes) -> Response {
    (status, [(header::CONTENT_TYPE, JSON)], body).into_response()
}

/// A JSON object from shared pieces (a stored object around its spliced resourceVersion):
/// written as they are, never joined, with the exact Content-Length, and the newline every
/// compact answer ends with.
pub fn json_pieces(status: StatusCode, body: JsonPieces) -> Response {
    let [head, member, tail] = body.into_pieces();
    let pieces = [head, member, tail, Bytes::from_static(b"\n")];
    let pieces = Pieces {
        remaining: pieces.iter().map(|p| p.len() as u64).sum(),
        rest: pieces.into_iter(),
    };
    (status, [(header::CONTENT_TYPE, JSON)], Body::new(pieces)).into_response()
}

struct Pieces {
    rest: std::array::IntoIter<Bytes, 4>,
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
    error_in(err, false)
}

/// An error's Status, indented when the request asked for pretty answers.
pub fn error_in(err: RegistryError, pretty: bool) -> Response {
    error_as(err, Format::Json, pretty)
}

/// An error's Status in the negotiated format (upstream's ErrorNegotiated): protobuf or YAML
/// for a client that asked for it, JSON otherwise.
pub fn error_as(err: RegistryError, format: Format, pretty: bool) -> Response {
    let status = err.status();
    let code = StatusCode::from_u16(status.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if code.is_server_error() {
        tracing::warn!(code = status.code, message = %status.message, "request failed");
    }
    let retry_after = status.details.as_ref().and_then(|d| d.retry_after_seconds);
    let style = if pretty {
        Style::Pretty
    } else {
        Style::Compact
    };
    // A Status always encodes; should it not, the answer is still the error's code, in JSON.
    let as_json = || {
        raw_json(
            code,
            Bytes::from(wire::body_of(&status, style).unwrap_or_default()),
        )
    };
    let value = serde_json::to_value(&status).ok();
    let mut response = match (format, value) {
        (Format::Protobuf, Some(value)) => match super::protobuf::encode::encode(&value) {
            Ok(body) => protobuf(code, body),
            Err(_) => as_json(),
        },
        (Format::Yaml, Some(value)) => encoded(code, &value, Format::Yaml, pretty),
        _ => as_json(),
    };
    // Upstream's writers turn a Status's retryAfterSeconds into the header clients back off by.
    if let Some(seconds) = retry_after.filter(|s| *s > 0) {
        if let Ok(value) = header::HeaderValue::from_str(&seconds.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    response
}

/// What kube-apiserver answers for a path it does not serve.
pub async fn not_found(uri: axum::http::Uri, headers: HeaderMap) -> Response {
    not_found_in(is_pretty_request(uri.query(), &headers))
}

/// [`not_found`], indented or not.
pub fn not_found_in(pretty: bool) -> Response {
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
    json_in(StatusCode::NOT_FOUND, &status, pretty)
}

/// What the client accepts, as far as we can answer it (see `negotiation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
    /// meta.k8s.io/v1 Table (`kubectl get`).
    Table,
    /// A Table in YAML (`application/yaml;as=Table;...`).
    YamlTable,
    /// `application/vnd.kubernetes.protobuf`: built-in kinds only.
    Protobuf,
    /// The object's metadata alone, as a meta.k8s.io PartialObjectMetadata(List).
    Metadata(Metadata),
}

impl Format {
    /// A Table, in JSON or YAML.
    pub fn is_table(self) -> bool {
        matches!(self, Format::Table | Format::YamlTable)
    }
}

/// One of the serializers, for the forms that can be written in any of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Json,
    Yaml,
    Protobuf,
}

impl Encoding {
    /// The plain format of this serializer.
    pub fn format(self) -> Format {
        match self {
            Encoding::Json => Format::Json,
            Encoding::Yaml => Format::Yaml,
            Encoding::Protobuf => Format::Protobuf,
        }
    }
}

/// `as=PartialObjectMetadata` or `as=PartialObjectMetadataList` (`list`), of meta.k8s.io/v1
/// or (`beta`) v1beta1, in `encoding`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metadata {
    pub beta: bool,
    pub list: bool,
    pub encoding: Encoding,
}

impl Metadata {
    pub fn api_version(self) -> &'static str {
        if self.beta {
            "meta.k8s.io/v1beta1"
        } else {
            "meta.k8s.io/v1"
        }
    }
}

/// [`negotiate_for`] for an endpoint that answers JSON, YAML and Tables only (the metrics
/// API).
pub fn negotiate(headers: &HeaderMap) -> Result<Format, RegistryError> {
    negotiate_with(
        headers,
        Endpoint {
            protobuf: false,
            metadata: false,
            tables: true,
        },
    )
}

/// The format of a resource's answer (see `negotiation`): `protobuf` when the resource is
/// built in (a custom resource has no protobuf form of its own, but its metadata has one).
pub fn negotiate_for(headers: &HeaderMap, protobuf: bool) -> Result<Format, RegistryError> {
    negotiate_with(
        headers,
        Endpoint {
            protobuf,
            metadata: true,
            tables: true,
        },
    )
}

/// The format of a per-version discovery document: JSON, YAML or protobuf, no Tables or
/// metadata (upstream writes discovery with DefaultEndpointRestrictions).
pub fn negotiate_discovery(headers: &HeaderMap) -> Result<Format, RegistryError> {
    negotiate_with(
        headers,
        Endpoint {
            protobuf: true,
            metadata: false,
            tables: false,
        },
    )
}

/// The format of an error's Status, as upstream's ErrorNegotiated picks it: from Accept with
/// no transformed forms, protobuf included (a Status is built in); JSON when nothing fits.
pub fn error_format(headers: &HeaderMap) -> Format {
    let endpoint = Endpoint {
        protobuf: true,
        metadata: false,
        tables: true,
    };
    negotiate_with(headers, endpoint).unwrap_or(Format::Json)
}

fn negotiate_with(headers: &HeaderMap, endpoint: Endpoint) -> Result<Format, RegistryError> {
    let accept = headers
        .get(header::ACCEPT)
        .map(|v| v.to_str().unwrap_or("\u{fffd}"))
        .unwrap_or("");
    negotiation::negotiate(accept, endpoint)
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
        assert_eq!(body.size_hint().exact(), Some(21));
        let collected = body.collect().await.expect("body").to_bytes();
        assert_eq!(&collected[..], b"{\"kind\":\"ConfigMap\"}\n");
    }

    #[test]
    fn pretty_as_upstream_negotiates_it() {
        let none = HeaderMap::new();
        let mut curl = HeaderMap::new();
        curl.insert(header::USER_AGENT, "curl/8.5.0".parse().expect("header"));
        let mut kubectl = HeaderMap::new();
        kubectl.insert(
            header::USER_AGENT,
            "kubectl/v1.35.0".parse().expect("header"),
        );
        assert!(!is_pretty(None, &none));
        assert!(is_pretty(None, &curl));
        assert!(!is_pretty(None, &kubectl));
        assert!(is_pretty(Some("true"), &kubectl));
        assert!(is_pretty(Some("T"), &none));
        assert!(!is_pretty(Some("false"), &curl));
        // Not a bool: not pretty, whoever asks; empty: as if absent.
        assert!(!is_pretty(Some("yes"), &curl));
        assert!(is_pretty(Some(""), &curl));
        assert!(is_pretty_request(Some("a=b&pretty=1"), &none));
        assert!(!is_pretty_request(Some("prettyx=1"), &none));
        assert!(!is_pretty_request(Some("pretty=0"), &curl));
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
