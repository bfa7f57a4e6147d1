//! LimitRanges (core/v1; upstream's SetDefaults_LimitRangeItem and limitrange strategy): a
//! Container limit's default limits fall back to its max, its default requests to its default
//! limits, then to its min; a PUT may create one.

use serde_json::{Map, Value};

use crate::strategy::Strategy;

pub struct LimitRangeStrategy;

/// Sets every key of `from` missing in `into`.
fn fill(into: &mut Map<String, Value>, from: Option<&Value>) {
    for (key, value) in from.and_then(Value::as_object).into_iter().flatten() {
        into.entry(key.clone()).or_insert_with(|| value.clone());
    }
}

fn set_defaults(range: &mut Value) {
    let Some(limits) = range
        .pointer_mut("/spec/limits")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for item in limits.iter_mut().filter(|l| l["type"] == "Container") {
        let mut default = item["default"].as_object().cloned().unwrap_or_default();
        fill(&mut default, item.get("max"));
        let mut request = item["defaultRequest"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        fill(&mut request, Some(&Value::Object(default.clone())));
        fill(&mut request, item.get("min"));
        item["default"] = Value::Object(default);
        item["defaultRequest"] = Value::Object(request);
    }
}

impl Strategy for LimitRangeStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        set_defaults(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        set_defaults(new);
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn container_defaults_fall_back_to_max_then_default_then_min() {
        let mut range = json!({"spec": {"limits": [
            {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"ephemeral-storage": "1Gi"},
             "default": {"memory": "512Mi"}},
            {"type": "Pod", "max": {"cpu": "4"}},
        ]}});
        set_defaults(&mut range);
        let container = &range["spec"]["limits"][0];
        assert_eq!(container["default"], json!({"cpu": "2", "memory": "512Mi"}));
        assert_eq!(
            container["defaultRequest"],
            json!({"cpu": "2", "memory": "512Mi", "ephemeral-storage": "1Gi"})
        );
        assert!(range["spec"]["limits"][1].get("default").is_none());
    }
}
