//! How a simulated container behaves, scripted per pod by the `sim.kube.io/behavior`
//! annotation: a JSON object keyed by container name (`"*"` for every container not named),
//! each value a [`ContainerBehavior`]. Without a script, a container of a pod owned by a Job
//! (and every init container) exits 0 after a short run, and every other container runs
//! until it is stopped and exits at once on SIGTERM.
//!
//! ```yaml
//! metadata:
//!   annotations:
//!     sim.kube.io/behavior: '{"app": {"runSeconds": 2, "exitCode": 1}, "*": {"ignoreSigterm": true}}'
//! ```

use std::collections::HashMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

pub const ANNOTATION: &str = "sim.kube.io/behavior";

/// One container's script; every field is optional.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerBehavior {
    /// Seconds from start to exit; absent: runs until stopped (or the default for Jobs).
    pub run_seconds: Option<f64>,
    /// The code it exits with when its run ends (default 0).
    pub exit_code: Option<i32>,
    /// The result of its readiness probe (default true).
    pub ready: Option<bool>,
    /// The result of its liveness probe (default true).
    pub live: Option<bool>,
    /// The result of its startup probe (default true).
    pub started: Option<bool>,
    /// Keeps running after SIGTERM until killed at the end of the grace period.
    pub ignore_sigterm: Option<bool>,
    /// The code it exits with on SIGTERM (default 0, a well-behaved process).
    pub sigterm_exit_code: Option<i32>,
    /// How long its preStop hook runs (default 0).
    pub pre_stop_seconds: Option<f64>,
    /// What it writes to its log (default: one line saying it started).
    pub logs: Option<Vec<String>>,
}

/// What a container does, with the defaults applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    pub run: Option<Duration>,
    pub exit_code: i32,
    pub ready: bool,
    pub live: bool,
    pub started: bool,
    pub ignore_sigterm: bool,
    pub sigterm_exit_code: i32,
    pub pre_stop: Duration,
    pub logs: Option<Vec<String>>,
}

fn seconds(s: Option<f64>) -> Option<Duration> {
    s.filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

/// The scripts of a pod's containers, read from its annotation.
#[derive(Clone, Debug, Default)]
pub struct PodBehavior {
    by_name: HashMap<String, ContainerBehavior>,
}

impl PodBehavior {
    /// The pod's script; an annotation that does not parse is reported and not used.
    pub fn of(pod: &Value) -> Result<Self, String> {
        let Some(text) = pod["metadata"]["annotations"][ANNOTATION].as_str() else {
            return Ok(Self::default());
        };
        serde_json::from_str(text)
            .map(|by_name| Self { by_name })
            .map_err(|e| format!("annotation {ANNOTATION} is not valid: {e}"))
    }

    /// The script of container `name`; `completes` when its default is to exit 0 after
    /// `completing_run` (init containers, containers of a Job's pods).
    pub fn script(&self, name: &str, completes: bool, completing_run: Duration) -> Script {
        let b = self
            .by_name
            .get(name)
            .or_else(|| self.by_name.get("*"))
            .cloned()
            .unwrap_or_default();
        let run = seconds(b.run_seconds).or(completes.then_some(completing_run));
        Script {
            run,
            exit_code: b.exit_code.unwrap_or(0),
            ready: b.ready.unwrap_or(true),
            live: b.live.unwrap_or(true),
            started: b.started.unwrap_or(true),
            ignore_sigterm: b.ignore_sigterm.unwrap_or(false),
            sigterm_exit_code: b.sigterm_exit_code.unwrap_or(0),
            pre_stop: seconds(b.pre_stop_seconds).unwrap_or_default(),
            logs: b.logs,
        }
    }
}

/// Whether the pod is owned by a Job (whose containers complete by default).
pub fn owned_by_job(pod: &Value) -> bool {
    pod["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|refs| {
            refs.iter().any(|r| {
                r["kind"] == "Job"
                    && r["apiVersion"]
                        .as_str()
                        .is_some_and(|v| v.starts_with("batch/"))
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn named_then_wildcard_then_defaults() {
        let pod = json!({"metadata": {"annotations": {ANNOTATION:
            r#"{"a": {"exitCode": 3, "runSeconds": 1.5}, "*": {"ignoreSigterm": true}}"#}}});
        let b = PodBehavior::of(&pod).unwrap();
        let a = b.script("a", false, Duration::from_secs(1));
        assert_eq!((a.exit_code, a.run), (3, Some(Duration::from_millis(1500))));
        assert!(!a.ignore_sigterm);
        assert!(
            b.script("other", false, Duration::from_secs(1))
                .ignore_sigterm
        );
        let none = PodBehavior::default().script("x", true, Duration::from_secs(1));
        assert_eq!(none.run, Some(Duration::from_secs(1)));
        assert!(PodBehavior::default()
            .script("x", false, Duration::ZERO)
            .run
            .is_none());
    }

    #[test]
    fn bad_annotation_is_an_error() {
        let pod = json!({"metadata": {"annotations": {ANNOTATION: r#"{"a": {"exitcode": 1}}"#}}});
        assert!(PodBehavior::of(&pod).is_err());
    }
}
