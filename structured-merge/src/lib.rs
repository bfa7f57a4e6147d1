//! Structured merge and diff: the field sets, FieldsV1 encoding and schema-driven walks that
//! server-side apply is built on (upstream's sigs.k8s.io/structured-merge-diff). Pure: it works
//! on schemas and `serde_json::Value`s and knows nothing of storage or HTTP.

mod error;
pub mod fieldsv1;
pub mod from_openapi;
pub mod path;
pub mod schema;
pub mod set;
mod value_order;

pub use error::Error;
pub use path::{KeyFields, Path, PathElement};
pub use set::Set;
