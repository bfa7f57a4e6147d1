//! CronJobs (batch/v1 SetDefaults_CronJob, ValidateCronJobCreate / Update, cronJobStrategy):
//! the schedule through `crate::cron`, the time zone against the IANA database, and the job
//! template under the Job rules.

use serde_json::{json, Value};

use super::job::validate_job_spec;
use super::template::{default_template, nonnegative};
use crate::cron::parse_schedule;
use crate::error::Cause;
use crate::go_fmt;
use crate::object;
use crate::strategy::{at, default_at, Strategy};
use crate::validation::{max_len_error, quote, DNS1035_LABEL_MAX_LENGTH};

pub struct CronJobStrategy;

/// The controller names Jobs `<cronjob>-<11 digit timestamp>`, which must stay a DNS label.
const MAX_NAME_LENGTH: usize = DNS1035_LABEL_MAX_LENGTH - 11;

fn defaults(obj: &mut Value) {
    default_at(obj, &["spec", "concurrencyPolicy"], json!("Allow"));
    default_at(obj, &["spec", "suspend"], json!(false));
    default_at(obj, &["spec", "successfulJobsHistoryLimit"], json!(3));
    default_at(obj, &["spec", "failedJobsHistoryLimit"], json!(1));
    default_template(obj, &["spec", "jobTemplate", "spec", "template"]);
}

fn validate_schedule(schedule: &str, old: Option<&str>, time_zone: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let field = "spec.schedule";
    if let Err(e) = parse_schedule(schedule) {
        causes.push(Cause::invalid(field, quote(schedule), &e.to_string()));
    }
    // Schedules stored before the timeZone field keep their TZ= prefix; new ones may not.
    let allow_tz = old.is_some_and(|o| o.contains("TZ"));
    if schedule.contains("TZ") {
        let why = match (allow_tz, time_zone) {
            (true, true) => Some("cannot use both timeZone field and TZ or CRON_TZ in schedule"),
            (false, _) => Some("cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),
            (true, false) => None,
        };
        causes.extend(why.map(|why| Cause::invalid(field, quote(schedule), why)));
    }
    causes
}

/// validateTimeZone: an explicit IANA zone name (not Local), as Go's LoadLocation knows.
fn validate_time_zone(zone: &str) -> Option<Cause> {
    let field = "spec.timeZone";
    if zone.is_empty() {
        return Some(Cause::invalid(
            field,
            quote(zone),
            "timeZone must be nil or non-empty string",
        ));
    }
    let part_ok = |p: &str| {
        !matches!(p, "." | "..")
            && !p.starts_with('-')
            && (1..=14).contains(&p.len())
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b))
    };
    if !zone.split('/').all(part_ok) {
        return Some(Cause::invalid(
            field,
            quote(zone),
            &format!("unknown time zone {zone}"),
        ));
    }
    if zone.eq_ignore_ascii_case("Local") {
        return Some(Cause::invalid(
            field,
            quote(zone),
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    zone.parse::<chrono_tz::Tz>()
        .err()
        .map(|_| Cause::invalid(field, quote(zone), &format!("unknown time zone {zone}")))
}

fn validate_spec(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let text = |o: &Value, f: &str| {
        at(o, &["spec", f])
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let zone = text(obj, "timeZone");
    match text(obj, "schedule").filter(|s| !s.is_empty()) {
        None => causes.push(Cause::required("spec.schedule")),
        Some(schedule) => {
            let old_schedule = old.and_then(|o| text(o, "schedule"));
            causes.extend(validate_schedule(
                &schedule,
                old_schedule.as_deref(),
                zone.is_some(),
            ));
        }
    }
    nonnegative(obj, &["spec", "startingDeadlineSeconds"], &mut causes);
    if old.is_none_or(|o| text(o, "timeZone") != zone) {
        causes.extend(zone.as_deref().and_then(validate_time_zone));
    }
    match text(obj, "concurrencyPolicy").as_deref() {
        Some("Allow" | "Forbid" | "Replace") => {}
        None | Some("") => causes.push(Cause::required("spec.concurrencyPolicy")),
        Some(other) => causes.push(Cause::not_supported(
            "spec.concurrencyPolicy",
            other,
            &["Allow", "Forbid", "Replace"],
        )),
    }
    let job_spec = at(obj, &["spec", "jobTemplate", "spec"]);
    causes.extend(validate_job_spec(job_spec, "spec.jobTemplate.spec"));
    if let Some(selector) = job_spec
        .and_then(|s| s.get("selector"))
        .filter(|s| !s.is_null())
    {
        causes.push(Cause::invalid(
            "spec.jobTemplate.spec.selector",
            go_fmt::label_selector(selector),
            "`selector` will be auto-generated",
        ));
    }
    if job_spec.and_then(|s| s.get("manualSelector")) == Some(&Value::Bool(true)) {
        causes.push(Cause::not_supported(
            "spec.jobTemplate.spec.manualSelector",
            "true",
            &["nil", "false"],
        ));
    }
    nonnegative(obj, &["spec", "successfulJobsHistoryLimit"], &mut causes);
    nonnegative(obj, &["spec", "failedJobsHistoryLimit"], &mut causes);
    causes
}

impl Strategy for CronJobStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        defaults(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        defaults(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = validate_spec(obj, None);
        let name = object::name(obj);
        if name.len() > MAX_NAME_LENGTH {
            causes.push(Cause::invalid(
                "metadata.name",
                quote(name),
                &max_len_error(MAX_NAME_LENGTH),
            ));
        }
        causes
    }

    /// Longer names stay updatable (and deletable through finalizers) once stored.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        validate_spec(new, Some(old))
    }

    fn validate_status_update(&self, _new: &Value, _old: &Value) -> Vec<Cause> {
        Vec::new()
    }
}
