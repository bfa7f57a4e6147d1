//! Entry points for the fuzz targets in `fuzz/` (not an API for anything else): the body
//! decoders and the query readers are crate-private, and are reached here exactly as a request
//! reaches them, so that the fuzzers exercise the code that serves.

use axum::http::{header::CONTENT_TYPE, HeaderMap, HeaderValue};
use registry::RegistryError;
use serde_json::Value;

use super::body;
use super::params::Params;
use super::protobuf;

fn headers(content_type: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(content_type) {
        headers.insert(CONTENT_TYPE, value);
    }
    headers
}

/// A create/update body as the handlers read it: the media-type check, then the decoder
/// the Content-Type picks (JSON, YAML or protobuf), with the duplicate-field scan.
pub fn decode_body(content_type: &str, data: &[u8]) -> Result<Value, RegistryError> {
    let headers = headers(content_type);
    body::check_body_type(&headers, data)?;
    let _ = body::duplicates(data);
    let _ = body::optional_body(&headers, data);
    body::parse(&headers, data, "Pod").map(|parsed| parsed.value)
}

/// A protobuf body (`application/vnd.kubernetes.protobuf`) into its JSON form.
pub fn decode_protobuf(data: &[u8]) -> Result<Value, RegistryError> {
    protobuf::decode(data)
}

/// Every reading of the query parameters a resource request makes: list, watch, write and
/// delete options, timeouts, log options.
pub fn read_query(query: Vec<(String, String)>) -> Vec<RegistryError> {
    let params = Params(query);
    let _ = params.watch();
    [
        params.list().err(),
        params.write().err(),
        params.delete(None).err(),
        params.timeout_seconds().err(),
        params.log().err(),
    ]
    .into_iter()
    .flatten()
    .collect()
}
