//! Structured merge and diff: the field sets, FieldsV1 encoding and schema-driven walks that
//! server-side apply is built on (upstream's sigs.k8s.io/structured-merge-diff). Pure: it works
//! on schemas and `serde_json::Value`s and knows nothing of storage or HTTP.

mod error;
pub mod fieldsv1;
#[cfg(test)]
mod fixtures;
pub mod from_openapi;
mod list_item;
pub mod merge;
pub mod path;
pub mod remove;
pub mod schema;
pub mod set;
pub mod to_field_set;
mod value_order;

pub use error::Error;
pub use merge::merge;
pub use path::{KeyFields, Path, PathElement};
pub use remove::remove;
pub use set::Set;
pub use to_field_set::to_field_set;
