//! The operations a served resource offers, in a form neutral between OpenAPI v2 and v3:
//! the paths, verbs, operation ids, parameters, bodies and responses upstream's installer
//! documents for each resource.

mod connect;
mod params;
mod subresources;

pub(crate) use params::{In, Param};

use crate::builtin::{DELETE_OPTIONS, STATUS, WATCH_EVENT};
use crate::gvk::Gvk;
use crate::names::{group_version_camel, group_version_path, tag};
use crate::ResourceSpec;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Put,
    Post,
    Delete,
    Patch,
    Head,
    Options,
}

impl Method {
    pub fn key(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Put => "put",
            Method::Post => "post",
            Method::Delete => "delete",
            Method::Patch => "patch",
            Method::Head => "head",
            Method::Options => "options",
        }
    }
}

pub(crate) enum Body {
    /// A whole object of the named definition.
    Object(String),
    /// A patch document; strategic merge patches exist for built-in kinds only.
    Patch { strategic: bool },
}

pub(crate) enum Payload {
    Nothing,
    /// An object of the named definition.
    Object(String),
    /// Plain text (logs).
    Text,
}

pub(crate) struct Response {
    pub code: &'static str,
    pub description: &'static str,
    pub payload: Payload,
}

pub(crate) struct Operation {
    pub method: Method,
    pub id: String,
    pub description: String,
    /// x-kubernetes-action: get, list, put, post, patch, delete, deletecollection, watch,
    /// watchlist.
    pub action: &'static str,
    pub gvk: Gvk,
    pub params: &'static [&'static Param],
    pub body: Option<Body>,
    pub responses: Vec<Response>,
    pub produces: &'static [&'static str],
}

pub(crate) struct PathItem {
    pub path: String,
    /// The group-version's tag ("core_v1"), shared by its operations whatever kind they
    /// speak (an eviction is served under core_v1).
    pub tag: String,
    /// Shared by the path's operations: the path's own parameters and `pretty`.
    pub params: Vec<&'static Param>,
    pub operations: Vec<Operation>,
}

const OBJECT_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];
const LIST_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];
pub(crate) const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// A served resource and the definitions its operations use.
pub(crate) struct Target<'a> {
    pub resource: &'a ResourceSpec,
    pub definition: &'a str,
    pub list_definition: Option<&'a str>,
    pub builtin: bool,
}

impl Target<'_> {
    fn has(&self, verb: &str) -> bool {
        self.resource.verbs.iter().any(|v| v == verb)
    }

    fn gvk(&self) -> Gvk {
        let r = self.resource;
        Gvk::new(&r.group, &r.version, &r.kind)
    }

    /// "CoreV1Namespaced" / "CoreV1": what comes between the verb and the kind in an id.
    fn id(&self, verb: &str, middle: &str, suffix: &str) -> String {
        let r = self.resource;
        let scope = if r.namespaced { "Namespaced" } else { "" };
        let gv = group_version_camel(&r.group, &r.version);
        format!("{verb}{gv}{middle}{scope}{}{suffix}", r.kind)
    }

    fn object(&self, codes: &[&'static str]) -> Vec<Response> {
        responses(codes, self.definition)
    }

    /// Upstream returns the deleted object instead of a Status for the kinds whose storage
    /// says so.
    fn deleted(&self) -> Vec<Response> {
        let definition = if self.resource.delete_returns_object {
            self.definition
        } else {
            STATUS
        };
        responses(&["200", "202"], definition)
    }
}

fn responses(codes: &[&'static str], definition: &str) -> Vec<Response> {
    let mut out: Vec<Response> = codes
        .iter()
        .map(|code| Response {
            code,
            description: match *code {
                "201" => "Created",
                "202" => "Accepted",
                _ => "OK",
            },
            payload: Payload::Object(definition.to_string()),
        })
        .collect();
    out.push(Response {
        code: "401",
        description: "Unauthorized",
        payload: Payload::Nothing,
    });
    out
}

/// Every path of a resource with the operations its verbs allow.
pub(crate) fn paths(target: &Target) -> Vec<PathItem> {
    let r = target.resource;
    let root = format!("/{}", group_version_path(&r.group, &r.version));
    let (scope, scope_params): (String, Vec<&'static Param>) = if r.namespaced {
        (
            format!("{root}/namespaces/{{namespace}}"),
            vec![&params::NAMESPACE],
        )
    } else {
        (root.clone(), Vec::new())
    };
    let with_pretty = |mut list: Vec<&'static Param>| {
        list.push(&params::PRETTY);
        list
    };
    let item_params = || {
        let mut list = vec![&params::NAME];
        list.extend(scope_params.iter().copied());
        with_pretty(list)
    };
    let kind = &r.kind;
    let mut out = Vec::new();

    let collection = collection_operations(target);
    if !collection.is_empty() {
        out.push(PathItem {
            path: format!("{scope}/{}", r.plural),
            tag: tag(&r.group, &r.version),
            params: with_pretty(scope_params.clone()),
            operations: collection,
        });
    }
    let item = item_operations(target);
    if !item.is_empty() {
        out.push(PathItem {
            path: format!("{scope}/{}/{{name}}", r.plural),
            tag: tag(&r.group, &r.version),
            params: item_params(),
            operations: item,
        });
    }
    for sub in &r.subresources {
        if !sub.connect_methods.is_empty() {
            let path = format!("{scope}/{}/{{name}}/{}", r.plural, sub.name);
            out.extend(connect::paths(target, sub, &path, &scope_params));
            continue;
        }
        let operations = subresources::operations(target, sub);
        if !operations.is_empty() {
            out.push(PathItem {
                path: format!("{scope}/{}/{{name}}/{}", r.plural, sub.name),
                tag: tag(&r.group, &r.version),
                params: item_params(),
                operations,
            });
        }
    }
    if r.namespaced && target.has("list") {
        if let Some(list) = target.list_definition {
            out.push(PathItem {
                path: format!("{root}/{}", r.plural),
                tag: tag(&r.group, &r.version),
                params: with_pretty(Vec::new()),
                operations: vec![list_operation(
                    target,
                    format!(
                        "list{}{kind}ForAllNamespaces",
                        group_version_camel(&r.group, &r.version)
                    ),
                    list,
                )],
            });
        }
    }
    if target.has("watch") {
        out.extend(watch_paths(target, &root, &scope, &scope_params));
    }
    out
}

/// GET of a collection (one namespace's, or all namespaces').
fn list_operation(target: &Target, id: String, list: &str) -> Operation {
    Operation {
        method: Method::Get,
        id,
        description: format!("list or watch objects of kind {}", target.resource.kind),
        action: "list",
        gvk: target.gvk(),
        params: params::LIST,
        body: None,
        responses: responses(&["200"], list),
        produces: LIST_TYPES,
    }
}

fn collection_operations(target: &Target) -> Vec<Operation> {
    let kind = &target.resource.kind;
    let mut ops = Vec::new();
    if let (true, Some(list)) = (target.has("list"), target.list_definition) {
        ops.push(list_operation(target, target.id("list", "", ""), list));
    }
    if target.has("create") {
        ops.push(Operation {
            method: Method::Post,
            id: target.id("create", "", ""),
            description: format!("create a {kind}"),
            action: "post",
            gvk: target.gvk(),
            params: params::WRITE,
            body: Some(Body::Object(target.definition.to_string())),
            responses: target.object(&["200", "201", "202"]),
            produces: OBJECT_TYPES,
        });
    }
    if target.has("deletecollection") {
        ops.push(Operation {
            method: Method::Delete,
            id: target.id("delete", "Collection", ""),
            description: format!("delete collection of {kind}"),
            action: "deletecollection",
            gvk: target.gvk(),
            params: params::DELETE_COLLECTION,
            body: Some(Body::Object(DELETE_OPTIONS.to_string())),
            responses: responses(&["200"], STATUS),
            produces: OBJECT_TYPES,
        });
    }
    ops
}

fn item_operations(target: &Target) -> Vec<Operation> {
    let kind = &target.resource.kind;
    let mut ops = Vec::new();
    if target.has("get") {
        ops.push(Operation {
            method: Method::Get,
            id: target.id("read", "", ""),
            description: format!("read the specified {kind}"),
            action: "get",
            gvk: target.gvk(),
            params: params::READ,
            body: None,
            responses: target.object(&["200"]),
            produces: OBJECT_TYPES,
        });
    }
    if target.has("update") {
        ops.push(Operation {
            method: Method::Put,
            id: target.id("replace", "", ""),
            description: format!("replace the specified {kind}"),
            action: "put",
            gvk: target.gvk(),
            params: params::WRITE,
            body: Some(Body::Object(target.definition.to_string())),
            responses: target.object(&["200", "201"]),
            produces: OBJECT_TYPES,
        });
    }
    if target.has("delete") {
        ops.push(Operation {
            method: Method::Delete,
            id: target.id("delete", "", ""),
            description: format!("delete a {kind}"),
            action: "delete",
            gvk: target.gvk(),
            params: params::DELETE,
            body: Some(Body::Object(DELETE_OPTIONS.to_string())),
            responses: target.deleted(),
            produces: OBJECT_TYPES,
        });
    }
    if target.has("patch") {
        ops.push(Operation {
            method: Method::Patch,
            id: target.id("patch", "", ""),
            description: format!("partially update the specified {kind}"),
            action: "patch",
            gvk: target.gvk(),
            params: params::PATCH,
            body: Some(Body::Patch {
                strategic: target.builtin,
            }),
            responses: target.object(&["200", "201"]),
            produces: OBJECT_TYPES,
        });
    }
    ops
}

/// The `/watch/` paths upstream still serves (deprecated in favour of `?watch=true`).
fn watch_paths(
    target: &Target,
    root: &str,
    scope: &str,
    scope_params: &[&'static Param],
) -> Vec<PathItem> {
    let r = target.resource;
    let kind = &r.kind;
    let watch_scope = scope.replacen(root, &format!("{root}/watch"), 1);
    let watch = |id: String, action: &'static str, description: String| Operation {
        method: Method::Get,
        id,
        description,
        action,
        gvk: target.gvk(),
        params: params::LIST,
        body: None,
        responses: responses(&["200"], WATCH_EVENT),
        produces: LIST_TYPES,
    };
    let mut with_pretty = scope_params.to_vec();
    with_pretty.push(&params::PRETTY);
    let mut item_params = vec![&params::NAME];
    item_params.extend(with_pretty.iter().copied());
    let deprecated = "deprecated: use the 'watch' parameter with a list operation instead";
    let mut out = vec![
        PathItem {
            path: format!("{watch_scope}/{}", r.plural),
            tag: tag(&r.group, &r.version),
            params: with_pretty,
            operations: vec![watch(
                target.id("watch", "", "List"),
                "watchlist",
                format!("watch individual changes to a list of {kind}. {deprecated}."),
            )],
        },
        PathItem {
            path: format!("{watch_scope}/{}/{{name}}", r.plural),
            tag: tag(&r.group, &r.version),
            params: item_params,
            operations: vec![watch(
                target.id("watch", "", ""),
                "watch",
                format!("watch changes to an object of kind {kind}. {deprecated}, filtered to one item with the 'fieldSelector' parameter."),
            )],
        },
    ];
    if r.namespaced {
        out.push(PathItem {
            path: format!("{root}/watch/{}", r.plural),
            tag: tag(&r.group, &r.version),
            params: vec![&params::PRETTY],
            operations: vec![watch(
                format!(
                    "watch{}{kind}ListForAllNamespaces",
                    group_version_camel(&r.group, &r.version)
                ),
                "watchlist",
                format!("watch individual changes to a list of {kind}. {deprecated}."),
            )],
        });
    }
    out
}
