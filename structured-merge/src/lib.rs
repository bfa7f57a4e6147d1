//! Structured merge and diff: the field sets, FieldsV1 encoding and schema-driven walks that
//! server-side apply is built on (upstream's sigs.k8s.io/structured-merge-diff). Pure: it works
//! on schemas and `serde_json::Value`s and knows nothing of storage or HTTP.

pub mod compare;
pub mod conflict;
mod error;
pub mod fieldsv1;
#[cfg(test)]
mod fixtures;
pub mod from_openapi;
mod list_item;
mod members;
pub mod merge;
pub mod path;
pub mod remove;
pub mod schema;
pub mod set;
pub mod to_field_set;
pub mod updater;
mod value_order;

pub use compare::{compare, CompareOptions, Comparison};
pub use conflict::{Conflict, Conflicts};
pub use error::Error;
pub use merge::merge;
pub use path::{KeyFields, Path, PathElement};
pub use remove::{remove, remove_in_place};
pub use set::Set;
pub use to_field_set::{to_field_set, to_field_set_allowing_duplicates};
pub use updater::{Applied, ApplyError, ManagedFields, Updater, VersionedSet};
pub use value_order::canonical_json;
