//! Operations of subresources: which verbs each has, what body it takes and which kind it
//! speaks (status speaks its parent's; scale speaks autoscaling/v1 Scale).

use super::{params, responses, Body, Method, Operation, Payload, Target, OBJECT_TYPES};
use crate::gvk::Gvk;
use crate::names::capitalize;

/// The kind a subresource reads and writes when it is not its parent's.
struct Speaks {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    definition: &'static str,
}

const SCALE: Speaks = Speaks {
    group: "autoscaling",
    version: "v1",
    kind: "Scale",
    definition: "io.k8s.api.autoscaling.v1.Scale",
};
const BINDING: Speaks = Speaks {
    group: "",
    version: "v1",
    kind: "Binding",
    definition: "io.k8s.api.core.v1.Binding",
};
const EVICTION: Speaks = Speaks {
    group: "policy",
    version: "v1",
    kind: "Eviction",
    definition: "io.k8s.api.policy.v1.Eviction",
};
const TOKEN: Speaks = Speaks {
    group: "authentication.k8s.io",
    version: "v1",
    kind: "TokenRequest",
    definition: "io.k8s.api.authentication.v1.TokenRequest",
};

/// Which methods a subresource has, and the kind it speaks (`None`: its parent's).
fn shape(name: &str) -> Option<(&'static [Method], Option<Speaks>)> {
    const READ_WRITE: &[Method] = &[Method::Get, Method::Put, Method::Patch];
    Some(match name {
        "status" | "approval" | "ephemeralcontainers" | "resize" => (READ_WRITE, None),
        "scale" => (READ_WRITE, Some(SCALE)),
        "finalize" => (&[Method::Put], None),
        "binding" => (&[Method::Post], Some(BINDING)),
        "eviction" => (&[Method::Post], Some(EVICTION)),
        "token" => (&[Method::Post], Some(TOKEN)),
        "log" => (&[Method::Get], None),
        _ => return None,
    })
}

pub(super) fn operations(target: &Target, name: &str) -> Vec<Operation> {
    let Some((methods, speaks)) = shape(name) else {
        return Vec::new();
    };
    let parent = &target.resource.kind;
    let (gvk, definition) = match &speaks {
        Some(s) => (Gvk::new(s.group, s.version, s.kind), s.definition),
        None => (target.gvk(), target.definition),
    };
    let suffix = capitalize(name);
    methods
        .iter()
        .map(|&method| {
            if name == "log" {
                return log(target, gvk.clone(), &suffix);
            }
            let (verb, action, description, params, codes): (_, _, _, _, &[&'static str]) =
                match method {
                    Method::Get => (
                        "read",
                        "get",
                        format!("read {name} of the specified {parent}"),
                        params::READ,
                        &["200"],
                    ),
                    Method::Put => (
                        "replace",
                        "put",
                        format!("replace {name} of the specified {parent}"),
                        params::WRITE,
                        &["200", "201"],
                    ),
                    Method::Patch => (
                        "patch",
                        "patch",
                        format!("partially update {name} of the specified {parent}"),
                        params::PATCH,
                        &["200", "201"],
                    ),
                    Method::Post | Method::Delete => (
                        "create",
                        "post",
                        format!("create {name} of a {parent}"),
                        params::WRITE,
                        &["200", "201", "202"],
                    ),
                };
            let body = match method {
                Method::Get => None,
                Method::Patch => Some(Body::Patch {
                    strategic: target.builtin,
                }),
                _ => Some(Body::Object(definition.to_string())),
            };
            Operation {
                method,
                id: target.id(verb, "", &suffix),
                description,
                action,
                gvk: gvk.clone(),
                params,
                body,
                responses: responses(codes, definition),
                produces: OBJECT_TYPES,
            }
        })
        .collect()
}

fn log(target: &Target, gvk: Gvk, suffix: &str) -> Operation {
    let mut out = responses(&["200"], "");
    if let Some(ok) = out.first_mut() {
        ok.payload = Payload::Text;
    }
    Operation {
        method: Method::Get,
        id: target.id("read", "", suffix),
        description: format!("read log of the specified {}", target.resource.kind),
        action: "get",
        gvk,
        params: params::LOG,
        body: None,
        responses: out,
        produces: &[
            "text/plain",
            "application/json",
            "application/yaml",
            "application/vnd.kubernetes.protobuf",
        ],
    }
}
