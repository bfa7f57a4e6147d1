//! Deployments (apps/v1 SetDefaults_Deployment, ValidateDeployment, deploymentStrategy).

use crate::types::DeploymentStrategyType;
use serde_json::{json, Value};

use super::status;
use super::template::{
    apps_selector, at_most_100_percent, default_template, int_at, int_or_percent,
    int_or_percent_value, long_running, nonnegative, selector_unchanged, validate_template,
};
use crate::error::Cause;
use crate::go_fmt;
use crate::object;
use crate::strategy::{at, default_at, Strategy};

pub struct DeploymentStrategy;

fn defaults(obj: &mut Value) {
    default_at(obj, &["spec", "replicas"], json!(1));
    default_at(obj, &["spec", "strategy", "type"], json!("RollingUpdate"));
    if at(obj, &["spec", "strategy", "type"]).and_then(Value::as_str) == Some("RollingUpdate") {
        let rolling = ["spec", "strategy", "rollingUpdate"];
        default_at(
            obj,
            &[&rolling[..], &["maxUnavailable"]].concat(),
            json!("25%"),
        );
        default_at(obj, &[&rolling[..], &["maxSurge"]].concat(), json!("25%"));
    }
    default_at(obj, &["spec", "revisionHistoryLimit"], json!(10));
    default_at(obj, &["spec", "progressDeadlineSeconds"], json!(600));
    default_template(obj, &["spec", "template"]);
}

fn validate_strategy(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let strategy = at(obj, &["spec", "strategy"]);
    let rolling = at(obj, &["spec", "strategy", "rollingUpdate"]).filter(|r| !r.is_null());
    let kind = strategy.and_then(|s| s.get("type")).and_then(Value::as_str);
    match kind.map(str::parse::<DeploymentStrategyType>) {
        Some(Ok(DeploymentStrategyType::Recreate)) => {
            if rolling.is_some() {
                causes.push(Cause::forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        Some(Ok(DeploymentStrategyType::RollingUpdate)) => match rolling {
            None => causes.push(Cause::new(
                "FieldValueRequired",
                "spec.strategy.rollingUpdate",
                "Required value: this should be defaulted and never be nil".into(),
            )),
            Some(rolling) => {
                let zero = json!(0);
                let unavailable = rolling.get("maxUnavailable").unwrap_or(&zero);
                let surge = rolling.get("maxSurge").unwrap_or(&zero);
                let field = "spec.strategy.rollingUpdate";
                let unavailable_field = format!("{field}.maxUnavailable");
                causes.extend(int_or_percent(unavailable, &unavailable_field));
                causes.extend(int_or_percent(surge, &format!("{field}.maxSurge")));
                if int_or_percent_value(unavailable) == 0 && int_or_percent_value(surge) == 0 {
                    causes.push(Cause::invalid(
                        &unavailable_field,
                        go_fmt::int_or_string(unavailable),
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
                causes.extend(at_most_100_percent(unavailable, &unavailable_field));
            }
        },
        _ => causes.push(Cause::not_supported(
            "spec.strategy",
            kind.unwrap_or_default(),
            &["Recreate", "RollingUpdate"],
        )),
    }
    causes
}

fn validate_spec(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    nonnegative(obj, &["spec", "replicas"], &mut causes);
    causes.extend(apps_selector(obj, "deployment", "invalid label selector"));
    let template = at(obj, &["spec", "template"]);
    causes.extend(validate_template(template, "spec.template"));
    causes.extend(long_running(template, "spec.template", "ReplicaSet"));
    causes.extend(validate_strategy(obj));
    nonnegative(obj, &["spec", "minReadySeconds"], &mut causes);
    nonnegative(obj, &["spec", "revisionHistoryLimit"], &mut causes);
    if let Some(deadline) = at(obj, &["spec", "progressDeadlineSeconds"]).and_then(Value::as_i64) {
        nonnegative(obj, &["spec", "progressDeadlineSeconds"], &mut causes);
        if deadline <= int_at(obj, &["spec", "minReadySeconds"]) {
            causes.push(Cause::invalid(
                "spec.progressDeadlineSeconds",
                deadline,
                "must be greater than minReadySeconds",
            ));
        }
    }
    causes
}

impl Strategy for DeploymentStrategy {
    fn status_metadata_fields(&self) -> &'static [&'static str] {
        &["annotations"]
    }

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
        causes.extend(selector_unchanged(new, old));
        causes
    }

    /// Annotations count too: the controller copies them to the ReplicaSets it owns.
    fn generation_changes(&self, new: &Value, old: &Value) -> bool {
        let annotations = |o: &Value| {
            at(o, &["metadata", "annotations"])
                .filter(|a| a.as_object().is_some_and(|m| !m.is_empty()))
                .cloned()
        };
        object::spec_part(new) != object::spec_part(old) || annotations(new) != annotations(old)
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = status::replica_counts(
            new,
            &["updatedReplicas", "unavailableReplicas", "collisionCount"],
        );
        status::collision_count_kept(new, old, &mut causes);
        causes
    }
}
