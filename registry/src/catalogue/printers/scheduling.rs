//! Where pods run: PriorityClasses and RuntimeClasses.

use serde_json::Value;

use super::zero_values::{get, int, text};
use super::{age, column, integer, name, text_column, Cell, TableColumn};

pub(in crate::catalogue) fn priorityclass_columns() -> Vec<TableColumn> {
    vec![
        name(),
        integer("Value", "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.", |pc| {
            Value::from(int(pc, &["value"]).unwrap_or(0))
        }),
        column("Global-Default", "boolean", "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.", Cell::Printer(|pc| {
            Value::Bool(get(pc, &["globalDefault"]).and_then(Value::as_bool).unwrap_or(false))
        })),
        age(),
        text_column("PreemptionPolicy", "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.", |pc| {
            Value::String(text(pc, &["preemptionPolicy"]).to_string())
        }),
    ]
}

pub(in crate::catalogue) fn runtimeclass_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Handler", "handler specifies the underlying runtime and configuration that the CRI implementation will use to handle pods of this class. The possible values are specific to the node & CRI configuration.  It is assumed that all handlers are available on every node, and handlers of the same name are equivalent on every node. For example, a handler called \"runc\" might specify that the runc OCI runtime (using native Linux containers) will be used to run the containers in a pod. The Handler must be lowercase, conform to the DNS Label (RFC 1123) requirements, and is immutable.", |rc| {
            Value::String(text(rc, &["handler"]).to_string())
        }),
        age(),
    ]
}
