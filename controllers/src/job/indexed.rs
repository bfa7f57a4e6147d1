//! Indexed Jobs (upstream's indexed_job_utils.go): each pod carries its completion index; the
//! controller runs one pod per pending index, records the indexes that succeeded (and, with
//! `backoffLimitPerIndex`, those that failed) and counts failures per index through an
//! annotation each replacement pod inherits.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use registry::object;
use registry::types::PodPhase;
use serde_json::{json, Value};

use super::failure_policy;
use super::intervals::Intervals;
use super::pods::{self, has_tracking_finalizer};
use super::spec::JobSpec;

pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
pub const INDEX_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";
pub const INDEX_IGNORED_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-ignored-failure-count";
const COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// A generated name's prefix is cut to this so the random suffix fits in 63 characters.
const MAX_GENERATED_NAME_PREFIX: usize = 58;

/// The pod's completion index; None when missing or malformed.
pub fn completion_index(pod: &Value) -> Option<i64> {
    annotation_int(pod, COMPLETION_INDEX)
}

fn annotation_int(pod: &Value, key: &str) -> Option<i64> {
    pod["metadata"]["annotations"][key]
        .as_str()?
        .parse::<i64>()
        .ok()
        .filter(|ix| *ix >= 0)
}

/// Failures counted against the pod's index before it was created.
pub fn failure_count(pod: &Value) -> i64 {
    annotation_int(pod, INDEX_FAILURE_COUNT)
        .filter(|n| *n <= i64::from(i32::MAX))
        .unwrap_or(0)
}

fn ignored_failure_count(pod: &Value) -> i64 {
    annotation_int(pod, INDEX_IGNORED_FAILURE_COUNT)
        .filter(|n| *n <= i64::from(i32::MAX))
        .unwrap_or(0)
}

/// An index within `completions`, for a pod that has one.
pub fn valid_index(pod: &Value, spec: &JobSpec) -> Option<i64> {
    completion_index(pod).filter(|ix| *ix < spec.completions.unwrap_or(0))
}

/// Makes every container of an Indexed Job's template read its index from the pod's
/// annotation through the downward API, unless it sets JOB_COMPLETION_INDEX itself.
pub fn add_index_env(pod: &mut Value) {
    let field_path = format!("metadata.annotations['{COMPLETION_INDEX}']");
    for list in ["initContainers", "containers"] {
        let Some(containers) = object::array_at_mut(pod, &["spec", list]) else {
            continue;
        };
        for container in containers {
            let has = container["env"]
                .as_array()
                .is_some_and(|env| env.iter().any(|e| e["name"] == COMPLETION_INDEX_ENV));
            if has {
                continue;
            }
            if !container["env"].is_array() {
                container["env"] = json!([]);
            }
            if let Some(env) = container["env"].as_array_mut() {
                env.push(json!({
                    "name": COMPLETION_INDEX_ENV,
                    "valueFrom": {"fieldRef": {"fieldPath": field_path}},
                }));
            }
        }
    }
}

/// Gives the pod of `index` its annotation and label, the hostname `<job>-<index>` and a
/// name `<job>-<index>-<random>`; with `backoffLimitPerIndex`, the index's failure counts
/// carried over from the pod it replaces.
pub fn decorate(
    pod: &mut Value,
    spec: &JobSpec,
    job_name: &str,
    index: i64,
    replaced: Option<&Value>,
) {
    let value = json!(index.to_string());
    let meta = object::meta_mut(pod);
    for field in ["annotations", "labels"] {
        let map = meta.entry(field).or_insert_with(|| json!({}));
        if !map.is_object() {
            *map = json!({});
        }
        map[COMPLETION_INDEX] = value.clone();
    }
    let suffix = format!("-{index}-");
    let mut prefix = format!("{job_name}{suffix}");
    if prefix.len() > MAX_GENERATED_NAME_PREFIX {
        let mut keep = MAX_GENERATED_NAME_PREFIX - suffix.len();
        while !job_name.is_char_boundary(keep) {
            keep -= 1;
        }
        prefix = format!("{}{suffix}", &job_name[..keep]);
    }
    meta.insert("generateName".into(), json!(prefix));
    if spec.backoff_limit_per_index.is_some() {
        let (mut counted, mut ignored) = (0, 0);
        if let Some(replaced) = replaced {
            counted = failure_count(replaced);
            ignored = ignored_failure_count(replaced);
            if failure_policy::matches(spec, replaced).count {
                counted += 1;
            } else {
                ignored += 1;
            }
        }
        let annotations = &mut meta["annotations"];
        annotations[INDEX_FAILURE_COUNT] = json!(counted.to_string());
        if ignored > 0 {
            annotations[INDEX_IGNORED_FAILURE_COUNT] = json!(ignored.to_string());
        }
    }
    pod["spec"]["hostname"] = json!(format!("{job_name}-{index}"));
}

/// The succeeded indexes: those recorded in the status and those of succeeded pods not yet
/// counted.
pub fn succeeded_indexes(
    job: &Value,
    spec: &JobSpec,
    pods: &[Arc<Value>],
) -> (Intervals, Intervals) {
    let completions = spec.completions.unwrap_or(0);
    let recorded = Intervals::parse(
        job["status"]["completedIndexes"]
            .as_str()
            .unwrap_or_default(),
        completions,
    );
    let new = pods
        .iter()
        .filter(|p| PodPhase::of(p) == Some(PodPhase::Succeeded) && has_tracking_finalizer(p))
        .filter_map(|p| valid_index(p, spec));
    let all = recorded.with(new);
    (recorded, all)
}

/// The failed indexes (with `backoffLimitPerIndex`): those recorded and those whose newly
/// failed pod used up the index's backoff or matched a FailIndex rule.
pub fn failed_indexes(job: &Value, spec: &JobSpec, pods: &[Arc<Value>]) -> Intervals {
    let completions = spec.completions.unwrap_or(0);
    let recorded = Intervals::parse(
        job["status"]["failedIndexes"].as_str().unwrap_or_default(),
        completions,
    );
    let new = pods
        .iter()
        .filter(|p| has_tracking_finalizer(p) && index_failed(spec, p))
        .filter_map(|p| valid_index(p, spec));
    recorded.with(new)
}

fn index_failed(spec: &JobSpec, pod: &Value) -> bool {
    if !pods::is_failed(pod, spec) {
        return false;
    }
    let matched = failure_policy::matches(spec, pod);
    if matched.action == Some(failure_policy::Action::FailIndex) {
        return true;
    }
    matched.count && failure_count(pod) >= spec.backoff_limit_per_index.unwrap_or(i64::MAX)
}

/// For each index waiting for a replacement, the failed pod it replaces: its tracking
/// finalizer stays until the replacement exists, so the index's failure count survives it
/// (upstream's getPodsWithDelayedDeletionPerIndex).
pub fn awaiting_replacement(
    spec: &JobSpec,
    pods: &[Arc<Value>],
    active: &[Arc<Value>],
    succeeded: &Intervals,
    failed: &Intervals,
    now: DateTime<Utc>,
) -> HashMap<i64, Arc<Value>> {
    let active_indexes: Vec<i64> = active.iter().filter_map(|p| completion_index(p)).collect();
    let mut by_index: HashMap<i64, Arc<Value>> = HashMap::new();
    for pod in pods
        .iter()
        .filter(|p| has_tracking_finalizer(p) && pods::is_failed(p, spec))
    {
        let Some(ix) = valid_index(pod, spec) else {
            continue;
        };
        if succeeded.has(ix) || failed.has(ix) || active_indexes.contains(&ix) {
            continue;
        }
        let later = |held: &Value| {
            absolute_failures(held) <= absolute_failures(pod)
                && pods::finished_time(pod, now) >= pods::finished_time(held, now)
        };
        match by_index.get(&ix) {
            Some(held) if !later(held) => {}
            _ => {
                by_index.insert(ix, pod.clone());
            }
        }
    }
    by_index
}

fn absolute_failures(pod: &Value) -> i64 {
    failure_count(pod) + ignored_failure_count(pod)
}

/// How long before the index of `replaced` may get a new pod: the pod failure backoff,
/// doubled per failure of the index, from when `replaced` finished.
pub fn index_backoff_left(
    replaced: Option<&Value>,
    now: DateTime<Utc>,
    base: Duration,
    max: Duration,
) -> Duration {
    let Some(pod) = replaced else {
        return Duration::ZERO;
    };
    let exponent = absolute_failures(pod).clamp(0, 31) as u32;
    let backoff = base.saturating_mul(1u32 << exponent).min(max);
    let elapsed = (now - pods::finished_time(pod, now))
        .to_std()
        .unwrap_or(Duration::ZERO);
    backoff.saturating_sub(elapsed)
}

/// Active pods to remove whatever the wanted count: those without a valid index and all
/// but the best-placed pod of a repeated index (upstream's
/// appendDuplicatedIndexPodsForRemoval). Returns (to remove, kept).
pub fn duplicates(
    active: &[Arc<Value>],
    spec: &JobSpec,
    removal_first: impl Fn(&Value, &Value) -> std::cmp::Ordering,
) -> (Vec<Arc<Value>>, Vec<Arc<Value>>) {
    let mut remove = Vec::new();
    let mut by_index: BTreeMap<i64, Vec<Arc<Value>>> = BTreeMap::new();
    for pod in active {
        match valid_index(pod, spec) {
            Some(ix) => by_index.entry(ix).or_default().push(pod.clone()),
            None => remove.push(pod.clone()),
        }
    }
    let mut kept = Vec::new();
    for (_, mut same) in by_index {
        same.sort_by(|a, b| removal_first(a, b));
        if let Some(best) = same.pop() {
            kept.push(best);
        }
        remove.extend(same);
    }
    (remove, kept)
}

/// The indexes neither succeeded, failed, nor run by an active (or, when only failed pods
/// are replaced, terminating) pod; the lowest `count` of them.
pub fn pending_indexes(
    spec: &JobSpec,
    pods: &[Arc<Value>],
    active: &[Arc<Value>],
    succeeded: &Intervals,
    failed: Option<&Intervals>,
    count: usize,
) -> Vec<i64> {
    let mut taken = succeeded.with(active.iter().filter_map(|p| completion_index(p)));
    if spec.only_replace_failed {
        taken = taken.with(
            pods.iter()
                .filter(|p| pods::is_terminating(p))
                .filter_map(|p| completion_index(p)),
        );
    }
    if let Some(failed) = failed {
        taken = taken.merge(failed);
    }
    taken.first_missing(count, spec.completions.unwrap_or(0))
}
