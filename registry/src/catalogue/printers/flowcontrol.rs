//! flowcontrol.apiserver.k8s.io: upstream's printFlowSchema and
//! printPriorityLevelConfiguration. Numbers stay numbers in the cells; what a level lacks
//! reads `<none>`.

use serde_json::Value;

use super::zero_values::{get, text};
use super::{age, name, text_column, TableColumn};

/// The documentation of a flowcontrol/v1 field, as upstream's column descriptions use it.
fn doc(definition: &str, property: &str) -> String {
    openapi::property_description(&format!("io.k8s.api.flowcontrol.v1.{definition}"), property)
        .unwrap_or_else(|| property.to_string())
}

fn none() -> Value {
    Value::String("<none>".into())
}

pub(in crate::catalogue) fn flowschema_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column(
            "PriorityLevel",
            &doc("PriorityLevelConfigurationReference", "name"),
            |fs| Value::String(text(fs, &["spec", "priorityLevelConfiguration", "name"]).into()),
        ),
        text_column(
            "MatchingPrecedence",
            &doc("FlowSchemaSpec", "matchingPrecedence"),
            |fs| {
                Value::from(
                    get(fs, &["spec", "matchingPrecedence"])
                        .and_then(Value::as_i64)
                        .unwrap_or(0),
                )
            },
        ),
        text_column(
            "DistinguisherMethod",
            &doc("FlowSchemaSpec", "distinguisherMethod"),
            |fs| match get(fs, &["spec", "distinguisherMethod"]).filter(|m| !m.is_null()) {
                Some(method) => Value::String(text(method, &["type"]).into()),
                None => none(),
            },
        ),
        age(),
        text_column(
            "MissingPL",
            "references a broken or non-existent PriorityLevelConfiguration",
            missing_level,
        ),
    ]
}

/// Upstream's FlowSchemaSequence: by precedence, then by name, as a list's rows print.
pub(in crate::catalogue) fn flowschema_order(a: &Value, b: &Value) -> std::cmp::Ordering {
    let key = |fs: &Value| {
        (
            get(fs, &["spec", "matchingPrecedence"])
                .and_then(Value::as_i64)
                .unwrap_or(0),
            text(fs, &["metadata", "name"]).to_string(),
        )
    };
    key(a).cmp(&key(b))
}

/// The Dangling condition's status, `?` before the server has judged the reference.
fn missing_level(fs: &Value) -> Value {
    let conditions = get(fs, &["status", "conditions"]).and_then(Value::as_array);
    let dangling = conditions
        .into_iter()
        .flatten()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Dangling"));
    Value::String(match dangling {
        Some(c) => text(c, &["status"]).to_string(),
        None => "?".to_string(),
    })
}

/// A queuing number of a Limited level, `<none>` otherwise.
fn queuing(pl: &Value, field: &str) -> Value {
    get(pl, &["spec", "limited", "limitResponse", "queuing", field])
        .and_then(Value::as_i64)
        .map_or_else(none, Value::from)
}

pub(in crate::catalogue) fn prioritylevelconfiguration_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column(
            "Type",
            &doc("PriorityLevelConfigurationSpec", "type"),
            |pl| Value::String(text(pl, &["spec", "type"]).into()),
        ),
        text_column(
            "NominalConcurrencyShares",
            &doc(
                "LimitedPriorityLevelConfiguration",
                "nominalConcurrencyShares",
            ),
            |pl| match get(pl, &["spec", "limited"]).filter(|l| !l.is_null()) {
                Some(limited) => Value::from(
                    get(limited, &["nominalConcurrencyShares"])
                        .and_then(Value::as_i64)
                        .unwrap_or(0),
                ),
                None => none(),
            },
        ),
        text_column("Queues", &doc("QueuingConfiguration", "queues"), |pl| {
            queuing(pl, "queues")
        }),
        text_column("HandSize", &doc("QueuingConfiguration", "handSize"), |pl| {
            queuing(pl, "handSize")
        }),
        text_column(
            "QueueLengthLimit",
            &doc("QueuingConfiguration", "queueLengthLimit"),
            |pl| queuing(pl, "queueLengthLimit"),
        ),
        age(),
    ]
}
