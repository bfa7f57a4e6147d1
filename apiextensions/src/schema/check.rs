//! The CRD-time checks of a version's openAPIV3Schema, in upstream's order: nullable at the
//! root, then the structural rules (and, when those hold, the defaults), then the per-keyword
//! rules, and last whether the schema compiles at all.

use super::validate::Compiled;
use super::{cause, child, defaults, openapi, structural};
use registry::error::Cause;
use serde_json::Value;

/// CRD-time checks of a version's openAPIV3Schema (upstream's
/// ValidateCustomResourceDefinitionOpenAPISchema and structural-schema checks), with causes at
/// fields under `path`, e.g. `spec.versions[0].schema.openAPIV3Schema.properties[spec].type`.
/// x-kubernetes-validations rules are left to the CEL module.
pub fn check_structural(schema: &Value, path: &str) -> Vec<Cause> {
    if schema.is_null() {
        return vec![cause(
            "FieldValueRequired",
            path,
            "Required value: schemas are required".to_string(),
        )];
    }
    let decoding = openapi::decode_errors(schema, path);
    if !decoding.is_empty() {
        return decoding;
    }
    let mut causes = Vec::new();
    if schema.get("nullable") == Some(&Value::Bool(true)) {
        let field = child(path, "nullable");
        causes.push(Cause::forbidden(
            &field,
            "nullable cannot be true at the root",
        ));
    }
    // A schema upstream cannot read as structural gets only the keyword errors below, which
    // say the same.
    let unreadable = structural::unreadable(schema);
    if unreadable.is_none() {
        let violations = structural::check(schema, path);
        if violations.is_empty() {
            causes.extend(defaults::check(schema, path));
        } else {
            causes.extend(violations);
        }
    }
    causes.extend(openapi::check(schema, path));
    if causes.is_empty() {
        if let Some(why) = unreadable {
            causes.push(Cause::invalid(path, "\"\"", &why));
        } else if let Err(why) = Compiled::new(schema, true) {
            let why = format!("error building validator: {why}");
            causes.push(Cause::invalid(path, "\"\"", &why));
        }
    }
    causes
}
