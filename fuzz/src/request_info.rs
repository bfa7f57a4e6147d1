//! Request info: the method, the path as sent (percent-encoded) and the query of a request,
//! read as the filters read them (authorization, audit, the handlers all use this reading).

use apiserver::api::attributes::Requested;
use axum::http::Method;

const METHODS: [&str; 9] = [
    "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "CONNECT", "TRACE",
];

pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let method = Method::from_bytes(METHODS[usize::from(mode) % METHODS.len()].as_bytes())
        .unwrap_or(Method::GET);
    let text = String::from_utf8_lossy(rest);
    let (path, query) = match text.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (text.as_ref(), None),
    };
    match Requested::read(&method, path, query) {
        Requested::Resource(info) => {
            assert!(
                !info.resource.is_empty(),
                "a resource request names a resource"
            );
            for part in [&info.namespace, &info.name, &info.subresource]
                .into_iter()
                .flatten()
            {
                assert!(
                    !matches!(part.as_str(), "" | "." | ".."),
                    "{path:?} read as a resource request with segment {part:?}"
                );
            }
        }
        Requested::NonResource { verb, .. } => {
            assert_eq!(verb, method.as_str().to_ascii_lowercase());
        }
    }
}
