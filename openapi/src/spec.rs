//! What the API server tells this crate about the resources it serves.

use serde_json::Value;

/// One served resource, as the apiserver's catalogue knows it. The document describes exactly
/// these: a built-in kind's schema comes from the Kubernetes API definitions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceSpec {
    /// "" for the core group.
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// Upstream verb names: get, list, watch, create, update, patch, delete, deletecollection.
    pub verbs: Vec<String>,
    /// Subresource names: status, scale, finalize, binding, eviction, approval, token,
    /// ephemeralcontainers, resize, log. Others are left out of the documents.
    pub subresources: Vec<String>,
}

/// A custom resource's version, from its CustomResourceDefinition.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomResource {
    pub resource: ResourceSpec,
    /// The version's `schema.openAPIV3Schema`; `None` when the definition has none (the
    /// document then describes an object that keeps any field).
    pub schema: Option<Value>,
}
