//! Operations of subresources, as the catalogue describes them: a method per verb, the body
//! each takes and the kind it speaks (status speaks its parent's; scale speaks
//! autoscaling/v1 Scale).

use super::{params, responses, Body, Method, Operation, Payload, Target, OBJECT_TYPES};
use crate::gvk::Gvk;
use crate::names::capitalize;
use crate::SubresourceSpec;

/// The methods of a subresource's verbs, in the order the documents list them.
const METHODS: [(&str, Method); 4] = [
    ("get", Method::Get),
    ("update", Method::Put),
    ("patch", Method::Patch),
    ("create", Method::Post),
];

pub(super) fn operations(target: &Target, sub: &SubresourceSpec) -> Vec<Operation> {
    let name = sub.name.as_str();
    let methods = METHODS
        .iter()
        .filter(|(verb, _)| sub.verbs.iter().any(|v| v == verb))
        .map(|(_, method)| method);
    let parent = &target.resource.kind;
    let (gvk, definition) = match &sub.speaks {
        Some(s) => (
            Gvk::new(&s.group, &s.version, &s.kind),
            s.definition.as_str(),
        ),
        None => (target.gvk(), target.definition),
    };
    let suffix = capitalize(name);
    methods
        .map(|&method| {
            if sub.text {
                return text(target, gvk.clone(), name, &suffix);
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
                    Method::Post | Method::Delete | Method::Head | Method::Options => (
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

/// The read of a subresource that answers plain text (pods' log).
fn text(target: &Target, gvk: Gvk, name: &str, suffix: &str) -> Operation {
    let mut out = responses(&["200"], "");
    if let Some(ok) = out.first_mut() {
        ok.payload = Payload::Text;
    }
    Operation {
        method: Method::Get,
        id: target.id("read", "", suffix),
        description: format!("read {name} of the specified {}", target.resource.kind),
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
