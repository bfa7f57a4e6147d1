//! certificates.k8s.io: upstream's printCertificateSigningRequest (its condition summary:
//! Pending, Approved or Denied, then Failed and Issued).

use chrono::TimeDelta;
use serde_json::Value;

use super::format::human_duration;
use super::zero_values::{get, text};
use super::{age, name, text_column, TableColumn};

fn doc(property: &str) -> String {
    openapi::property_description(
        "io.k8s.api.certificates.v1.CertificateSigningRequestSpec",
        property,
    )
    .unwrap_or_else(|| property.to_string())
}

fn or_none(value: &str) -> Value {
    Value::String(if value.is_empty() { "<none>" } else { value }.to_string())
}

pub(in crate::catalogue) fn csr_columns() -> Vec<TableColumn> {
    vec![
        name(),
        age(),
        text_column("SignerName", &doc("signerName"), |csr| {
            or_none(text(csr, &["spec", "signerName"]))
        }),
        text_column("Requestor", "Name of requestor", |csr| {
            Value::String(text(csr, &["spec", "username"]).to_string())
        }),
        text_column(
            "RequestedDuration",
            &doc("expirationSeconds"),
            |csr| match get(csr, &["spec", "expirationSeconds"]).and_then(Value::as_i64) {
                Some(seconds) => Value::String(human_duration(TimeDelta::seconds(seconds))),
                None => or_none(""),
            },
        ),
        text_column(
            "Condition",
            "Condition indicates if the signing request is approved or denied",
            condition,
        ),
    ]
}

/// upstream's extractCSRStatus.
pub fn condition(csr: &Value) -> Value {
    let types: Vec<&str> = get(csr, &["status", "conditions"])
        .and_then(Value::as_array)
        .map(|list| list.iter().map(|c| text(c, &["type"])).collect())
        .unwrap_or_default();
    let mut status = if types.contains(&"Denied") {
        "Denied"
    } else if types.contains(&"Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if types.contains(&"Failed") {
        status.push_str(",Failed");
    }
    if !text(csr, &["status", "certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    Value::String(status)
}
