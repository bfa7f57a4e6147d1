//! apiregistration.k8s.io: APIServices, as kube-aggregator prints them.

use serde_json::Value;

use super::zero_values::{get, items, text};
use super::{age, name, text_column, TableColumn};

pub(in crate::catalogue) fn apiservice_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column(
            "Service",
            "The reference to the service that hosts this API endpoint.",
            service,
        ),
        text_column("Available", "Whether this service is available.", available),
        age(),
    ]
}

/// `namespace/name`, or `Local` for the server's own.
fn service(api: &Value) -> Value {
    match get(api, &["spec", "service"]).filter(|s| s.is_object()) {
        Some(s) => Value::String(format!(
            "{}/{}",
            text(s, &["namespace"]),
            text(s, &["name"])
        )),
        None => Value::String("Local".into()),
    }
}

/// `True`, `False (Reason)`, or `Unknown` before anyone reported.
fn available(api: &Value) -> Value {
    let condition = items(api, &["status", "conditions"])
        .iter()
        .find(|c| text(c, &["type"]) == "Available");
    Value::String(match condition {
        None => "Unknown".into(),
        Some(c) if text(c, &["status"]) == "True" => "True".into(),
        Some(c) => format!("{} ({})", text(c, &["status"]), text(c, &["reason"])),
    })
}
