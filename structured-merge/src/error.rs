use thiserror::Error;

/// Everything this crate can reject: malformed FieldsV1, schemas it cannot model, and values
/// that do not fit their schema.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum Error {
    #[error("invalid FieldsV1: {0}")]
    FieldsV1(String),
    #[error("invalid schema: {0}")]
    Schema(String),
    #[error("{path}: {message}")]
    Value { path: String, message: String },
}
