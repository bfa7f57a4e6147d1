//! Role bindings and cluster role bindings. Roles and cluster roles use the default columns.

use serde_json::Value;

use super::zero_values::{items, text};
use super::{age, name, text_column, wide, TableColumn};

pub(in crate::catalogue) fn rolebinding_columns() -> Vec<TableColumn> {
    binding_columns(
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
        "roleBinding",
    )
}

pub(in crate::catalogue) fn clusterrolebinding_columns() -> Vec<TableColumn> {
    binding_columns(
        "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
        "clusterRoleBinding",
    )
}

fn binding_columns(role_doc: &str, noun: &str) -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Role", role_doc, role),
        age(),
        wide(text_column("Users", &format!("Users in the {noun}"), users)),
        wide(text_column(
            "Groups",
            &format!("Groups in the {noun}"),
            groups,
        )),
        wide(text_column(
            "ServiceAccounts",
            &format!("ServiceAccounts in the {noun}"),
            service_accounts,
        )),
    ]
}

fn role(binding: &Value) -> Value {
    let kind = text(binding, &["roleRef", "kind"]);
    let name = text(binding, &["roleRef", "name"]);
    Value::String(format!("{kind}/{name}"))
}

/// The subjects of one kind, as upstream's rbac.SubjectsStrings renders them.
fn subjects(binding: &Value, kind: &str) -> Value {
    let names: Vec<String> = items(binding, &["subjects"])
        .iter()
        .filter(|s| text(s, &["kind"]) == kind)
        .map(|s| match kind {
            "ServiceAccount" => format!("{}/{}", text(s, &["namespace"]), text(s, &["name"])),
            _ => text(s, &["name"]).to_string(),
        })
        .collect();
    Value::String(names.join(", "))
}

fn users(binding: &Value) -> Value {
    subjects(binding, "User")
}

fn groups(binding: &Value) -> Value {
    subjects(binding, "Group")
}

fn service_accounts(binding: &Value) -> Value {
    subjects(binding, "ServiceAccount")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn bindings() {
        let b = json!({
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [
                {"kind": "User", "name": "alice"},
                {"kind": "User", "name": "bob"},
                {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "namespace": "ci", "name": "runner"},
            ],
        });
        assert_eq!(role(&b), "ClusterRole/view");
        assert_eq!(users(&b), "alice, bob");
        assert_eq!(groups(&b), "devs");
        assert_eq!(service_accounts(&b), "ci/runner");
        assert_eq!(users(&json!({})), "");
    }
}
