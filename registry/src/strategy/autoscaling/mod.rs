//! HorizontalPodAutoscalers (autoscaling/v2 and autoscaling/v1; upstream's
//! pkg/registry/autoscaling and pkg/apis/autoscaling): one storage in the v2 shape, served in
//! both versions through `v1::V1`, defaulted and validated as v2.

#[cfg(test)]
mod tests;
pub mod v1;
mod validation;

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::catalogue::ResourceInfo;
use crate::error::Cause;
use crate::strategy::conversion::Conversion;
use crate::strategy::Strategy;

/// The CPU utilization an autoscaler without metrics aims at (DefaultCPUUtilization).
pub const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// The served version a Store of autoscalers speaks.
pub struct HorizontalPodAutoscalerStrategy {
    pub v1: bool,
}

fn scale_up_defaults() -> Value {
    json!({
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ],
    })
}

fn scale_down_defaults() -> Value {
    json!({
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    })
}

/// The rules given, their unset parts taken from `defaults` (upstream's copyHPAScalingRules).
fn filled(given: Option<&Value>, mut defaults: Value) -> Value {
    if let (Some(Value::Object(given)), Value::Object(out)) = (given, &mut defaults) {
        for (key, value) in given.iter().filter(|(_, v)| !v.is_null()) {
            out.insert(key.clone(), value.clone());
        }
    }
    defaults
}

/// autoscaling/v2's defaults (SetDefaults_HorizontalPodAutoscaler): one replica at least, a
/// CPU utilization target when no metric is named, and a behavior given completed.
pub fn set_v2_defaults(hpa: &mut Value) {
    let Some(spec) = hpa.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("minReplicas").is_none_or(Value::is_null) {
        spec.insert("minReplicas".into(), json!(1));
    }
    let no_metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_metrics {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION,
            }}}]),
        );
    }
    if let Some(behavior) = spec.get_mut("behavior").and_then(Value::as_object_mut) {
        let up = filled(behavior.get("scaleUp"), scale_up_defaults());
        let down = filled(behavior.get("scaleDown"), scale_down_defaults());
        behavior.insert("scaleUp".into(), up);
        behavior.insert("scaleDown".into(), down);
    }
}

/// The object in the v2 shape, defaulted as v2 defaults it.
fn as_v2(obj: &Value, served_v1: bool) -> Value {
    let mut v2 = if served_v1 {
        v1::to_v2(obj)
    } else {
        obj.clone()
    };
    set_v2_defaults(&mut v2);
    v2
}

impl HorizontalPodAutoscalerStrategy {
    fn defaults(&self, obj: &mut Value) {
        if self.v1 {
            // v1's SetDefaults_HorizontalPodAutoscaler.
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                if spec.get("minReplicas").is_none_or(Value::is_null) {
                    spec.insert("minReplicas".into(), json!(1));
                }
            }
        } else {
            set_v2_defaults(obj);
        }
    }
}

impl Strategy for HorizontalPodAutoscalerStrategy {
    /// A new autoscaler has not run: its replica counts are zero.
    fn prepare_for_create(&self, obj: &mut Value) {
        self.defaults(obj);
        if let Some(map) = obj.as_object_mut() {
            let mut status = Map::new();
            if self.v1 {
                status.insert("currentReplicas".into(), json!(0));
            }
            status.insert("desiredReplicas".into(), json!(0));
            map.insert("status".into(), Value::Object(status));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.defaults(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let v2 = as_v2(obj, self.v1);
        validation::spec_causes(&v2["spec"], 1)
    }

    /// minReplicas 0 stays allowed for an object that already has it.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let old_min = as_v2(old, self.v1)["spec"]["minReplicas"].as_i64();
        let lower = if old_min == Some(0) { 0 } else { 1 };
        validation::spec_causes(&as_v2(new, self.v1)["spec"], lower)
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        for field in ["currentReplicas", "desiredReplicas"] {
            if let Some(n) = new["status"][field].as_i64().filter(|n| *n < 0) {
                causes.push(Cause::invalid(
                    &format!("status.{field}"),
                    n,
                    "must be greater than or equal to 0",
                ));
            }
        }
        causes
    }

    fn conversion(&self, _info: &ResourceInfo) -> Option<Arc<dyn Conversion>> {
        self.v1.then(|| Arc::new(v1::V1) as Arc<dyn Conversion>)
    }
}

/// An autoscaler of either version in the v2 shape (what tables print from).
pub fn in_v2_shape(obj: &Value) -> Value {
    let served_v1 = obj["apiVersion"] == "autoscaling/v1";
    as_v2(obj, served_v1)
}
