//! PATCH bodies applied to an object, as upstream's patch handler applies them
//! (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go): RFC 6902 JSON patch,
//! RFC 7386 merge patch, and strategic merge patch over the built-in kinds' patch metadata
//! (generated from the OpenAPI markers, `openapi::patch_meta`). Works on the object's JSON;
//! decoding the result into a typed object, defaulting and validation are the caller's.

mod json;
mod strategic;
#[cfg(test)]
mod tests;

use serde_json::Value;

use crate::error::{Cause, Qualified, RegistryError, Result};

pub use openapi::patch_meta::{Field, PatchSchema, Strategy, UNTAGGED};

/// The patch body formats, by Content-Type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// application/json-patch+json
    Json,
    /// application/merge-patch+json
    Merge,
    /// application/strategic-merge-patch+json
    Strategic,
    /// application/apply-patch+yaml (server-side apply, `Store::apply`).
    Apply,
}

impl PatchType {
    pub const JSON: &'static str = "application/json-patch+json";
    pub const MERGE: &'static str = "application/merge-patch+json";
    pub const STRATEGIC: &'static str = "application/strategic-merge-patch+json";
    pub const APPLY: &'static str = "application/apply-patch+yaml";

    /// The patch type a Content-Type header names; parameters such as `; charset=utf-8` are
    /// ignored, the media type itself matches exactly, as upstream matches it.
    pub fn from_content_type(ct: &str) -> Option<Self> {
        let media = ct.split(';').next().unwrap_or_default().trim();
        match media {
            Self::JSON => Some(Self::Json),
            Self::MERGE => Some(Self::Merge),
            Self::STRATEGIC => Some(Self::Strategic),
            Self::APPLY => Some(Self::Apply),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Json => Self::JSON,
            Self::Merge => Self::MERGE,
            Self::Strategic => Self::STRATEGIC,
            Self::Apply => Self::APPLY,
        }
    }
}

/// The 415 upstream answers a PATCH whose Content-Type the resource does not accept.
/// Built-in kinds accept strategic merge patches; custom resources do not.
pub fn unsupported_media_type(strategic: bool) -> RegistryError {
    let accepted: Vec<&str> = if strategic {
        vec![
            PatchType::JSON,
            PatchType::MERGE,
            PatchType::STRATEGIC,
            PatchType::APPLY,
        ]
    } else {
        vec![PatchType::JSON, PatchType::MERGE, PatchType::APPLY]
    };
    RegistryError::UnsupportedMediaType(format!(
        "the body of the request was in an unknown format - accepted media types include: {}",
        accepted.join(", ")
    ))
}

/// Applies `patch` (the raw request body) of type `kind` to `original` and returns the patched
/// object. `schema` is the kind's strategic-merge metadata (`schema_for`); without one a
/// strategic merge patch is refused with 415, as upstream refuses it for custom resources.
pub fn apply_patch(
    kind: PatchType,
    original: &Value,
    patch: &[u8],
    schema: Option<&PatchSchema>,
) -> Result<Value> {
    let patched = match kind {
        PatchType::Json => json::apply_json_patch(original, patch)?,
        PatchType::Merge => json::apply_merge_patch(original, patch)?,
        PatchType::Strategic => match schema {
            Some(schema) => strategic::apply(original, patch, schema)?,
            None => return Err(unsupported_media_type(false)),
        },
        // Apply merges under the kind's schema with its managers' rights: Store::apply.
        PatchType::Apply => {
            return Err(RegistryError::Internal(
                "an apply patch goes through Store::apply".into(),
            ))
        }
    };
    ensure_object(patched)
}

/// A patch may turn the document into something that is not an object; upstream then fails to
/// decode it into the kind and answers 422 naming the whole patched document.
fn ensure_object(patched: Value) -> Result<Value> {
    if patched.is_object() {
        return Ok(patched);
    }
    let text = Value::String(patched.to_string()).to_string();
    let why = format!(
        "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
        crate::go_fmt::json_kind(&patched)
    );
    Err(RegistryError::invalid(
        &Qualified::default(),
        "",
        vec![Cause::invalid("patch", text, &why)],
    ))
}
