//! The errors of a strategic merge patch, worded as upstream's (a 400 with Go's rendering of
//! the values involved).

use serde_json::Value;

use super::Object;
use crate::error::RegistryError;
use crate::go_fmt;

pub(super) fn bad(message: impl Into<String>) -> RegistryError {
    RegistryError::BadRequest(message.into())
}

pub(super) fn bad_arg_type(expected: &str, actual: &Value) -> RegistryError {
    bad(format!(
        "expected a {expected}, but received a {}",
        go_fmt::type_name(actual)
    ))
}

pub(super) fn no_merge_key(item: &Object, key: &str) -> RegistryError {
    bad(format!(
        "map: {} does not contain declared merge key: {key}",
        go_fmt::map(item)
    ))
}

pub(super) fn bad_patch_type(directive: &Value, item: &Object) -> RegistryError {
    bad(format!(
        "unknown patch type: {} in map: {}",
        go_fmt::value(directive),
        go_fmt::map(item)
    ))
}
