//! One sync of a CronJob (upstream's syncCronJob): reconcile `status.active` with its Jobs,
//! then, unless suspended, start the Job of the most recent unmet scheduled time as
//! concurrencyPolicy and startingDeadlineSeconds allow; prune the history; write the status.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use registry::options::{ListOptions, WriteOptions};
use registry::types::ConcurrencyPolicy;
use registry::{object, RegistryError, Subresource};
use serde_json::{json, Map, Value};
use tracing::debug;

use super::controller::CronJobController;
use super::schedule::{parse_schedule, ScheduleTimes, TOO_MANY_MISSED};
use super::SCHEDULED_TIMESTAMP_ANNOTATION;
use crate::job::is_finished;
use client::controller_utils::{controller_ref, SyncError};
use client::events::EventType;
use client::informer::CONTROLLER_UID_INDEX;

/// Slack past the next scheduled time before looking again, so the clock has passed it.
const NEXT_SCHEDULE_DELTA: Duration = Duration::from_millis(100);

/// Status writes tried over a changing CronJob before the sync is retried whole.
const STATUS_WRITE_ATTEMPTS: usize = 5;

/// A reference in `status.active`.
pub(super) fn job_reference(job: &Value) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": object::name(job),
        "namespace": object::namespace(job),
        "uid": object::uid(job),
        "resourceVersion": object::resource_version(job),
    })
}

pub(super) fn remove_active(status: &mut Map<String, Value>, uid: &str) {
    if let Some(active) = status.get_mut("active").and_then(Value::as_array_mut) {
        active.retain(|r| r["uid"] != uid);
        if active.is_empty() {
            status.remove("active");
        }
    }
}

fn active(status: &Map<String, Value>) -> &[Value] {
    status
        .get("active")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn time_of(status: &Map<String, Value>, field: &str) -> Option<DateTime<Utc>> {
    status.get(field)?.as_str().and_then(object::parse_time)
}

impl CronJobController {
    pub(super) async fn sync(&self, key: &str) -> Result<Option<Duration>, SyncError> {
        let Some(mut cronjob) = self.cronjob_informer.indexer().get(key) else {
            return Ok(None);
        };
        let jobs = self
            .job_informer
            .indexer()
            .by_index(CONTROLLER_UID_INDEX, object::uid(&cronjob))
            .unwrap_or_default();
        // A running Job the status does not list: the informer's copy may predate the status
        // write that listed it; storage has the latest.
        let listed = |cj: &Value, job: &Value| {
            cj["status"]["active"]
                .as_array()
                .is_some_and(|a| a.iter().any(|r| r["uid"] == object::uid(job)))
        };
        if jobs.iter().any(|j| !is_finished(j) && !listed(&cronjob, j)) {
            let (namespace, name) = (object::namespace(&cronjob), object::name(&cronjob));
            match self
                .cronjobs
                .get(Some(namespace), name, &ListOptions::default())
                .await
            {
                Ok(fresh) if object::uid(&fresh) == object::uid(&cronjob) => {
                    cronjob = Arc::new(fresh)
                }
                Ok(_) | Err(RegistryError::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
        let mut status = cronjob["status"].as_object().cloned().unwrap_or_default();
        let result = self.sync_cronjob(&cronjob, &jobs, &mut status).await;
        self.cleanup_finished_jobs(&cronjob, &jobs, &mut status)
            .await;
        if cronjob["status"].as_object() != Some(&status) {
            self.write_status(&cronjob, status).await?;
        }
        result
    }

    /// Writes the status this sync computed. On a conflict (the CronJob changed since the
    /// informer saw it) the write is made again over the stored object: the status records
    /// Jobs this sync created, which the next sync could not see if the Job informer lags,
    /// and losing them would leave a Job no concurrency policy knows of.
    async fn write_status(
        &self,
        cronjob: &Value,
        status: Map<String, Value>,
    ) -> Result<(), SyncError> {
        let (namespace, name) = (object::namespace(cronjob), object::name(cronjob));
        let mut next = cronjob.clone();
        next["status"] = Value::Object(status.clone());
        let mut attempts = 1;
        loop {
            match self
                .cronjobs
                .update(
                    Some(namespace),
                    name,
                    next,
                    Subresource::Status,
                    &WriteOptions::default(),
                )
                .await
            {
                Err(RegistryError::Conflict { .. }) if attempts < STATUS_WRITE_ATTEMPTS => {
                    attempts += 1;
                    next = self
                        .cronjobs
                        .get(Some(namespace), name, &ListOptions::default())
                        .await?;
                    if object::uid(&next) != object::uid(cronjob) {
                        return Ok(());
                    }
                    next["status"] = Value::Object(status.clone());
                }
                other => return other.map(drop).map_err(Into::into),
            }
        }
    }

    async fn sync_cronjob(
        &self,
        cronjob: &Arc<Value>,
        jobs: &[Arc<Value>],
        status: &mut Map<String, Value>,
    ) -> Result<Option<Duration>, SyncError> {
        let now = self.config.clock.now();
        for job in jobs {
            let uid = object::uid(job);
            let listed = active(status).iter().any(|r| r["uid"] == uid);
            let finished = is_finished(job);
            if !listed && !finished {
                // Ours (it names us its controller) but unlisted: a status write lost to a
                // conflict or a crash. Upstream only reports it; it is listed again here so
                // the concurrency policy sees it and its scheduled time is not run twice.
                self.recorder.event(
                    cronjob,
                    EventType::Warning,
                    "UnexpectedJob",
                    format!(
                        "Saw a job that the controller did not create or forgot: {}",
                        object::name(job)
                    ),
                );
                let scheduled = job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION]
                    .as_str()
                    .and_then(object::parse_time);
                let last = time_of(status, "lastScheduleTime");
                match scheduled {
                    Some(at) if last.is_none_or(|last| at > last) => {
                        record_created(status, job, at)
                    }
                    _ => push_active(status, job),
                }
            } else if listed && finished {
                let condition = crate::job::finished_condition_type(job).unwrap_or_default();
                remove_active(status, uid);
                self.recorder.event(
                    cronjob,
                    EventType::Normal,
                    "SawCompletedJob",
                    format!(
                        "Saw completed job: {}, condition: {condition}",
                        object::name(job)
                    ),
                );
            }
            if finished {
                let completed = job["status"]["completionTime"]
                    .as_str()
                    .and_then(object::parse_time);
                if let Some(at) = completed {
                    if time_of(status, "lastSuccessfulTime").is_none_or(|last| at > last) {
                        status.insert("lastSuccessfulTime".into(), json!(object::timestamp(at)));
                    }
                }
            }
        }
        let namespace = object::namespace(cronjob);
        for reference in active(status).to_vec() {
            let uid = reference["uid"].as_str().unwrap_or_default();
            if jobs.iter().any(|j| object::uid(j) == uid) {
                continue;
            }
            // Not in the informer yet, or really gone: storage says which.
            let name = reference["name"].as_str().unwrap_or_default();
            match self
                .jobs
                .get(Some(namespace), name, &ListOptions::default())
                .await
            {
                Err(RegistryError::NotFound { .. }) => {
                    self.recorder.event(
                        cronjob,
                        EventType::Normal,
                        "MissingJob",
                        format!("Active job went missing: {name}"),
                    );
                    remove_active(status, uid);
                }
                Err(e) => return Err(e.into()),
                Ok(_) => {}
            }
        }

        if object::deletion_timestamp(cronjob).is_some() {
            return Ok(None);
        }
        let spec = &cronjob["spec"];
        let tz = match spec["timeZone"].as_str() {
            None => None,
            Some(zone) => match zone.parse::<Tz>() {
                Ok(tz) => Some(tz),
                Err(_) => {
                    self.recorder.event(
                        cronjob,
                        EventType::Warning,
                        "UnknownTimeZone",
                        format!("invalid timeZone: {zone:?}: unknown time zone {zone}"),
                    );
                    return Ok(None);
                }
            },
        };
        let text = spec["schedule"].as_str().unwrap_or_default();
        let schedule = match parse_schedule(text) {
            Ok(s) => s,
            Err(e) => {
                self.recorder.event(
                    cronjob,
                    EventType::Warning,
                    "UnparseableSchedule",
                    format!("unparseable schedule: {text:?} : {e}"),
                );
                return Ok(None);
            }
        };
        let tz = tz.or(schedule.time_zone).unwrap_or(Tz::UTC);
        if spec["suspend"].as_bool() == Some(true) {
            return Ok(None);
        }
        // A schedule that never fires (`59 23 31 2 *` parses): upstream finds no two times
        // a second apart, reports it, and waits for the spec to change.
        if schedule.next_after(now, tz).is_none() {
            self.recorder.event(
                cronjob,
                EventType::Warning,
                "InvalidSchedule",
                format!("invalid schedule: {text} : time difference between two schedules is less than 1 second"),
            );
            return Ok(None);
        }
        let next_in = |now: DateTime<Utc>| {
            schedule
                .next_after(now, tz)
                .and_then(|t| (t - now).to_std().ok())
                .map(|d| d + NEXT_SCHEDULE_DELTA)
        };

        // The most recent unmet scheduled time, no earlier than the starting deadline allows.
        let created = cronjob["metadata"]["creationTimestamp"]
            .as_str()
            .and_then(object::parse_time)
            .unwrap_or(now);
        let mut earliest = time_of(status, "lastScheduleTime").unwrap_or(created);
        let deadline = spec["startingDeadlineSeconds"].as_i64();
        if let Some(seconds) = deadline {
            earliest = earliest.max(now - chrono::Duration::seconds(seconds));
        }
        let (scheduled, missed) = if earliest > now {
            (None, 0)
        } else {
            schedule.most_recent(earliest, now, tz)
        };
        if missed > TOO_MANY_MISSED {
            self.recorder.event(
                cronjob,
                EventType::Warning,
                "TooManyMissedTimes",
                format!("too many missed start times: {missed}. Set or decrease .spec.startingDeadlineSeconds or check clock skew"),
            );
        }
        let Some(scheduled) = scheduled else {
            return Ok(next_in(now));
        };
        if let Some(seconds) = deadline {
            if scheduled + chrono::Duration::seconds(seconds) < now {
                self.recorder.event(
                    cronjob,
                    EventType::Warning,
                    "MissSchedule",
                    format!(
                        "Missed scheduled time to start a job: {}",
                        scheduled.with_timezone(&tz).to_rfc3339()
                    ),
                );
                return Ok(next_in(now));
            }
        }
        let job_name = format!("{}-{}", object::name(cronjob), scheduled.timestamp() / 60);
        if active(status)
            .iter()
            .any(|r| r["name"] == job_name.as_str())
        {
            return Ok(next_in(now));
        }
        match ConcurrencyPolicy::of(cronjob) {
            ConcurrencyPolicy::Forbid if !active(status).is_empty() => {
                self.recorder.event(
                    cronjob,
                    EventType::Normal,
                    "JobAlreadyActive",
                    "Not starting job because prior execution is running and concurrency policy is Forbid",
                );
                return Ok(next_in(now));
            }
            ConcurrencyPolicy::Replace => {
                for reference in active(status).to_vec() {
                    let name = reference["name"].as_str().unwrap_or_default();
                    let uid = reference["uid"].as_str().unwrap_or_default().to_string();
                    if self.delete_job(cronjob, namespace, name).await? {
                        remove_active(status, &uid);
                    }
                }
            }
            _ => {}
        }

        let job = job_from_template(cronjob, &job_name, scheduled, tz);
        match self
            .jobs
            .create(Some(namespace), job, &WriteOptions::default())
            .await
        {
            Ok(created) => {
                self.recorder.event(
                    cronjob,
                    EventType::Normal,
                    "SuccessfulCreate",
                    format!("Created job {}", object::name(&created)),
                );
                record_created(status, &created, scheduled);
                Ok(next_in(now))
            }
            Err(e @ RegistryError::AlreadyExists { .. }) => {
                // Ours from a sync whose status write was lost: recorded now, so the same
                // time is not tried forever. Anyone else's is theirs to record.
                let existing = self
                    .jobs
                    .get(Some(namespace), &job_name, &ListOptions::default())
                    .await?;
                if client::informer::controller_uid(&existing) != Some(object::uid(cronjob)) {
                    debug!(job = %job_name, "job already exists");
                    return Err(e.into());
                }
                if !is_finished(&existing) {
                    record_created(status, &existing, scheduled);
                }
                Ok(next_in(now))
            }
            Err(e) => {
                self.recorder.event(
                    cronjob,
                    EventType::Warning,
                    "FailedCreate",
                    format!("Error creating job: {}", e.status().message),
                );
                Err(e.into())
            }
        }
    }
}

fn push_active(status: &mut Map<String, Value>, job: &Value) {
    if let Some(active) = status
        .entry("active")
        .or_insert_with(|| json!([]))
        .as_array_mut()
    {
        if !active.iter().any(|r| r["uid"] == object::uid(job)) {
            active.push(job_reference(job));
        }
    }
}

fn record_created(status: &mut Map<String, Value>, job: &Value, scheduled: DateTime<Utc>) {
    push_active(status, job);
    status.insert(
        "lastScheduleTime".into(),
        json!(object::timestamp(scheduled)),
    );
}

/// The Job of the CronJob for the time `scheduled` (upstream's getJobFromTemplate2): a name
/// fixed by the time, so the same time never makes two Jobs.
fn job_from_template(cronjob: &Value, name: &str, scheduled: DateTime<Utc>, tz: Tz) -> Value {
    let template = &cronjob["spec"]["jobTemplate"];
    let mut annotations = template["metadata"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    annotations.insert(
        SCHEDULED_TIMESTAMP_ANNOTATION.into(),
        json!(scheduled
            .with_timezone(&tz)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
    );
    let mut metadata = json!({
        "name": name,
        "annotations": annotations,
        "ownerReferences": [controller_ref(cronjob)],
    });
    if let Some(labels) = template["metadata"].get("labels").filter(|l| l.is_object()) {
        metadata["labels"] = labels.clone();
    }
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}
