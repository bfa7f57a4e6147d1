//! OpenAPI documents of the Kubernetes API as kube-apiserver serves them: `/openapi/v3` (an
//! index of per-group-version documents) and `/openapi/v2` (one Swagger 2.0 document), for
//! the built-in resources and custom resources the server serves, plus resolved schemas for
//! server-side validation. A pure library: the apiserver serves the bytes.
//!
//! Built-in schemas come from k8s-openapi (upstream's definitions and descriptions); the
//! x-kubernetes-* extensions it lacks come from the markers in the Kubernetes `.proto`
//! definitions (see build.rs).

mod builtin;
mod custom;
mod document;
mod gvk;
mod names;
mod operations;
mod refs;
mod render;
mod service;
mod spec;
mod v2;
mod v3;

pub use document::{Document, V2_PROTOBUF, V2_PROTOBUF_ACCEPTED};
pub use service::OpenApi;
pub use spec::{CustomResource, ResourceSpec};
