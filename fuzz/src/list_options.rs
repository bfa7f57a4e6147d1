//! The query string of a resource request (list, watch, write and delete options, log
//! options), decoded as the router decodes it, and the values a list carries further:
//! resourceVersion, resourceVersionMatch and the continue token.

use registry::options::{parse_resource_version, ResourceVersionMatch};
use storage::store::continue_token;

const PREFIX: &str = "/registry/pods/";

pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(query) = serde_urlencoded::from_str::<Vec<(String, String)>>(&text) else {
        return;
    };
    for (_, value) in &query {
        let _ = parse_resource_version(value);
        let _ = ResourceVersionMatch::parse(value);
        if let Ok((key, _)) = continue_token::decode(value, PREFIX) {
            let rest = &key[PREFIX.len()..];
            assert!(
                key.starts_with(PREFIX),
                "a continue key stays under its prefix"
            );
            assert!(
                !rest.split('/').any(|s| s == ".." || s == "."),
                "a continue key {key:?} climbs out of its prefix"
            );
        }
        // A token the server hands out reads back as the key it was made from.
        let key = format!("{PREFIX}{}", value.trim_start_matches('/'));
        if let Ok(token) = continue_token::encode(&key, PREFIX, 7) {
            if let Ok(decoded) = continue_token::decode(&token, PREFIX) {
                assert_eq!(decoded, (key, 7), "continue token round trip");
            }
        }
    }
    for e in apiserver::api::fuzzing::read_query(query) {
        crate::assert_client_error("query", &e);
    }
}
