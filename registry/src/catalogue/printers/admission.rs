//! admissionregistration.k8s.io: webhook configurations, admission policies and bindings.

use serde_json::Value;

use super::format::selector;
use super::zero_values::{get, items, text};
use super::{age, integer, name, text_column, TableColumn};

pub(in crate::catalogue) fn webhookconfiguration_columns() -> Vec<TableColumn> {
    vec![
        name(),
        integer(
            "Webhooks",
            "Webhooks indicates the number of webhooks registered in this configuration",
            |c| Value::from(items(c, &["webhooks"]).len()),
        ),
        age(),
    ]
}

pub(in crate::catalogue) fn admissionpolicy_columns() -> Vec<TableColumn> {
    vec![
        name(),
        integer(
            "Validations",
            "Validations indicates the number of validation rules defined in this configuration",
            |p| Value::from(items(p, &["spec", "validations"]).len()),
        ),
        text_column(
            "ParamKind",
            "ParamKind specifies the kind of resources used to parameterize this policy",
            param_kind,
        ),
        age(),
    ]
}

pub(in crate::catalogue) fn admissionpolicybinding_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("PolicyName", "PolicyName references a ValidatingAdmissionPolicy name which the ValidatingAdmissionPolicyBinding binds to. If the referenced resource does not exist, this binding is considered invalid and will be ignored Required.", |b| {
            Value::String(text(b, &["spec", "policyName"]).to_string())
        }),
        text_column("ParamRef", "ParamRef specifies the parameter resource used to configure the admission control policy. It should point to a resource of the type specified in ParamKind of the bound ValidatingAdmissionPolicy. If the policy specifies a ParamKind and the resource referred to by ParamRef does not exist, this binding is considered mis-configured and the FailurePolicy of the ValidatingAdmissionPolicy applied. If the policy does not specify a ParamKind then this field is ignored, and the rules are evaluated without a param.", param_ref),
        age(),
    ]
}

/// `apiVersion/kind`, or `<unset>`.
fn param_kind(policy: &Value) -> Value {
    match get(policy, &["spec", "paramKind"]).filter(|k| k.is_object()) {
        Some(kind) => Value::String(format!(
            "{}/{}",
            text(kind, &["apiVersion"]),
            text(kind, &["kind"])
        )),
        None => Value::String("<unset>".into()),
    }
}

/// `namespace/name` (`*/name` for any namespace), the selector, or `<unset>`.
fn param_ref(binding: &Value) -> Value {
    let Some(param) = get(binding, &["spec", "paramRef"]).filter(|p| p.is_object()) else {
        return Value::String("<unset>".into());
    };
    let name = text(param, &["name"]);
    if !name.is_empty() {
        let namespace = match text(param, &["namespace"]) {
            "" => "*",
            ns => ns,
        };
        return Value::String(format!("{namespace}/{name}"));
    }
    Value::String(selector(get(param, &["selector"])).unwrap_or_else(|| "<unset>".into()))
}
