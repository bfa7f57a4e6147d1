//! Status conditions of definitions, as upstream's SetCRDCondition keeps them.

use serde_json::{json, Value};

/// Sets a condition in a status's list, keeping lastTransitionTime when the status is
/// unchanged (upstream's SetCRDCondition).
pub fn set_condition(status: &mut Value, kind: &str, state: &str, reason: &str, message: &str) {
    let Some(map) = status.as_object_mut() else {
        return;
    };
    let conditions = map.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let now = registry::object::now();
    match list.iter_mut().find(|c| c["type"] == kind) {
        Some(existing) => {
            if existing["status"] != state {
                existing["lastTransitionTime"] = json!(now);
            }
            existing["status"] = json!(state);
            existing["reason"] = json!(reason);
            existing["message"] = json!(message);
        }
        None => list.push(json!({
            "type": kind,
            "status": state,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn condition_transition_time_moves_only_on_change() {
        let mut status = json!({});
        set_condition(&mut status, "Established", "False", "Installing", "");
        status["conditions"][0]["lastTransitionTime"] = json!("then");
        set_condition(&mut status, "Established", "False", "Installing", "x");
        assert_eq!(status["conditions"][0]["lastTransitionTime"], "then");
        set_condition(
            &mut status,
            "Established",
            "True",
            "InitialNamesAccepted",
            "",
        );
        assert_ne!(status["conditions"][0]["lastTransitionTime"], "then");
        assert_eq!(status["conditions"].as_array().map(Vec::len), Some(1));
    }
}
