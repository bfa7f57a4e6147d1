//! The fields of a Job's spec the controller acts on, read with upstream's defaults as
//! fallbacks so a Job stored without them (or by an older server) behaves as upstream's.

use registry::selector::labels::LabelSelector;
use registry::types::RestartPolicy;
use serde_json::Value;

use super::controller::JobControllerError;

pub struct JobSpec {
    pub parallelism: i64,
    /// None: a work-queue Job, done once any pod succeeds and none is left running.
    pub completions: Option<i64>,
    pub backoff_limit: i64,
    pub active_deadline_seconds: Option<i64>,
    pub suspend: bool,
    /// None when the Job has no selector yet (the server generates one upstream): its pods
    /// are then those it controls, and none is adopted.
    pub selector: Option<LabelSelector>,
    pub template: Value,
    /// Pods only replaced once Failed, not while terminating (podReplacementPolicy Failed).
    pub only_replace_failed: bool,
    pub restart_on_failure: bool,
    /// completionMode Indexed: each pod runs one index of `0..completions`.
    pub indexed: bool,
    pub backoff_limit_per_index: Option<i64>,
    pub max_failed_indexes: Option<i64>,
    /// Null without a policy.
    pub pod_failure_policy: Value,
    /// Null without a policy; only Indexed Jobs have one.
    pub success_policy: Value,
}

impl JobSpec {
    pub fn read(job: &Value) -> Result<Self, JobControllerError> {
        let spec = &job["spec"];
        let int = |field: &str| spec[field].as_i64();
        let parallelism = int("parallelism");
        // Upstream's defaulting: completions default to 1 only when parallelism is unset too.
        let completions = match (int("completions"), parallelism) {
            (Some(c), _) => Some(c),
            (None, None) => Some(1),
            (None, Some(_)) => None,
        };
        let selector =
            match &spec["selector"] {
                Value::Null => None,
                selector => Some(LabelSelector::from_label_selector_json(selector).map_err(
                    |e| JobControllerError::InvalidSpec(format!("invalid selector: {e}")),
                )?),
            };
        let indexed = spec["completionMode"] == "Indexed";
        Ok(Self {
            indexed,
            backoff_limit_per_index: int("backoffLimitPerIndex").filter(|_| indexed),
            max_failed_indexes: int("maxFailedIndexes").filter(|_| indexed),
            pod_failure_policy: spec["podFailurePolicy"].clone(),
            success_policy: if indexed {
                spec["successPolicy"].clone()
            } else {
                Value::Null
            },
            parallelism: parallelism.unwrap_or(1).max(0),
            completions,
            backoff_limit: int("backoffLimit").unwrap_or(6),
            active_deadline_seconds: int("activeDeadlineSeconds"),
            suspend: spec["suspend"].as_bool().unwrap_or(false),
            selector,
            template: spec["template"].clone(),
            only_replace_failed: spec["podReplacementPolicy"] == "Failed"
                || !spec["podFailurePolicy"].is_null(),
            restart_on_failure: RestartPolicy::of(&spec["template"]) == RestartPolicy::OnFailure,
        })
    }
}
