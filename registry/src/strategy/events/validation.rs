//! Upstream's event validation (pkg/apis/core/validation/events.go), on the core shape with
//! upstream's field paths (the internal type's names, whichever API wrote the event). Every
//! event passes the legacy rules; events.k8s.io/v1 writes also the strict ones.

use serde_json::Value;

use crate::error::Cause;
use crate::object;
use crate::strategy::at;
use crate::validation::names::is_qualified_name;
use crate::validation::quote;

const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

fn text<'a>(event: &'a Value, path: &[&str]) -> &'a str {
    at(event, path).and_then(Value::as_str).unwrap_or("")
}

/// Whether a time field is set (a zero time is written as null, or left out).
fn is_set(event: &Value, path: &[&str]) -> bool {
    at(event, path).is_some_and(|v| !v.is_null() && v.as_str() != Some(""))
}

fn too_long(field: &str, value: &str, limit: usize) -> Option<Cause> {
    (value.len() > limit).then(|| {
        Cause::invalid(
            field,
            "\"\"",
            &format!("can have at most {limit} characters"),
        )
    })
}

fn mismatched_namespace(involved: &str) -> Cause {
    Cause::invalid(
        "involvedObject.namespace",
        quote(involved),
        "does not match event.namespace",
    )
}

/// Rules every event meets, whichever API wrote it.
pub fn legacy(event: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let namespace = object::namespace(event);
    let involved = text(event, &["involvedObject", "namespace"]);
    if !is_set(event, &["eventTime"]) {
        // An old-style event: its namespace and its object's agree ("default" stands for none).
        let agrees = match involved {
            "" => namespace.is_empty() || namespace == "default",
            ns => ns == namespace,
        };
        if !agrees {
            causes.push(mismatched_namespace(involved));
        }
        return causes;
    }
    if involved.is_empty() && namespace != "default" && namespace != "kube-system" {
        causes.push(mismatched_namespace(involved));
    }
    let controller = text(event, &["reportingComponent"]);
    if controller.is_empty() {
        causes.push(Cause::required("reportingController"));
    }
    for message in is_qualified_name(controller) {
        causes.push(Cause::invalid(
            "reportingController",
            quote(controller),
            &message,
        ));
    }
    let instance = text(event, &["reportingInstance"]);
    if instance.is_empty() {
        causes.push(Cause::required("reportingInstance"));
    }
    causes.extend(too_long(
        "reportingInstance",
        instance,
        REPORTING_INSTANCE_LIMIT,
    ));
    let action = text(event, &["action"]);
    if action.is_empty() {
        causes.push(Cause::required("action"));
    }
    causes.extend(too_long("action", action, ACTION_LIMIT));
    let reason = text(event, &["reason"]);
    if reason.is_empty() {
        causes.push(Cause::required("reason"));
    }
    causes.extend(too_long("reason", reason, REASON_LIMIT));
    causes.extend(too_long("message", text(event, &["message"]), NOTE_LIMIT));
    causes
}

fn series(event: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(series) = at(event, &["series"]).filter(|s| !s.is_null()) else {
        return causes;
    };
    if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        causes.push(Cause::invalid(
            "series.count",
            "\"\"",
            "should be at least 2",
        ));
    }
    if !is_set(series, &["lastObservedTime"]) {
        causes.push(Cause::required("series.lastObservedTime"));
    }
    causes
}

/// Creates through events.k8s.io/v1: a new-style event, with none of the deprecated fields.
pub fn strict_create(event: &Value) -> Vec<Cause> {
    let mut causes = series(event);
    if !is_set(event, &["eventTime"]) {
        causes.push(Cause::required("eventTime"));
    }
    let kind = text(event, &["type"]);
    if kind != "Normal" && kind != "Warning" {
        causes.push(Cause::invalid(
            "type",
            "\"\"",
            &format!("has invalid value: {kind}"),
        ));
    }
    for field in ["firstTimestamp", "lastTimestamp"] {
        if is_set(event, &[field]) {
            causes.push(Cause::invalid(field, "\"\"", "needs to be unset"));
        }
    }
    if at(event, &["count"]).and_then(Value::as_i64).unwrap_or(0) != 0 {
        causes.push(Cause::invalid("count", "\"\"", "needs to be unset"));
    }
    if !text(event, &["source", "component"]).is_empty()
        || !text(event, &["source", "host"]).is_empty()
    {
        causes.push(Cause::invalid("source", "\"\"", "needs to be unset"));
    }
    causes
}

/// Updates through events.k8s.io/v1: only the series (and metadata) may change.
pub fn strict_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if at(new, &["series"]) != at(old, &["series"]) {
        causes.extend(series(new));
    }
    // Upstream's paths, with the core names where they differ from the internal ones.
    const IMMUTABLE: [(&str, &str); 13] = [
        ("involvedObject", "involvedObject"),
        ("reason", "reason"),
        ("message", "message"),
        ("source", "source"),
        ("firstTimestamp", "firstTimestamp"),
        ("lastTimestamp", "lastTimestamp"),
        ("count", "count"),
        ("type", "type"),
        ("eventTime", "eventTime"),
        ("action", "action"),
        ("related", "related"),
        ("reportingComponent", "reportingController"),
        ("reportingInstance", "reportingInstance"),
    ];
    for (field, path) in IMMUTABLE {
        if let Some(changed) = new.get(field).filter(|v| Some(*v) != old.get(field)) {
            causes.push(Cause::invalid(path, changed, "field is immutable"));
        }
    }
    causes
}
