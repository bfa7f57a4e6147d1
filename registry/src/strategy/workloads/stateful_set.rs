//! StatefulSets (apps/v1 SetDefaults_StatefulSet, ValidateStatefulSet, statefulSetStrategy).
//! `serviceName` is optional, as upstream has made it.

use crate::types::UpdateStrategyType;
use serde_json::{json, Value};

use super::status;
use super::template::{
    apps_selector, at_most_100_percent, default_template, int_or_percent, int_or_percent_value,
    long_running, nonnegative, template_metadata,
};
use crate::error::Cause;
use crate::go_fmt;
use crate::strategy::{at, default_at, Strategy};

pub struct StatefulSetStrategy;

fn defaults(obj: &mut Value) {
    default_at(obj, &["spec", "podManagementPolicy"], json!("OrderedReady"));
    if at(obj, &["spec", "updateStrategy", "type"]).is_none_or(Value::is_null) {
        default_at(
            obj,
            &["spec", "updateStrategy", "type"],
            json!("RollingUpdate"),
        );
        default_at(obj, &["spec", "updateStrategy", "rollingUpdate"], json!({}));
    }
    let rolling = at(obj, &["spec", "updateStrategy", "type"]).and_then(Value::as_str)
        == Some("RollingUpdate")
        && at(obj, &["spec", "updateStrategy", "rollingUpdate"]).is_some_and(Value::is_object);
    if rolling {
        default_at(
            obj,
            &["spec", "updateStrategy", "rollingUpdate", "partition"],
            json!(0),
        );
    }
    for when in ["whenDeleted", "whenScaled"] {
        default_at(
            obj,
            &["spec", "persistentVolumeClaimRetentionPolicy", when],
            json!("Retain"),
        );
    }
    default_at(obj, &["spec", "replicas"], json!(1));
    default_at(obj, &["spec", "revisionHistoryLimit"], json!(10));
    default_template(obj, &["spec", "template"]);
}

fn validate_update_strategy(obj: &Value, causes: &mut Vec<Cause>) {
    let strategy = at(obj, &["spec", "updateStrategy"]);
    let rolling = strategy
        .and_then(|s| s.get("rollingUpdate"))
        .filter(|r| !r.is_null());
    let kind = strategy.and_then(|s| s.get("type")).and_then(Value::as_str);
    match kind
        .filter(|k| !k.is_empty())
        .map(|k| (k, k.parse::<UpdateStrategyType>()))
    {
        None => causes.push(Cause::required("spec.updateStrategy")),
        Some((_, Ok(UpdateStrategyType::OnDelete))) => {
            if let Some(r) = rolling {
                causes.push(Cause::invalid(
                    "spec.updateStrategy.rollingUpdate",
                    r,
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        Some((_, Ok(UpdateStrategyType::RollingUpdate))) => {
            if rolling.is_some() {
                nonnegative(
                    obj,
                    &["spec", "updateStrategy", "rollingUpdate", "partition"],
                    causes,
                );
                let field = "spec.updateStrategy.rollingUpdate.maxUnavailable";
                if let Some(max) = rolling
                    .and_then(|r| r.get("maxUnavailable"))
                    .filter(|m| !m.is_null())
                {
                    causes.extend(int_or_percent(max, field));
                    if int_or_percent_value(max) == 0 {
                        causes.push(Cause::invalid(
                            field,
                            go_fmt::int_or_string(max),
                            "cannot be 0",
                        ));
                    }
                    causes.extend(at_most_100_percent(max, field));
                }
            }
        }
        Some((other, Err(_))) => causes.push(Cause::invalid(
            "spec.updateStrategy",
            crate::validation::quote(other),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
}

fn validate_spec(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    match at(obj, &["spec", "podManagementPolicy"]).and_then(Value::as_str) {
        None | Some("") => causes.push(Cause::required("spec.podManagementPolicy")),
        Some("OrderedReady" | "Parallel") => {}
        Some(other) => causes.push(Cause::invalid(
            "spec.podManagementPolicy",
            crate::validation::quote(other),
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    validate_update_strategy(obj, &mut causes);
    for when in ["whenDeleted", "whenScaled"] {
        let path = ["spec", "persistentVolumeClaimRetentionPolicy", when];
        if let Some(policy) = at(obj, &path).and_then(Value::as_str) {
            if !matches!(policy, "Retain" | "Delete") {
                causes.push(Cause::not_supported(
                    &path.join("."),
                    policy,
                    &["Retain", "Delete"],
                ));
            }
        }
    }
    nonnegative(obj, &["spec", "replicas"], &mut causes);
    nonnegative(obj, &["spec", "minReadySeconds"], &mut causes);
    if let Some(start) = at(obj, &["spec", "ordinals", "start"]).and_then(Value::as_i64) {
        if start < 0 {
            causes.push(Cause::invalid(
                "spec.ordinals.start",
                start,
                "must be greater than or equal to 0",
            ));
        }
    }
    causes.extend(apps_selector(obj, "statefulset", ""));
    let template = at(obj, &["spec", "template"]);
    causes.extend(template_metadata(template, "spec.template"));
    causes.extend(long_running(template, "spec.template", "StatefulSet"));
    causes
}

/// The spec with the fields upstream lets an update change taken out.
fn frozen_part(obj: &Value) -> Value {
    let mut spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    if let Some(map) = spec.as_object_mut() {
        for field in [
            "replicas",
            "ordinals",
            "template",
            "updateStrategy",
            "persistentVolumeClaimRetentionPolicy",
            "minReadySeconds",
        ] {
            map.remove(field);
        }
    }
    spec
}

impl Strategy for StatefulSetStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        defaults(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        defaults(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        validate_spec(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = validate_spec(new);
        if frozen_part(new) != frozen_part(old) {
            causes.push(Cause::forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ));
        }
        causes
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let counts = [
            "replicas",
            "readyReplicas",
            "currentReplicas",
            "updatedReplicas",
            "availableReplicas",
            "observedGeneration",
            "collisionCount",
        ];
        let mut causes = status::nonnegative_counts(new, &counts);
        for part in [
            "readyReplicas",
            "currentReplicas",
            "updatedReplicas",
            "availableReplicas",
        ] {
            status::at_most(new, part, "replicas", &mut causes);
        }
        status::at_most(new, "availableReplicas", "readyReplicas", &mut causes);
        status::collision_count_kept(new, old, &mut causes);
        causes
    }
}
