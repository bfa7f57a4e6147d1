//! Jobs (batch/v1 SetDefaults_Job, ValidateJob, jobStrategy): defaults, the selector the
//! server generates from the Job's UID, the spec rules shared with CronJobs' job templates,
//! and what an update may change (the template only while suspended and never started).

use serde_json::{json, Map, Value};

use super::job_policies::{validate_pod_failure_policy, validate_success_policy};
use super::status;
use super::template::{
    convert_selector, default_template, nonnegative, same_selector, selector_matches,
    template_labels, validate_template,
};
use crate::error::Cause;
use crate::go_fmt;
use crate::object;
use crate::strategy::{at, at_mut, default_at, Strategy};
use crate::validation::{is_dns1123_label, quote};

pub struct JobStrategy;

pub(super) const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
pub(super) const JOB_NAME: &str = "batch.kubernetes.io/job-name";
const LEGACY_CONTROLLER_UID: &str = "controller-uid";
const LEGACY_JOB_NAME: &str = "job-name";
/// Upstream caps an Indexed Job's parallelism so its status stays small.
const MAX_INDEXED_PARALLELISM: i64 = 100_000;

fn defaults(obj: &mut Value) {
    let spec_has = |obj: &Value, f: &str| at(obj, &["spec", f]).is_some_and(|v| !v.is_null());
    if !spec_has(obj, "completions") && !spec_has(obj, "parallelism") {
        default_at(obj, &["spec", "completions"], json!(1));
    }
    default_at(obj, &["spec", "parallelism"], json!(1));
    // With a per-index limit the global one is effectively off.
    let backoff = if spec_has(obj, "backoffLimitPerIndex") {
        i64::from(i32::MAX)
    } else {
        6
    };
    default_at(obj, &["spec", "backoffLimit"], json!(backoff));
    if let Some(labels) = template_labels(obj, &["spec", "template"]).cloned() {
        if at(obj, &["metadata", "labels"])
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
        {
            object::meta_mut(obj).insert("labels".into(), labels);
        }
    }
    default_at(obj, &["spec", "completionMode"], json!("NonIndexed"));
    default_at(obj, &["spec", "suspend"], json!(false));
    let replacement = if spec_has(obj, "podFailurePolicy") {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    default_at(obj, &["spec", "podReplacementPolicy"], json!(replacement));
    default_at(obj, &["spec", "manualSelector"], json!(false));
    default_template(obj, &["spec", "template"]);
}

/// generateSelector: pods are labelled with the Job's name and UID, and selected by the UID.
/// Labels the user set already are left for validation to judge.
fn generate_selector(obj: &mut Value) {
    let name = object::name(obj).to_string();
    let uid = object::uid(obj).to_string();
    if let Some(template) = at_mut(obj, &["spec", "template"]).filter(|t| t.is_object()) {
        for (key, value) in [
            (LEGACY_JOB_NAME, &name),
            (JOB_NAME, &name),
            (LEGACY_CONTROLLER_UID, &uid),
            (CONTROLLER_UID, &uid),
        ] {
            default_at(template, &["metadata", "labels", key], json!(value));
        }
    }
    default_at(
        obj,
        &["spec", "selector", "matchLabels", CONTROLLER_UID],
        json!(uid),
    );
}

/// validateGeneratedSelector: a generated selector and the template's labels must be the
/// ones generation makes.
fn validate_generated_selector(obj: &Value, prefixed: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let manual = at(obj, &["spec", "manualSelector"]) == Some(&Value::Bool(true));
    let Some(selector) = at(obj, &["spec", "selector"]).filter(|s| !s.is_null() && !manual) else {
        return causes;
    };
    let (name, uid) = (object::name(obj), object::uid(obj));
    if uid.is_empty() {
        causes.push(Cause::required("metadata.uid"));
    }
    let labels = template_labels(obj, &["spec", "template"]);
    let mut expected = vec![(LEGACY_CONTROLLER_UID, uid), (LEGACY_JOB_NAME, name)];
    if prefixed {
        expected.extend([(CONTROLLER_UID, uid), (JOB_NAME, name)]);
    }
    for (key, want) in &expected {
        let field = format!("spec.template.metadata.labels[{key}]");
        match labels.and_then(|l| l.get(*key)).and_then(Value::as_str) {
            None => causes.push(Cause::new(
                "FieldValueRequired",
                &field,
                format!("Required value: {want}"),
            )),
            Some(got) if got != *want => causes.push(Cause::invalid(
                &field,
                go_fmt::string_map(labels),
                &format!("must be '{want}'"),
            )),
            Some(_) => {}
        }
    }
    let expected_labels: Map<String, Value> = expected
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    if let Ok(sel) = crate::selector::LabelSelector::from_label_selector_json(selector) {
        if !sel.matches_labels(&Value::Object(expected_labels)) {
            causes.push(Cause::invalid(
                "spec.selector",
                go_fmt::label_selector(selector),
                "`selector` not auto-generated",
            ));
        }
    }
    causes
}

/// validateJobSpec: the rules of a JobSpec at `field` (`spec`, or a CronJob's
/// `spec.jobTemplate.spec`), selector aside.
pub(super) fn validate_job_spec(spec: Option<&Value>, field: &str) -> Vec<Cause> {
    let empty = json!({});
    let spec = spec.unwrap_or(&empty);
    let wrapped = json!({ "s": spec });
    let mut causes = Vec::new();
    for f in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        let mut found = Vec::new();
        nonnegative(&wrapped, &["s", f], &mut found);
        for mut c in found {
            c.field = format!("{field}.{f}");
            causes.push(c);
        }
    }
    let int = |f: &str| spec.get(f).and_then(Value::as_i64);
    if int("maxFailedIndexes").is_some() && int("backoffLimitPerIndex").is_none() {
        causes.push(Cause::new(
            "FieldValueRequired",
            &format!("{field}.backoffLimitPerIndex"),
            "Required value: when maxFailedIndexes is specified".into(),
        ));
    }
    let mode = spec.get("completionMode").and_then(Value::as_str);
    match mode {
        None | Some("NonIndexed") => {
            for f in ["backoffLimitPerIndex", "maxFailedIndexes"] {
                if let Some(n) = int(f) {
                    causes.push(Cause::invalid(
                        &format!("{field}.{f}"),
                        n,
                        "requires indexed completion mode",
                    ));
                }
            }
        }
        Some("Indexed") => {
            if int("completions").is_none() {
                causes.push(Cause::new(
                    "FieldValueRequired",
                    &format!("{field}.completions"),
                    "Required value: when completion mode is Indexed".into(),
                ));
            }
            if let Some(p) = int("parallelism").filter(|p| *p > MAX_INDEXED_PARALLELISM) {
                causes.push(Cause::invalid(
                    &format!("{field}.parallelism"),
                    p,
                    &format!("must be less than or equal to {MAX_INDEXED_PARALLELISM} when completion mode is Indexed"),
                ));
            }
        }
        Some(other) => causes.push(Cause::not_supported(
            &format!("{field}.completionMode"),
            other,
            &["NonIndexed", "Indexed"],
        )),
    }
    let has_failure_policy = spec.get("podFailurePolicy").is_some_and(|p| !p.is_null());
    if has_failure_policy {
        causes.extend(validate_pod_failure_policy(
            spec,
            &format!("{field}.podFailurePolicy"),
        ));
    }
    if spec.get("successPolicy").is_some_and(|p| !p.is_null()) {
        causes.extend(validate_success_policy(
            spec,
            &format!("{field}.successPolicy"),
        ));
    }
    if let Some(policy) = spec.get("podReplacementPolicy").and_then(Value::as_str) {
        if has_failure_policy && policy != "Failed" {
            causes.push(Cause::not_supported(
                &format!("{field}.podReplacementPolicy"),
                policy,
                &["Failed"],
            ));
        } else if !matches!(policy, "Failed" | "TerminatingOrFailed") {
            causes.push(Cause::not_supported(
                &format!("{field}.podReplacementPolicy"),
                policy,
                &["Failed", "TerminatingOrFailed"],
            ));
        }
    }
    let template = spec.get("template");
    causes.extend(validate_template(template, &format!("{field}.template")));
    let restart_field = format!("{field}.template.spec.restartPolicy");
    let policy = template
        .and_then(|t| t.get("spec"))
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    match policy {
        // A pod template's restartPolicy defaults to Always, which a Job cannot use.
        "" | "Always" => causes.push(Cause::new(
            "FieldValueRequired",
            &restart_field,
            r#"Required value: valid values: "OnFailure", "Never""#.into(),
        )),
        "OnFailure" if has_failure_policy => causes.push(Cause::invalid(
            &restart_field,
            quote("OnFailure"),
            r#"only "Never" is supported when podFailurePolicy is specified"#,
        )),
        "OnFailure" | "Never" => {}
        other => causes.push(Cause::not_supported(
            &restart_field,
            other,
            &["OnFailure", "Never"],
        )),
    }
    causes
}

fn validate_job(obj: &Value, prefixed: bool) -> Vec<Cause> {
    let mut causes = validate_generated_selector(obj, prefixed);
    let spec = obj.get("spec");
    causes.extend(validate_job_spec(spec, "spec"));
    match at(obj, &["spec", "selector"]).filter(|s| !s.is_null()) {
        None => causes.push(Cause::required("spec.selector")),
        Some(selector) => match convert_selector(selector, "spec.selector", "") {
            Err(found) => causes.extend(found.into_iter().take(1)),
            Ok(sel) => {
                let labels = template_labels(obj, &["spec", "template"]);
                causes.extend(selector_matches(&sel, labels, "spec.template"));
            }
        },
    }
    let indexed = at(obj, &["spec", "completionMode"]).and_then(Value::as_str) == Some("Indexed");
    if let Some(completions) = at(obj, &["spec", "completions"]).and_then(Value::as_i64) {
        let hostname = format!("{}-{}", object::name(obj), completions - 1);
        if indexed && completions > 0 && !is_dns1123_label(&hostname).is_empty() {
            causes.push(Cause::invalid(
                "metadata.name",
                quote(object::name(obj)),
                &format!("will not able to create pod with invalid DNS label: {hostname}"),
            ));
        }
    }
    causes
}

fn immutable(new: Option<&Value>, old: Option<&Value>, field: &str, causes: &mut Vec<Cause>) {
    if new != old {
        let shown = match new {
            Some(Value::String(s)) => quote(s),
            Some(v) => v.to_string(),
            None => "null".into(),
        };
        causes.push(Cause::invalid(field, shown, "field is immutable"));
    }
}

/// The template as it must stay: a suspended Job that never started may change its
/// scheduling directives (node selector, affinity's nodeAffinity, tolerations, scheduling
/// gates, labels, annotations); any other Job none of it.
fn frozen_template(new: &Value, old: &Value) -> Option<Value> {
    let mut frozen = at(old, &["spec", "template"]).cloned();
    let suspended = at(old, &["spec", "suspend"]) == Some(&Value::Bool(true));
    let started = at(old, &["status", "startTime"]).is_some_and(|t| !t.is_null());
    if let (true, false, Some(frozen)) = (suspended, started, frozen.as_mut()) {
        let mut take = |path: &[&str]| {
            let mut full = vec!["spec", "template"];
            full.extend_from_slice(path);
            let wanted = at(new, &full).cloned();
            let Some((last, parent)) = path.split_last() else {
                return;
            };
            if let Some(map) = at_mut(frozen, parent).and_then(Value::as_object_mut) {
                match wanted {
                    Some(v) => map.insert(last.to_string(), v),
                    None => map.remove(*last),
                };
            }
        };
        for path in [
            &["spec", "nodeSelector"][..],
            &["spec", "tolerations"],
            &["spec", "schedulingGates"],
            &["metadata", "labels"],
            &["metadata", "annotations"],
            &["spec", "affinity", "nodeAffinity"],
        ] {
            take(path);
        }
    }
    frozen
}

fn validate_job_update(new: &Value, old: &Value) -> Vec<Cause> {
    let had = |key: &str| {
        template_labels(old, &["spec", "template"]).is_some_and(|l| l.get(key).is_some())
    };
    let mut causes = validate_job(new, had(JOB_NAME) && had(CONTROLLER_UID));
    let spec = |o: &Value, f: &str| at(o, &["spec", f]).filter(|v| !v.is_null()).cloned();
    let indexed = spec(new, "completionMode").as_ref().and_then(Value::as_str) == Some("Indexed");
    let (completions, old_completions) = (spec(new, "completions"), spec(old, "completions"));
    if !indexed {
        immutable(
            completions.as_ref(),
            old_completions.as_ref(),
            "spec.completions",
            &mut causes,
        );
    } else if completions != old_completions {
        if let Some(c) = completions
            .as_ref()
            .filter(|c| Some(*c) != spec(new, "parallelism").as_ref())
        {
            causes.push(Cause::invalid(
                "spec.completions",
                c,
                "can only be modified in tandem with spec.parallelism",
            ));
        }
    }
    let (sel, old_sel) = (spec(new, "selector"), spec(old, "selector"));
    if !same_selector(sel.as_ref(), old_sel.as_ref()) {
        causes.push(Cause::invalid(
            "spec.selector",
            go_fmt::label_selector(sel.as_ref().unwrap_or(&Value::Null)),
            "field is immutable",
        ));
    }
    let template = at(new, &["spec", "template"]);
    if template != frozen_template(new, old).as_ref() {
        immutable(template, None, "spec.template", &mut causes);
    }
    for f in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        immutable(
            spec(new, f).as_ref(),
            spec(old, f).as_ref(),
            &format!("spec.{f}"),
            &mut causes,
        );
    }
    causes
}

impl Strategy for JobStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        defaults(obj);
        if at(obj, &["spec", "manualSelector"]) != Some(&Value::Bool(true)) {
            generate_selector(obj);
        }
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        defaults(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        validate_job(obj, true)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        validate_job_update(new, old)
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<Cause> {
        status::nonnegative_counts(
            new,
            &["active", "succeeded", "failed", "ready", "terminating"],
        )
    }
}
