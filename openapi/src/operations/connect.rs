//! Operations of connect subresources (pods' exec, attach, portforward and proxy, services'
//! and nodes' proxy), as upstream's installer documents a Connecter: one `connect<Method>`
//! operation per HTTP method it takes, answering any media type with a string, the options
//! kind's fields as query parameters of the path, and for a proxy a second path that
//! carries the proxied path (`.../proxy/{path}`, operation ids ending in `WithPath`).

use super::params::{self, Param};
use super::{responses, Method, Operation, PathItem, Payload, Target};
use crate::gvk::Gvk;
use crate::names::{capitalize, tag};
use crate::SubresourceSpec;

/// The paths of connect subresource `sub` of `target`, at `path`.
pub(super) fn paths(
    target: &Target,
    sub: &SubresourceSpec,
    path: &str,
    scope_params: &[&'static Param],
) -> Vec<PathItem> {
    let r = target.resource;
    let Some(speaks) = &sub.speaks else {
        return Vec::new();
    };
    let options = params::connect_options(&speaks.kind);
    let mut base: Vec<&'static Param> = vec![&params::NAME];
    base.extend(scope_params.iter().copied());
    let item = |path: String, extra: &[&'static Param], suffix: &str| {
        let mut list = base.clone();
        list.extend(extra.iter().copied());
        list.extend(options.iter().copied());
        // Upstream lists a path's parameters by name (a path parameter before a query one).
        list.sort_by_key(|p| (p.name, p.location != params::In::Path));
        PathItem {
            path,
            tag: tag(&r.group, &r.version),
            params: list,
            operations: operations(target, sub, suffix),
        }
    };
    let mut out = vec![item(path.to_string(), &[], "")];
    if sub.name == "proxy" {
        out.push(item(
            format!("{path}/{{path}}"),
            &[&params::PROXY_PATH],
            "WithPath",
        ));
    }
    out
}

fn operations(target: &Target, sub: &SubresourceSpec, suffix: &str) -> Vec<Operation> {
    let Some(speaks) = &sub.speaks else {
        return Vec::new();
    };
    let gvk = Gvk::new(&speaks.group, &speaks.version, &speaks.kind);
    let kind = &target.resource.kind;
    sub.connect_methods
        .iter()
        .filter_map(|name| Some((name, method(name)?)))
        .map(|(name, method)| {
            let mut answers = responses(&["200"], "");
            if let Some(ok) = answers.first_mut() {
                ok.payload = Payload::Text;
            }
            Operation {
                method,
                id: target.id(
                    "connect",
                    &capitalize(&name.to_ascii_lowercase()),
                    &format!("{}{suffix}", capitalize(&sub.name)),
                ),
                description: format!("connect {name} requests to {} of {kind}", sub.name),
                action: "connect",
                gvk: gvk.clone(),
                params: &[],
                body: None,
                responses: answers,
                produces: &["*/*"],
            }
        })
        .collect()
}

fn method(name: &str) -> Option<Method> {
    Some(match name {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "PATCH" => Method::Patch,
        "DELETE" => Method::Delete,
        "HEAD" => Method::Head,
        "OPTIONS" => Method::Options,
        _ => return None,
    })
}
