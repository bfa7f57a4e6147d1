//! PriorityClasses (scheduling.k8s.io/v1; upstream's pkg/apis/scheduling): a value and a
//! preemption policy fixed at creation, user values capped below the system range, and the
//! `system-` names reserved for the classes every cluster has.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::strategy::{at, default_at, Strategy};

/// The highest value a user-defined class may have (HighestUserDefinablePriority).
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
/// Names with this prefix are the system classes' only.
pub const SYSTEM_PRIORITY_CLASS_PREFIX: &str = "system-";
const PREEMPTION_POLICIES: &[&str] = &["Never", "PreemptLowerPriority"];

/// A class every cluster has (upstream's systemPriorityClasses), created at start.
pub struct SystemPriorityClass {
    pub name: &'static str,
    pub value: i64,
    pub description: &'static str,
}

pub const SYSTEM_PRIORITY_CLASSES: &[SystemPriorityClass] = &[
    SystemPriorityClass {
        name: "system-node-critical",
        value: 2 * HIGHEST_USER_DEFINABLE_PRIORITY + 1000,
        description: "Used for system critical pods that must not be moved from their current node.",
    },
    SystemPriorityClass {
        name: "system-cluster-critical",
        value: 2 * HIGHEST_USER_DEFINABLE_PRIORITY,
        description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    },
];

impl SystemPriorityClass {
    /// The object the server creates.
    pub fn object(&self) -> Value {
        json!({
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": self.name},
            "value": self.value,
            "description": self.description,
        })
    }
}

/// Why `name` with this value and default mark is not a system class as upstream defines
/// them (IsKnownSystemPriorityClass), if it is not.
fn system_class_problem(name: &str, value: i64, global_default: bool) -> Option<String> {
    let Some(class) = SYSTEM_PRIORITY_CLASSES.iter().find(|c| c.name == name) else {
        return Some(format!("{name} is not a known system priority class"));
    };
    if class.value != value {
        return Some(format!(
            "value of {} PriorityClass must be {}",
            class.name, class.value
        ));
    }
    // No system class is a global default.
    global_default.then(|| {
        format!(
            "globalDefault of {} PriorityClass must be false",
            class.name
        )
    })
}

pub struct PriorityClassStrategy;

fn value_of(obj: &Value) -> i64 {
    obj.get("value").and_then(Value::as_i64).unwrap_or(0)
}

impl Strategy for PriorityClassStrategy {
    /// SetDefaults_PriorityClass.
    fn prepare_for_create(&self, obj: &mut Value) {
        default_at(obj, &["preemptionPolicy"], json!("PreemptLowerPriority"));
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.prepare_for_create(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let name = at(obj, &["metadata", "name"])
            .and_then(Value::as_str)
            .unwrap_or_default();
        let value = value_of(obj);
        if name.starts_with(SYSTEM_PRIORITY_CLASS_PREFIX) {
            let global_default = obj.get("globalDefault").and_then(Value::as_bool) == Some(true);
            if let Some(problem) = system_class_problem(name, value, global_default) {
                causes.push(Cause::forbidden(
                    "metadata.name",
                    &format!("priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system use only. error: {problem}"),
                ));
            }
        } else if value > HIGHEST_USER_DEFINABLE_PRIORITY {
            causes.push(Cause::forbidden(
                "value",
                &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"),
            ));
        }
        if let Some(policy) = obj.get("preemptionPolicy").and_then(Value::as_str) {
            if !PREEMPTION_POLICIES.contains(&policy) {
                causes.push(Cause::not_supported(
                    "preemptionPolicy",
                    policy,
                    PREEMPTION_POLICIES,
                ));
            }
        }
        causes
    }

    /// Upstream validates an update against the old object only: the value and the
    /// preemption policy never change.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        if value_of(new) != value_of(old) {
            causes.push(Cause::forbidden(
                "value",
                "may not be changed in an update.",
            ));
        }
        let policy = |o: &Value| o.get("preemptionPolicy").cloned().unwrap_or(Value::Null);
        if policy(new) != policy(old) {
            let shown = match policy(new) {
                Value::String(s) => format!("\"{s}\""),
                _ => "null".to_string(),
            };
            causes.push(Cause::invalid(
                "preemptionPolicy",
                shown,
                "field is immutable",
            ));
        }
        causes
    }
}
