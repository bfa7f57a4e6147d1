//! `spec.podFailurePolicy` (upstream's pod_failure_policy.go): the first rule a failed pod
//! matches, by a container's exit code or a pod condition, decides whether the failure fails
//! the Job, its index, is ignored or counts towards the backoff limit.

use serde_json::Value;

use super::pods;
use super::spec::JobSpec;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    FailJob,
    FailIndex,
    Ignore,
    Count,
}

impl Action {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "FailJob" => Self::FailJob,
            "FailIndex" => Self::FailIndex,
            "Ignore" => Self::Ignore,
            "Count" => Self::Count,
            _ => return None,
        })
    }
}

/// What the policy says of one failed pod.
pub struct Match {
    /// The Job's failure message, for a FailJob rule.
    pub fail_job: Option<String>,
    /// Whether the failure counts towards the backoff limits (not when ignored).
    pub count: bool,
    pub action: Option<Action>,
}

/// Matches `pod` against the Job's rules in order; without a policy or a matching rule the
/// failure simply counts.
pub fn matches(spec: &JobSpec, pod: &Value) -> Match {
    let unmatched = Match {
        fail_job: None,
        count: true,
        action: None,
    };
    let Some(rules) = spec.pod_failure_policy["rules"].as_array() else {
        return unmatched;
    };
    for (index, rule) in rules.iter().enumerate() {
        let Some(action) = rule["action"].as_str().and_then(Action::parse) else {
            continue;
        };
        let cause = if !rule["onExitCodes"].is_null() {
            exit_code_match(pod, &rule["onExitCodes"]).map(|(container, code)| {
                format!(
                    "Container {container} for pod {}/{} failed with exit code {code} matching {action:?} rule at index {index}",
                    registry::object::namespace(pod),
                    registry::object::name(pod),
                )
            })
        } else if let Some(patterns) = rule["onPodConditions"].as_array() {
            condition_match(pod, patterns).map(|condition| {
                format!(
                    "Pod {}/{} has condition {condition} matching {action:?} rule at index {index}",
                    registry::object::namespace(pod),
                    registry::object::name(pod),
                )
            })
        } else {
            None
        };
        let Some(message) = cause else {
            continue;
        };
        return Match {
            fail_job: (action == Action::FailJob).then_some(message),
            count: action != Action::Ignore,
            action: Some(action),
        };
    }
    unmatched
}

/// The first terminated container (then init container) whose non-zero exit code satisfies
/// the requirement: its name and code.
fn exit_code_match(pod: &Value, requirement: &Value) -> Option<(String, i64)> {
    let wanted_container = requirement["containerName"].as_str();
    let values: Vec<i64> = requirement["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_i64)
        .collect();
    let operator = requirement["operator"].as_str().unwrap_or_default();
    ["containerStatuses", "initContainerStatuses"]
        .iter()
        .flat_map(|list| pod["status"][list].as_array().into_iter().flatten())
        .find_map(|status| {
            let code = status["state"]["terminated"]["exitCode"].as_i64()?;
            let name = status["name"].as_str().unwrap_or_default();
            if code == 0 || wanted_container.is_some_and(|w| w != name) {
                return None;
            }
            let matched = match operator {
                "In" => values.contains(&code),
                "NotIn" => !values.contains(&code),
                _ => false,
            };
            matched.then(|| (name.to_string(), code))
        })
}

/// The type of the first pod condition matching one of the patterns.
fn condition_match(pod: &Value, patterns: &[Value]) -> Option<String> {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| {
            patterns
                .iter()
                .any(|p| p["type"] == c["type"] && p["status"] == c["status"])
        })
        .and_then(|c| c["type"].as_str().map(String::from))
}

/// The message of the first failed pod matching a FailJob rule (upstream's
/// getFailJobMessage).
pub fn fail_job_message(spec: &JobSpec, all: &[std::sync::Arc<Value>]) -> Option<String> {
    if spec.pod_failure_policy.is_null() {
        return None;
    }
    all.iter()
        .filter(|p| pods::is_failed(p, spec))
        .find_map(|p| matches(spec, p).fail_job)
}
