//! A served document: its bytes and the content hash clients cache it by.

use std::fmt::Write as _;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use sha2::{Digest, Sha512};

/// The media type of [`crate::OpenApi::v2_protobuf`] in a response. Clients ask for it with
/// `@v1.0`, which Go's media type parser rejects in a response, hence upstream's dot.
pub const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The media types a request's Accept may name for the protobuf form of `/openapi/v2`.
pub const V2_PROTOBUF_ACCEPTED: &[&str] = &[
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    V2_PROTOBUF,
];

/// A serialized document. Cheap to clone: the bytes and hash are shared.
#[derive(Clone, Debug)]
pub struct Document {
    bytes: Bytes,
    hash: Arc<str>,
}

impl Document {
    pub(crate) fn new(value: &Value) -> Document {
        // Serializing a Value cannot fail: its keys are strings and it holds no floats that
        // JSON cannot carry (NaN cannot be in a Value).
        Document::from_bytes(serde_json::to_vec(value).unwrap_or_default())
    }

    pub(crate) fn from_bytes(bytes: Vec<u8>) -> Document {
        let hash = content_hash(&bytes).into();
        Document {
            bytes: Bytes::from(bytes),
            hash,
        }
    }

    /// The body: JSON, or protobuf for [`crate::OpenApi::v2_protobuf`].
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// Upper-case hex SHA-512 of the body, as upstream computes it: the `hash` query
    /// parameter of the v3 index's URLs.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The `ETag` header value: the hash in double quotes. A request whose `If-None-Match`
    /// carries it gets 304 Not Modified.
    pub fn etag(&self) -> String {
        format!("\"{}\"", self.hash)
    }

    /// Whether an `If-None-Match` header value names this document (`*`, or one of a
    /// comma-separated list of tags, weak or strong).
    pub fn matches(&self, if_none_match: &str) -> bool {
        if_none_match
            .split(',')
            .map(str::trim)
            .any(|tag| tag == "*" || tag.trim_start_matches("W/").trim_matches('"') == &*self.hash)
    }
}

fn content_hash(bytes: &[u8]) -> String {
    let digest = Sha512::digest(bytes);
    let mut out = String::with_capacity(digest.len() * 2);
    for byte in digest {
        let _ = write!(out, "{byte:02X}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hash_is_upper_hex_sha512_and_etag_quotes_it() {
        let doc = Document::new(&json!({}));
        assert_eq!(doc.bytes().as_ref(), b"{}");
        assert_eq!(doc.hash().len(), 128);
        assert!(doc.hash().starts_with("27C74670ADB75075FAD058D5CEAF7B20"));
        assert_eq!(doc.etag(), format!("\"{}\"", doc.hash()));
        assert!(doc.matches(&doc.etag()));
        assert!(doc.matches(&format!("\"x\", W/{}", doc.etag())));
        assert!(doc.matches("*"));
        assert!(!doc.matches("\"other\""));
    }
}
