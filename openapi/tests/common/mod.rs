//! The resources the tests serve: a slice of the apiserver's catalogue.

// Each test file uses its own part of this module.
#![allow(dead_code)]

use openapi::{KindSpec, OpenApi, ResourceSpec, SubresourceSpec};
use serde_json::Value;

const ALL: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

pub fn spec(
    group: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
    subs: &[&str],
) -> ResourceSpec {
    ResourceSpec {
        group: group.to_string(),
        version: "v1".to_string(),
        kind: kind.to_string(),
        plural: plural.to_string(),
        namespaced,
        verbs: ALL.iter().map(|v| v.to_string()).collect(),
        subresources: subs.iter().map(|s| subresource(s)).collect(),
        delete_returns_object: group.is_empty() && kind == "Pod",
    }
}

/// A subresource as the apiserver's catalogue describes it.
pub fn subresource(name: &str) -> SubresourceSpec {
    let kind = |group: &str, kind: &str, definition: &str| {
        Some(KindSpec {
            group: group.to_string(),
            version: "v1".to_string(),
            kind: kind.to_string(),
            definition: definition.to_string(),
        })
    };
    let (verbs, speaks, text): (&[&str], _, _) = match name {
        "status" | "ephemeralcontainers" => (&["get", "patch", "update"], None, false),
        "scale" => (
            &["get", "patch", "update"],
            kind("autoscaling", "Scale", "io.k8s.api.autoscaling.v1.Scale"),
            false,
        ),
        "finalize" => (&["update"], None, false),
        "binding" => (
            &["create"],
            kind("", "Binding", "io.k8s.api.core.v1.Binding"),
            false,
        ),
        "eviction" => (
            &["create"],
            kind("policy", "Eviction", "io.k8s.api.policy.v1.Eviction"),
            false,
        ),
        "token" => (
            &["create"],
            kind(
                "authentication.k8s.io",
                "TokenRequest",
                "io.k8s.api.authentication.v1.TokenRequest",
            ),
            false,
        ),
        "log" => (&["get"], None, true),
        "exec" => (
            &["create", "get"],
            kind("", "PodExecOptions", "io.k8s.api.core.v1.PodExecOptions"),
            false,
        ),
        "proxy" => (
            &["create", "delete", "get", "patch", "update"],
            kind("", "PodProxyOptions", "io.k8s.api.core.v1.PodProxyOptions"),
            false,
        ),
        other => panic!("no subresource {other} in the tests"),
    };
    let connect_methods: &[&str] = match name {
        "exec" => &["GET", "POST"],
        "proxy" => &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"],
        _ => &[],
    };
    SubresourceSpec {
        name: name.to_string(),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        speaks,
        text,
        connect_methods: connect_methods.iter().map(|m| m.to_string()).collect(),
    }
}

pub fn resources() -> Vec<ResourceSpec> {
    vec![
        spec(
            "",
            "Pod",
            "pods",
            true,
            &[
                "status",
                "binding",
                "eviction",
                "log",
                "ephemeralcontainers",
                "exec",
                "proxy",
            ],
        ),
        spec("", "ConfigMap", "configmaps", true, &[]),
        spec(
            "",
            "Namespace",
            "namespaces",
            false,
            &["status", "finalize"],
        ),
        spec("", "ServiceAccount", "serviceaccounts", true, &["token"]),
        spec(
            "apps",
            "Deployment",
            "deployments",
            true,
            &["status", "scale"],
        ),
        spec("batch", "Job", "jobs", true, &["status"]),
        spec(
            "rbac.authorization.k8s.io",
            "ClusterRole",
            "clusterroles",
            false,
            &[],
        ),
        spec(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
            &["status"],
        ),
    ]
}

pub fn openapi() -> OpenApi {
    OpenApi::new(resources()).with_info_version("v1.32.0")
}

pub fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("documents are JSON")
}
