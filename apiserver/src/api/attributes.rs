//! What every request asks for, read once from its method, path and query before any filter
//! runs (upstream's WithRequestInfo): authorization and audit judge, and the API handlers
//! serve, this one reading, so no spelling of a path can be judged as one request and served
//! as another.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use registry::auth::{Attributes, UserInfo};

use super::request_info::{self, RequestInfo};

/// Subresources whose responses stream for as long as the client wants (upstream's
/// BasicLongRunningRequestCheck, with watches).
const LONG_RUNNING_SUBRESOURCES: [&str; 5] = ["attach", "exec", "proxy", "log", "portforward"];

/// A request as the filters see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requested {
    /// `/api/...` or `/apis/...` naming a resource.
    Resource(RequestInfo),
    /// Any other path (discovery, `/healthz`, `/version`, `/metrics`, a path no resource is
    /// served at), judged by its path with the lower-cased method as verb.
    NonResource { verb: String, path: String },
}

impl Requested {
    /// `path` is the request's path as sent (percent-encoded); it is decoded exactly once
    /// here, as the handlers' `Path` extractor decodes it.
    pub fn read(method: &Method, path: &str, query: Option<&str>) -> Self {
        let decoded = percent_encoding::percent_decode_str(path).decode_utf8_lossy();
        let watch = query.is_some_and(watch_param);
        let info = if let Some(rest) = decoded.strip_prefix("/api/") {
            request_info::parse(method, true, rest, watch)
        } else if let Some(rest) = decoded.strip_prefix("/apis/") {
            request_info::parse(method, false, rest, watch)
        } else {
            None
        };
        match info {
            Some(info) => Requested::Resource(info),
            None => Requested::NonResource {
                verb: method.as_str().to_ascii_lowercase(),
                path: decoded.into_owned(),
            },
        }
    }

    /// A watch, or a subresource that streams: not held to the in-flight limits or the request
    /// timeout, and audited with a ResponseStarted stage.
    pub fn long_running(&self) -> bool {
        match self {
            Requested::Resource(info) => {
                info.verb == Some(registry::Verb::Watch)
                    || info
                        .subresource
                        .as_deref()
                        .is_some_and(|s| LONG_RUNNING_SUBRESOURCES.contains(&s))
            }
            Requested::NonResource { .. } => false,
        }
    }

    /// The authorizer's attributes of this request made by `user`. A resource request whose
    /// method no verb serves is judged by the lower-cased method (it is answered 405).
    pub fn attributes(&self, user: Arc<UserInfo>, path: &str) -> Attributes {
        match self {
            Requested::Resource(info) => Attributes {
                user,
                verb: info
                    .verb
                    .map(|v| v.as_str().to_string())
                    .unwrap_or_default(),
                resource_request: true,
                namespace: info.namespace.clone().unwrap_or_default(),
                api_group: info.group.clone(),
                api_version: info.version.clone(),
                resource: info.resource.clone(),
                subresource: info.subresource.clone().unwrap_or_default(),
                name: info.name.clone().unwrap_or_default(),
                path: path.to_string(),
            },
            Requested::NonResource { verb, path } => Attributes {
                user,
                verb: verb.clone(),
                resource_request: false,
                path: path.clone(),
                ..Default::default()
            },
        }
    }
}

/// `watch=true` (or `1`) in a query string: its first `watch`, form-decoded, as the handlers'
/// query parameters read it.
fn watch_param(query: &str) -> bool {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    query
        .split('&')
        .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
        .find(|(key, _)| decode(key) == "watch")
        .is_some_and(|(_, value)| matches!(decode(value).as_str(), "true" | "1"))
}

/// The request's [`Requested`], read now and kept in its extensions unless an outer filter
/// has read it already: each filter calls this, so whichever runs first reads the request
/// and every later one, and the handlers, judge and serve that one reading.
pub fn ensure(request: &mut Request) -> &Requested {
    // Cheap handles (the URI shares its bytes), so the extensions can be borrowed mutably.
    let (method, uri) = (request.method().clone(), request.uri().clone());
    request
        .extensions_mut()
        .get_or_insert_with(|| Requested::read(&method, uri.path(), uri.query()))
}

/// Puts the request's [`Requested`] into its extensions (the router's own reading, for
/// routers served without the filters that read it first).
pub async fn with_request_info(mut request: Request, next: Next) -> Response {
    ensure(&mut request);
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use registry::Verb;

    #[test]
    fn every_spelling_of_a_path_reads_as_what_is_served() {
        let Requested::Resource(info) =
            Requested::read(&Method::GET, "/api/v1/namespaces/a/secrets/s", None)
        else {
            panic!("a resource request");
        };
        assert_eq!(
            (info.verb, info.namespace.as_deref(), info.name.as_deref()),
            (Some(Verb::Get), Some("a"), Some("s"))
        );
        for path in [
            "/api/v1/namespaces/../secrets",
            "/api/v1/namespaces/%2e%2e/secrets",
            "/api/v1/namespaces/%2E./secrets",
            "/apis/apps/v1/namespaces/a/%2e%2e/b/deployments",
        ] {
            assert!(
                matches!(
                    Requested::read(&Method::GET, path, None),
                    Requested::NonResource { .. }
                ),
                "{path}"
            );
        }
        let watch = Requested::read(&Method::GET, "/api/v1/pods", Some("limit=1&watch=true"));
        assert!(matches!(
            watch,
            Requested::Resource(RequestInfo {
                verb: Some(Verb::Watch),
                ..
            })
        ));
        let discovery = Requested::read(&Method::GET, "/apis/apps/v1", None);
        assert_eq!(
            discovery
                .attributes(Arc::new(UserInfo::anonymous()), "/apis/apps/v1")
                .verb,
            "get"
        );
    }
}
