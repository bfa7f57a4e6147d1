//! A Job's status as the controller keeps it (batch/v1 JobStatus) and its conditions.

use chrono::{DateTime, Utc};
use registry::object;
use registry::types::ConditionStatus;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const COMPLETE: &str = "Complete";
pub const FAILED: &str = "Failed";
pub const FAILURE_TARGET: &str = "FailureTarget";
pub const SUCCESS_CRITERIA_MET: &str = "SuccessCriteriaMet";
pub const SUSPENDED: &str = "Suspended";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

impl Condition {
    pub fn new(type_: &str, status: bool, reason: &str, message: &str, now: DateTime<Utc>) -> Self {
        let at = object::timestamp(now);
        Self {
            type_: type_.to_string(),
            status: ConditionStatus::from_bool(status).to_string(),
            last_probe_time: Some(at.clone()),
            last_transition_time: Some(at),
            reason: reason.to_string(),
            message: message.to_string(),
        }
    }

    pub fn is_true(&self) -> bool {
        self.status.parse() == Ok(ConditionStatus::True)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UncountedTerminatedPods {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub succeeded: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub active: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub succeeded: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminating: Option<i64>,
    /// Indexed Jobs: the succeeded indexes, compressed ("1,3-5").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub completed_indexes: String,
    /// Indexed Jobs with backoffLimitPerIndex: the failed indexes, compressed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_indexes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncounted_terminated_pods: Option<UncountedTerminatedPods>,
    /// Fields of newer features this controller does not manage, kept as they are.
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl JobStatus {
    /// The status of a stored Job; an unreadable one starts over empty (the controller owns it).
    pub fn of(job: &Value) -> Self {
        serde_json::from_value(job["status"].clone()).unwrap_or_default()
    }

    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    pub fn uncounted(&mut self) -> &mut UncountedTerminatedPods {
        self.uncounted_terminated_pods
            .get_or_insert_with(Default::default)
    }

    /// Sets a condition's status, keeping its transition time when the status stays
    /// (upstream's ensureJobConditionStatus); a False condition is only added if one exists.
    /// Whether anything changed.
    pub fn ensure_condition(
        &mut self,
        type_: &str,
        status: bool,
        reason: &str,
        message: &str,
        now: DateTime<Utc>,
    ) -> bool {
        let wanted = ConditionStatus::from_bool(status).as_str();
        if let Some(c) = self.conditions.iter_mut().find(|c| c.type_ == type_) {
            if c.status == wanted && c.reason == reason && c.message == message {
                return false;
            }
            let at = object::timestamp(now);
            if c.status != wanted {
                c.last_transition_time = Some(at.clone());
            }
            c.status = wanted.to_string();
            c.last_probe_time = Some(at);
            c.reason = reason.to_string();
            c.message = message.to_string();
            return true;
        }
        if !status {
            return false;
        }
        self.conditions
            .push(Condition::new(type_, true, reason, message, now));
        true
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// Whether the Job has finished: a Complete or Failed condition is True.
pub fn is_finished(job: &Value) -> bool {
    finished_condition(job).is_some()
}

/// The True Complete or Failed condition of a Job, if it finished.
pub fn finished_condition(job: &Value) -> Option<Condition> {
    let status = JobStatus::of(job);
    status
        .conditions
        .into_iter()
        .find(|c| (c.type_ == COMPLETE || c.type_ == FAILED) && c.is_true())
}

/// "Complete" or "Failed" once the Job finished.
pub fn finished_condition_type(job: &Value) -> Option<String> {
    finished_condition(job).map(|c| c.type_)
}
