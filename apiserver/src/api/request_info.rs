//! Request info (upstream's RequestInfoFactory): what a resource request asks for, parsed once
//! from the method, the path and the watch parameter.

use axum::http::Method;
use registry::Verb;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// None: no verb serves this method on this path (405).
    pub verb: Option<Verb>,
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
    /// The path below a `proxy` subresource (`nodes/<name>/proxy/<path>`), as upstream's
    /// RequestInfo keeps the remaining parts.
    pub proxy_path: Option<String>,
}

/// Subresources of namespaces that would otherwise read as a resource inside the namespace.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// Parses `/api/<version>/...` or `/apis/<group>/<version>/...` (given without the leading
/// `/api` or `/apis`, percent-decoded once). None: not a resource request (discovery of a group
/// or version), or a path with an empty, `.` or `..` segment, which no resource is served at
/// (see [`super::path`]).
pub fn parse(method: &Method, legacy: bool, path: &str, watch_param: bool) -> Option<RequestInfo> {
    let mut parts = match super::path::segments(path) {
        Ok(parts) => parts,
        Err(reason) => {
            tracing::debug!(path, %reason, "not a resource request");
            return None;
        }
    };
    let (group, version) = if legacy {
        (String::new(), parts.first()?.to_string())
    } else {
        (parts.first()?.to_string(), parts.get(1)?.to_string())
    };
    parts.drain(..if legacy { 1 } else { 2 });
    let mut watch = watch_param;
    if parts.first() == Some(&"watch") {
        watch = true;
        parts.remove(0);
    }
    if parts.is_empty() {
        return None;
    }
    // `namespaces/<ns>/<resource>...` scopes a resource; `namespaces/<ns>[/status|/finalize]`
    // is the namespace object itself.
    let mut namespace = None;
    if parts[0] == "namespaces" && parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
        namespace = Some(parts[1].to_string());
        parts.drain(..2);
    }
    let mut resource = parts.first()?.to_string();
    let name = parts.get(1).map(|s| s.to_string());
    let mut subresource = parts.get(2).map(|s| s.to_string());
    // The legacy `bindings` collection is pods' binding subresource by another path
    // (upstream's LegacyBindingREST); the Binding names the pod.
    if legacy && resource == "bindings" && namespace.is_some() && parts.len() == 1 {
        resource = "pods".to_string();
        subresource = Some("binding".to_string());
    }
    let proxy = subresource.as_deref() == Some("proxy");
    let proxy_path = proxy.then(|| parts[3..].join("/"));
    let verb = match (method.as_str(), name.is_some()) {
        // Deeper paths (pods/x/log/...) are not served, but below a proxy.
        _ if parts.len() > 3 && !proxy => None,
        ("GET" | "HEAD", _) if watch => Some(Verb::Watch),
        ("GET" | "HEAD", true) => Some(Verb::Get),
        ("GET" | "HEAD", false) => Some(Verb::List),
        ("POST", _) => Some(Verb::Create),
        ("PUT", _) => Some(Verb::Update),
        ("PATCH", _) => Some(Verb::Patch),
        ("DELETE", true) => Some(Verb::Delete),
        ("DELETE", false) => Some(Verb::DeleteCollection),
        _ => None,
    };
    Some(RequestInfo {
        verb,
        group,
        version,
        namespace,
        resource,
        name,
        subresource,
        proxy_path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: Method, legacy: bool, path: &str) -> RequestInfo {
        parse(&method, legacy, path, false).expect("resource request")
    }

    #[test]
    fn paths_as_upstream_parses_them() {
        let i = info(Method::GET, true, "/v1/namespaces/default/pods/web");
        assert_eq!(
            (
                i.verb,
                i.namespace.as_deref(),
                i.resource.as_str(),
                i.name.as_deref()
            ),
            (Some(Verb::Get), Some("default"), "pods", Some("web"))
        );
        let i = info(Method::GET, true, "/v1/pods");
        assert_eq!(
            (i.verb, i.namespace, i.resource.as_str()),
            (Some(Verb::List), None, "pods")
        );
        let i = info(
            Method::GET,
            false,
            "/apps/v1/namespaces/ns/deployments/d/scale",
        );
        assert_eq!(
            (i.group.as_str(), i.subresource.as_deref()),
            ("apps", Some("scale"))
        );
        let i = info(Method::PUT, true, "/v1/namespaces/ns/finalize");
        assert_eq!(
            (
                i.verb,
                i.resource.as_str(),
                i.name.as_deref(),
                i.subresource.as_deref()
            ),
            (
                Some(Verb::Update),
                "namespaces",
                Some("ns"),
                Some("finalize")
            )
        );
        let i = info(Method::GET, true, "/v1/namespaces/ns");
        assert_eq!(
            (i.resource.as_str(), i.name.as_deref(), i.namespace),
            ("namespaces", Some("ns"), None)
        );
        let i = info(Method::GET, true, "/v1/watch/namespaces/ns/pods");
        assert_eq!(i.verb, Some(Verb::Watch));
        assert_eq!(
            parse(&Method::GET, true, "/v1/pods", true).and_then(|i| i.verb),
            Some(Verb::Watch)
        );
        assert_eq!(
            info(Method::DELETE, true, "/v1/namespaces/ns/pods").verb,
            Some(Verb::DeleteCollection)
        );
        assert_eq!(
            info(Method::POST, true, "/v1/namespaces/ns/pods").verb,
            Some(Verb::Create)
        );
        assert!(parse(&Method::GET, true, "/v1", false).is_none());
        assert!(parse(&Method::GET, false, "/apps", false).is_none());
    }

    #[test]
    fn no_spelling_of_a_path_names_another_resource() {
        // Dot and empty segments are no resource request at all, wherever they are.
        for path in [
            "/v1/namespaces/../secrets",
            "/v1/namespaces/./secrets",
            "/v1/namespaces/a/../b/secrets",
            "/v1/namespaces/a/secrets/..",
            "/v1/namespaces/a/secrets/s/.",
            "/v1//namespaces/a/secrets",
            "/v1/namespaces//secrets",
            "/v1/watch/namespaces/../secrets",
            "/./v1/secrets",
            "/v1/nodes/n/proxy/../../secrets",
        ] {
            assert_eq!(parse(&Method::GET, true, path, false), None, "{path}");
        }
        assert_eq!(
            parse(
                &Method::GET,
                false,
                "/apps/v1/namespaces/../deployments",
                false
            ),
            None
        );
        // Trailing slashes are not segments, as upstream's splitPath trims them.
        assert_eq!(
            info(Method::GET, true, "/v1/namespaces/a/secrets/s/"),
            info(Method::GET, true, "/v1/namespaces/a/secrets/s")
        );
        // `a%2Fb` arrives decoded, and `/` separates segments as in upstream's request info:
        // namespace `a`, resource `b`.
        let i = info(Method::GET, true, "/v1/namespaces/a/b/secrets");
        assert_eq!(
            (
                i.namespace.as_deref(),
                i.resource.as_str(),
                i.name.as_deref()
            ),
            (Some("a"), "b", Some("secrets"))
        );
    }
}
