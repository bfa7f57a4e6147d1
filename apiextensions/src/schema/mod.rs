//! The schema engine of CustomResourceDefinition versions: the CRD-time checks of a version's
//! `schema.openAPIV3Schema` (upstream's structural-schema rules and
//! ValidateCustomResourceDefinitionOpenAPISchema), and, once a schema is accepted, defaulting and
//! validation of the custom resources it describes, with upstream's field paths and wording.
//!
//! Validation compiles the schema once with the `jsonschema` crate (after rewriting the
//! OpenAPI-only keywords into JSON Schema) and maps its errors to upstream's causes; what JSON
//! Schema cannot say (embedded resources, list-type sets and maps) is checked by small walkers
//! over the structural part of the schema.

mod check;
mod convert;
mod defaults;
mod extensions;
mod formats;
mod messages;
mod node;
mod openapi;
mod prune;
mod structural;
mod validate;

#[cfg(test)]
mod tests;

pub use check::check_structural;
pub use validate::CustomSchema;

use registry::error::Cause;

/// `path.name`, as upstream's field.Path prints a child.
fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// `path[key]`, as upstream's field.Path prints a map key (and a list index).
fn key(path: &str, key: impl std::fmt::Display) -> String {
    format!("{path}[{key}]")
}

/// A cause of a kind error.rs has no constructor for.
fn cause(kind: &str, field: &str, message: String) -> Cause {
    Cause {
        kind: kind.to_string(),
        message,
        field: field.to_string(),
    }
}
