//! DaemonSets (apps/v1 SetDefaults_DaemonSet, ValidateDaemonSet, daemonSetStrategy). The
//! template generation lives, as in apps/v1 upstream, in the
//! `deprecated.daemonset.template.generation` annotation, which the DaemonSet controller
//! copies to its pods' `pod-template-generation` label.

use crate::types::UpdateStrategyType;
use serde_json::{json, Value};

use super::status;
use super::template::{
    at_most_100_percent, convert_selector, default_template, int_or_percent, int_or_percent_value,
    long_running, nonnegative, selector_matches, selector_unchanged, template_labels,
    validate_template,
};
use crate::error::Cause;
use crate::go_fmt;
use crate::object;
use crate::selector::labels::LabelSelector;
use crate::strategy::{at, default_at, Strategy};

pub struct DaemonSetStrategy;

const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

fn defaults(obj: &mut Value) {
    default_at(
        obj,
        &["spec", "updateStrategy", "type"],
        json!("RollingUpdate"),
    );
    if at(obj, &["spec", "updateStrategy", "type"]).and_then(Value::as_str) == Some("RollingUpdate")
    {
        let rolling = ["spec", "updateStrategy", "rollingUpdate"];
        default_at(obj, &[&rolling[..], &["maxUnavailable"]].concat(), json!(1));
        default_at(obj, &[&rolling[..], &["maxSurge"]].concat(), json!(0));
    }
    default_at(obj, &["spec", "revisionHistoryLimit"], json!(10));
    default_template(obj, &["spec", "template"]);
}

fn template_generation(obj: &Value) -> i64 {
    at(obj, &["metadata", "annotations", TEMPLATE_GENERATION])
        .and_then(Value::as_str)
        .and_then(|g| g.parse().ok())
        .unwrap_or(0)
}

fn set_template_generation(obj: &mut Value, generation: i64) {
    let meta = object::meta_mut(obj);
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    if let Some(map) = annotations.as_object_mut() {
        map.insert(TEMPLATE_GENERATION.into(), json!(generation.to_string()));
    }
}

fn validate_update_strategy(obj: &Value, causes: &mut Vec<Cause>) {
    let strategy = at(obj, &["spec", "updateStrategy"]);
    let kind = strategy.and_then(|s| s.get("type")).and_then(Value::as_str);
    match kind.map(str::parse::<UpdateStrategyType>) {
        Some(Ok(UpdateStrategyType::OnDelete)) => {}
        Some(Ok(UpdateStrategyType::RollingUpdate)) => {
            let Some(rolling) = strategy
                .and_then(|s| s.get("rollingUpdate"))
                .filter(|r| !r.is_null())
            else {
                causes.push(Cause::required("spec.updateStrategy.rollingUpdate"));
                return;
            };
            let field = "spec.updateStrategy.rollingUpdate";
            let zero = json!(0);
            let unavailable = rolling.get("maxUnavailable").unwrap_or(&zero);
            let surge = rolling.get("maxSurge").unwrap_or(&zero);
            let (unavailable_field, surge_field) = (
                format!("{field}.maxUnavailable"),
                format!("{field}.maxSurge"),
            );
            causes.extend(int_or_percent(unavailable, &unavailable_field));
            causes.extend(int_or_percent(surge, &surge_field));
            causes.extend(at_most_100_percent(unavailable, &unavailable_field));
            causes.extend(at_most_100_percent(surge, &surge_field));
            match (
                int_or_percent_value(unavailable) != 0,
                int_or_percent_value(surge) != 0,
            ) {
                (true, true) => causes.push(Cause::invalid(
                    &format!("{field}.maxSurge"),
                    go_fmt::int_or_string(surge),
                    "may not be set when maxUnavailable is non-zero",
                )),
                (false, false) => causes.push(Cause::new(
                    "FieldValueRequired",
                    &format!("{field}.maxUnavailable"),
                    "Required value: cannot be 0 when maxSurge is 0".into(),
                )),
                _ => {}
            }
        }
        _ => causes.push(Cause::not_supported(
            "spec.updateStrategy",
            kind.unwrap_or_default(),
            &["RollingUpdate", "OnDelete"],
        )),
    }
}

fn validate_spec(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let selector = at(obj, &["spec", "selector"]).filter(|s| !s.is_null());
    let converted = match selector {
        None => Ok(LabelSelector::nothing()),
        Some(s) => convert_selector(s, "spec.selector", ""),
    };
    match converted {
        Err(found) => causes.extend(found),
        Ok(sel) => {
            let labels = template_labels(obj, &["spec", "template"]);
            causes.extend(selector_matches(&sel, labels, "spec.template"));
            if sel.is_empty() {
                causes.push(Cause::invalid(
                    "spec.selector",
                    go_fmt::label_selector(selector.unwrap_or(&Value::Null)),
                    "empty selector is invalid for daemonset",
                ));
            }
        }
    }
    let template = at(obj, &["spec", "template"]);
    causes.extend(validate_template(template, "spec.template"));
    causes.extend(long_running(template, "spec.template", "DaemonSet"));
    nonnegative(obj, &["spec", "minReadySeconds"], &mut causes);
    validate_update_strategy(obj, &mut causes);
    nonnegative(obj, &["spec", "revisionHistoryLimit"], &mut causes);
    causes
}

impl Strategy for DaemonSetStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        defaults(obj);
        let generation = template_generation(obj).max(1);
        set_template_generation(obj, generation);
    }

    /// A template change starts a new template generation; otherwise it stays as stored.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        defaults(new);
        let before = template_generation(old);
        let changed = at(new, &["spec", "template"]) != at(old, &["spec", "template"]);
        set_template_generation(new, if changed { before + 1 } else { before });
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        validate_spec(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = validate_spec(new);
        causes.extend(selector_unchanged(new, old));
        causes
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = status::nonnegative_counts(
            new,
            &[
                "currentNumberScheduled",
                "numberMisscheduled",
                "desiredNumberScheduled",
                "numberReady",
                "observedGeneration",
                "updatedNumberScheduled",
                "numberAvailable",
                "numberUnavailable",
                "collisionCount",
            ],
        );
        status::collision_count_kept(new, old, &mut causes);
        causes
    }
}
