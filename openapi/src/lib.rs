//! OpenAPI documents of the Kubernetes API as kube-apiserver serves them: `/openapi/v3` (an
//! index of per-group-version documents) and `/openapi/v2` (one Swagger 2.0 document), for
//! the built-in resources and custom resources the server serves, plus resolved schemas for
//! server-side validation. A pure library: the apiserver serves the bytes.
//!
//! Built-in schemas come from k8s-openapi (upstream's definitions and descriptions); the
//! x-kubernetes-* extensions it lacks come from the markers in the Kubernetes `.proto`
//! definitions. Both are read at build time and embedded (see build.rs).
//!
//! Serving them as kube-apiserver does:
//! - `GET /openapi/v3`: [`OpenApi::v3_index`], `application/json`, `ETag` from
//!   [`Document::etag`]; an `If-None-Match` that [`Document::matches`] gets 304.
//! - `GET /openapi/v3/<path>`: [`OpenApi::v3_group_version`], 404 when `None`. A `hash`
//!   query parameter other than [`Document::hash`] is answered 301 to
//!   `/openapi/v3/<path>?hash=<hash>`; an equal one lets the response say
//!   `Cache-Control: public, immutable` (clients cache by it).
//! - `GET /openapi/v2`: [`OpenApi::v2_protobuf`] when the Accept header names one of
//!   [`V2_PROTOBUF_ACCEPTED`] (answered as [`V2_PROTOBUF`]; kubectl asks for nothing else),
//!   otherwise [`OpenApi::v2`] as JSON.
//!
//! A document's first build is CPU work (the first of all also parses the embedded
//! definitions): call from a blocking task, or warm the cache at startup with `v3_index()`.

mod builtin;
mod custom;
mod document;
mod gvk;
mod names;
mod operations;
pub mod patch_meta;
mod refs;
mod render;
mod service;
mod spec;
mod v2;
mod v3;
pub mod wire_order;

pub use document::{Document, V2_PROTOBUF, V2_PROTOBUF_ACCEPTED};

/// Whether a kind is one of Kubernetes' own (typed upstream), not a custom resource.
pub fn is_builtin_kind(group: &str, version: &str, kind: &str) -> bool {
    builtin::builtin()
        .kinds
        .contains_key(&gvk::Gvk::new(group, version, kind))
}
pub use service::OpenApi;
pub use spec::{CustomResource, KindSpec, ResourceSpec, SubresourceSpec};

/// The documentation of `property` in the built-in definition `definition`, as upstream's
/// SwaggerDoc gives it (Table column descriptions are these).
pub fn property_description(definition: &str, property: &str) -> Option<String> {
    let schema = builtin::builtin().definitions.get(definition)?;
    schema["properties"][property]["description"]
        .as_str()
        .map(str::to_string)
}
