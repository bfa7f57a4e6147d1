//! List continuation tokens, in upstream's wire format (base64url of
//! `{"v":"meta.k8s.io/v1","rv":<revision>,"start":"<key after the list prefix>"}`) so tokens
//! look the same to clients as kube-apiserver's.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::{Result, StorageError};

const VERSION: &str = "meta.k8s.io/v1";

#[derive(Serialize, Deserialize)]
struct Token {
    v: String,
    rv: i64,
    start: String,
}

/// Encodes where the next page starts: `next_key` is a full key under `prefix`.
pub fn encode(next_key: &str, prefix: &str, revision: i64) -> Result<String> {
    let start = next_key.strip_prefix(prefix).ok_or_else(|| {
        StorageError::Internal(format!("continue key {next_key} is outside {prefix}"))
    })?;
    let token = Token {
        v: VERSION.into(),
        rv: revision,
        start: start.to_string(),
    };
    let json = serde_json::to_vec(&token).map_err(|e| StorageError::Internal(e.to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(json))
}

/// Decodes a token into the full key to start from and the snapshot revision (-1: continue at
/// the latest revision). Rejects tokens that would escape `prefix`.
pub fn decode(token: &str, prefix: &str) -> Result<(String, i64)> {
    let invalid = |why: &str| StorageError::Invalid(format!("continue key is not valid: {why}"));
    let raw = URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| invalid("not base64"))?;
    let token: Token = serde_json::from_slice(&raw).map_err(|_| invalid("not a token"))?;
    if token.v != VERSION {
        return Err(invalid("server does not recognize this encoded version"));
    }
    if token.rv == 0 {
        return Err(invalid("incorrect encoded start resourceVersion"));
    }
    if token.start.is_empty() {
        return Err(invalid("encoded start key empty"));
    }
    let start = token.start.trim_start_matches('/');
    // A token must not climb out of the listed prefix.
    if start.split('/').any(|seg| seg == ".." || seg == ".") || start.contains("//") {
        return Err(invalid("start key is not a clean path"));
    }
    Ok((format!("{prefix}{start}"), token.rv))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let token = encode("/registry/pods/ns/b\u{0}", "/registry/pods/", 42).expect("encodes");
        let (key, rv) = decode(&token, "/registry/pods/").expect("decodes");
        assert_eq!((key.as_str(), rv), ("/registry/pods/ns/b\u{0}", 42));
    }

    #[test]
    fn rejects_garbage_and_traversal() {
        assert!(decode("!!!", "/p/").is_err());
        assert!(decode(&URL_SAFE_NO_PAD.encode(b"{}"), "/p/").is_err());
        let evil =
            URL_SAFE_NO_PAD.encode(br#"{"v":"meta.k8s.io/v1","rv":5,"start":"../secrets/x"}"#);
        assert!(matches!(
            decode(&evil, "/p/"),
            Err(StorageError::Invalid(_))
        ));
        let zero = URL_SAFE_NO_PAD.encode(br#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#);
        assert!(decode(&zero, "/p/").is_err());
    }
}
