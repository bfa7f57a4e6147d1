//! Label and field selectors with upstream's string syntax, matching rules, canonical string
//! forms and error messages (k8s.io/apimachinery pkg/labels and pkg/fields).

pub mod fields;
pub mod labels;

pub use fields::{escape_value, FieldOperator, FieldRequirement, FieldSelector};
pub use labels::{LabelOperator, LabelRequirement, LabelSelector};

use crate::error::RegistryError;

/// A selector that could not be parsed or converted; the message is upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(String);

impl SelectorError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }

    pub fn message(&self) -> &str {
        &self.0
    }
}

/// Upstream answers a bad labelSelector or fieldSelector parameter with a 400 carrying the
/// parser's message.
impl From<SelectorError> for RegistryError {
    fn from(err: SelectorError) -> Self {
        RegistryError::BadRequest(err.0)
    }
}
