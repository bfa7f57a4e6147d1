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
    /// The subresources the documents describe, in the catalogue's order.
    pub subresources: Vec<SubresourceSpec>,
    /// DELETE answers with the deleted object rather than a Status (upstream's
    /// ReturnDeletedObject).
    pub delete_returns_object: bool,
}

/// A subresource, as the apiserver's catalogue registers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubresourceSpec {
    /// The last segment of its path: status, scale, finalize, binding, eviction, token, log.
    pub name: String,
    /// Upstream verb names: get, update, patch (each read or written in place) and create.
    pub verbs: Vec<String>,
    /// The kind its requests and answers speak; `None`: its parent's.
    pub speaks: Option<KindSpec>,
    /// Answers plain text (pods' log) rather than an object.
    pub text: bool,
    /// For a connect subresource (exec, proxy, ...): the HTTP methods it takes, each one
    /// operation (`connect<Method>...`); empty for every other subresource.
    pub connect_methods: Vec<String>,
}

/// A kind a subresource speaks, and its definition in the documents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindSpec {
    /// "" for the core group.
    pub group: String,
    pub version: String,
    pub kind: String,
    /// e.g. `io.k8s.api.autoscaling.v1.Scale`.
    pub definition: String,
}

/// A custom resource's version, from its CustomResourceDefinition.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomResource {
    pub resource: ResourceSpec,
    /// The version's `schema.openAPIV3Schema`; `None` when the definition has none (the
    /// document then describes an object that keeps any field).
    pub schema: Option<Value>,
}
