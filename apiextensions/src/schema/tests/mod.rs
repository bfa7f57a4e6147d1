//! Tests of the schema engine, by what they exercise.

mod crd;
mod crontab;
mod defaulting;
mod formats;
mod resources;
mod validation;

use super::{check_structural, CustomSchema};
use registry::error::Cause;
use serde_json::{json, Value};

/// A resource schema whose spec has these properties.
fn spec_schema(properties: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": properties}
        }
    })
}

fn compile(schema: &Value) -> CustomSchema {
    match CustomSchema::compile(schema) {
        Ok(compiled) => compiled,
        Err(e) => panic!("schema does not compile: {e}"),
    }
}

/// Each cause as `kind field: message`.
fn lines(causes: &[Cause]) -> Vec<String> {
    causes
        .iter()
        .map(|c| format!("{} {}", c.kind, c.full_message()))
        .collect()
}

/// The causes of validating `spec` against a schema whose spec has `properties`.
fn spec_errors(properties: Value, spec: Value) -> Vec<String> {
    let schema = compile(&spec_schema(properties));
    lines(&schema.validate(&json!({"apiVersion": "example.com/v1", "kind": "Thing", "spec": spec})))
}

/// The CRD-time causes of a schema, at the path the integrator uses.
const ROOT: &str = "spec.versions[0].schema.openAPIV3Schema";

fn crd_errors(schema: Value) -> Vec<String> {
    lines(&check_structural(&schema, ROOT))
}
