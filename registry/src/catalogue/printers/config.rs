//! Configuration objects: config maps, secrets, service accounts, resource quotas.

use serde_json::Value;

use super::format::quantity;
use super::zero_values::{get, len, object, text};
use super::{age, column, name, text_column, Cell, TableColumn};

pub(in crate::catalogue) fn configmap_columns() -> Vec<TableColumn> {
    vec![
        name(),
        // Declared a string upstream, filled with the integer count.
        text_column("Data", "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.", configmap_data),
        age(),
    ]
}

pub(in crate::catalogue) fn secret_columns() -> Vec<TableColumn> {
    vec![
        name(),
        column("Type", "string", "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types", Cell::Printer(secret_type)),
        text_column("Data", "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4", secret_data),
        age(),
    ]
}

pub(in crate::catalogue) fn serviceaccount_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Secrets", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret", serviceaccount_secrets),
        age(),
    ]
}

pub(in crate::catalogue) fn resourcequota_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Request", "Request represents a minimum amount of cpu/memory that a container may consume.", quota_requests),
        text_column("Limit", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.", quota_limits),
        age(),
    ]
}

fn configmap_data(cm: &Value) -> Value {
    Value::from(len(cm, &["data"]) + len(cm, &["binaryData"]))
}

fn secret_type(secret: &Value) -> Value {
    Value::String(text(secret, &["type"]).to_string())
}

fn secret_data(secret: &Value) -> Value {
    Value::from(len(secret, &["data"]))
}

fn serviceaccount_secrets(sa: &Value) -> Value {
    Value::from(len(sa, &["secrets"]))
}

/// `name: used/hard` for each hard limit, split into the `limits.*` ones and the rest.
fn quota_usage(quota: &Value, limits: bool) -> Value {
    let hard = object(quota, &["status", "hard"]);
    let mut names: Vec<&String> = hard.into_iter().flat_map(|h| h.keys()).collect();
    names.sort();
    let shown: Vec<String> = names
        .into_iter()
        .filter(|name| name.starts_with("limits.") == limits)
        .map(|name| {
            let used = quantity(get(quota, &["status", "used", name.as_str()]));
            let limit = quantity(hard.and_then(|h| h.get(name.as_str())));
            format!("{name}: {used}/{limit}")
        })
        .collect();
    Value::String(shown.join(", "))
}

fn quota_requests(quota: &Value) -> Value {
    quota_usage(quota, false)
}

fn quota_limits(quota: &Value) -> Value {
    quota_usage(quota, true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn counts() {
        let cm = json!({"data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
        assert_eq!(configmap_data(&cm), 3);
        assert_eq!(configmap_data(&json!({})), 0);
        let secret = json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}});
        assert_eq!(secret_type(&secret), "kubernetes.io/tls");
        assert_eq!(secret_data(&secret), 2);
        assert_eq!(
            serviceaccount_secrets(&json!({"secrets": [{"name": "t"}]})),
            1
        );
    }

    #[test]
    fn quotas_split_requests_and_limits() {
        let quota = json!({"status": {
            "hard": {"pods": "10", "requests.cpu": "1", "limits.memory": "2Gi", "limits.cpu": "2"},
            "used": {"pods": "3", "requests.cpu": "500m", "limits.cpu": "1"},
        }});
        assert_eq!(quota_requests(&quota), "pods: 3/10, requests.cpu: 500m/1");
        assert_eq!(
            quota_limits(&quota),
            "limits.cpu: 1/2, limits.memory: 0/2Gi"
        );
        assert_eq!(quota_requests(&json!({})), "");
    }
}
