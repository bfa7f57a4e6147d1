//! flowcontrol.apiserver.k8s.io/v1: API Priority and Fairness' FlowSchemas and
//! PriorityLevelConfigurations, and the configuration the server starts with and keeps.

pub mod configuration;
mod flow_schema;
mod priority_level;
#[cfg(test)]
mod tests;

use serde_json::Value;

pub use flow_schema::FlowSchemaStrategy;
pub use priority_level::{set_defaults as set_level_defaults, PriorityLevelConfigurationStrategy};

use crate::error::Cause;

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The strings of a list field (non-strings read as empty).
fn strings(value: Option<&Value>) -> Vec<&str> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|v| v.as_str().unwrap_or_default())
                .collect()
        })
        .unwrap_or_default()
}

/// A spec as a mandatory-object error shows it. Upstream prints the Go struct (`%#v`, with
/// pointer addresses); the JSON says the same to a reader.
fn go_value(spec: &Value) -> String {
    serde_json::to_string(spec).unwrap_or_default()
}

/// The status conditions: each with a type, no type twice.
fn conditions(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut seen = Vec::new();
    let list = obj.pointer("/status/conditions").and_then(Value::as_array);
    for (i, condition) in list.into_iter().flatten().enumerate() {
        let kind = condition
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if seen.contains(&kind) {
            causes.push(Cause::duplicate(
                &format!("status.conditions[{i}].type"),
                crate::validation::quote(kind),
            ));
        }
        seen.push(kind);
        if kind.is_empty() {
            causes.push(Cause::required_because(
                &format!("status.conditions[{i}].type"),
                "must not be empty",
            ));
        }
    }
    causes
}
