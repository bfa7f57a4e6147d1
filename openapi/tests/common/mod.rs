//! The resources the tests serve: a slice of the apiserver's catalogue.

// Each test file uses its own part of this module.
#![allow(dead_code)]

use openapi::{OpenApi, ResourceSpec};
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
        subresources: subs.iter().map(|s| s.to_string()).collect(),
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
