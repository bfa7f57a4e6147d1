//! The replica count a resource metric asks for (upstream's ReplicaCalculator:
//! GetResourceReplicas and GetRawResourceReplicas): pods are sorted into ready, unready
//! (pending, or for CPU not ready yet or too recently ready to have a full window), missing
//! (no metrics) and ignored (deleted, failed); the usage ratio of the ready pods decides,
//! within the tolerance (0.1); missing pods count as using their request (or the target) when
//! scaling down and nothing when scaling up, unready pods nothing when scaling up, and a
//! recount that would reverse the direction keeps the current count.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration as ChronoDuration, Utc};
use serde_json::Value;

use super::source::PodMetric;

/// Upstream's --horizontal-pod-autoscaler-tolerance.
pub const TOLERANCE: f64 = 0.1;
/// --horizontal-pod-autoscaler-cpu-initialization-period.
const CPU_INITIALIZATION_SECONDS: i64 = 300;
/// --horizontal-pod-autoscaler-initial-readiness-delay.
const INITIAL_READINESS_DELAY_SECONDS: i64 = 30;

/// What the metric is compared with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// averageUtilization: percent of the pods' requests.
    Utilization(i64),
    /// averageValue, in thousandths.
    AverageMilli(i64),
}

/// The proposal and what was measured.
#[derive(Debug, PartialEq)]
pub struct Proposal {
    pub replicas: i64,
    /// The average utilization (percent of requests), for Utilization targets.
    pub utilization: Option<i64>,
    /// The average usage per pod, in thousandths.
    pub average_milli: i64,
}

fn time(v: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(v.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn ready_condition(pod: &Value) -> Option<&Value> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
}

/// Whether a CPU sample of `pod` is not to be trusted yet (upstream's groupPods).
fn cpu_unready(pod: &Value, metric: &PodMetric, now: DateTime<Utc>) -> bool {
    let (Some(condition), Some(started)) =
        (ready_condition(pod), time(&pod["status"]["startTime"]))
    else {
        return true;
    };
    let transition = time(&condition["lastTransitionTime"]).unwrap_or(started);
    let not_ready = condition["status"] == "False";
    if started + ChronoDuration::seconds(CPU_INITIALIZATION_SECONDS) > now {
        let window = ChronoDuration::from_std(metric.window).unwrap_or_default();
        not_ready || metric.timestamp < transition + window
    } else {
        not_ready && started + ChronoDuration::seconds(INITIAL_READINESS_DELAY_SECONDS) > transition
    }
}

struct Groups {
    ready: i64,
    unready: BTreeSet<String>,
    missing: BTreeSet<String>,
    ignored: BTreeSet<String>,
}

fn group_pods(
    pods: &[Value],
    metrics: &BTreeMap<String, PodMetric>,
    resource: &str,
    now: DateTime<Utc>,
) -> Groups {
    let mut groups = Groups {
        ready: 0,
        unready: BTreeSet::new(),
        missing: BTreeSet::new(),
        ignored: BTreeSet::new(),
    };
    for pod in pods {
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if pod["metadata"]["deletionTimestamp"].is_string() || pod["status"]["phase"] == "Failed" {
            groups.ignored.insert(name);
            continue;
        }
        if pod["status"]["phase"] == "Pending" {
            groups.unready.insert(name);
            continue;
        }
        let Some(metric) = metrics.get(&name) else {
            groups.missing.insert(name);
            continue;
        };
        if resource == "cpu" && cpu_unready(pod, metric, now) {
            groups.unready.insert(name);
            continue;
        }
        groups.ready += 1;
    }
    groups
}

/// Each pod's request of `resource` (all containers', or `container`'s), in thousandths.
fn requests(
    pods: &[Value],
    resource: &str,
    container: Option<&str>,
) -> Result<BTreeMap<String, i64>, String> {
    let mut out = BTreeMap::new();
    for pod in pods {
        let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let mut sum = 0i64;
        for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
            let c_name = c["name"].as_str().unwrap_or_default();
            if container.is_some_and(|wanted| wanted != c_name) {
                continue;
            }
            let request = c["resources"]["requests"][resource]
                .as_str()
                .and_then(registry::quota::Quantity::parse)
                .ok_or_else(|| {
                    format!(
                        "missing request for {resource} in container {c_name} of Pod {pod_name}"
                    )
                })?;
            sum += i64::try_from(request.milli_value()).unwrap_or(i64::MAX);
        }
        out.insert(pod_name.to_string(), sum);
    }
    Ok(out)
}

/// (usage ratio, utilization, average) of the pods in `usage` (upstream's
/// GetResourceUtilizationRatio / GetMetricUsageRatio).
fn ratio(
    usage: &BTreeMap<String, i64>,
    requests: &BTreeMap<String, i64>,
    target: Target,
) -> Result<(f64, Option<i64>, i64), String> {
    let count = usage.len().max(1) as i64;
    let total: i64 = usage.values().sum();
    match target {
        Target::Utilization(percent) => {
            let requested: i64 = usage.keys().filter_map(|p| requests.get(p)).sum();
            if requested == 0 {
                return Err("no metrics returned matched known pods".into());
            }
            let utilization = total * 100 / requested;
            Ok((
                utilization as f64 / percent.max(1) as f64,
                Some(utilization),
                total / count,
            ))
        }
        Target::AverageMilli(value) => {
            let average = total / count;
            Ok((average as f64 / value.max(1) as f64, None, average))
        }
    }
}

/// The replica count `target` asks for; Err in upstream's words.
pub fn propose(
    current: i64,
    target: Target,
    resource: &str,
    container: Option<&str>,
    pods: &[Value],
    metrics: &BTreeMap<String, PodMetric>,
    now: DateTime<Utc>,
) -> Result<Proposal, String> {
    if metrics.is_empty() {
        return Err("no metrics returned from resource metrics API".into());
    }
    if pods.is_empty() {
        return Err("no pods returned by selector while calculating replica count".into());
    }
    let groups = group_pods(pods, metrics, resource, now);
    let mut usage: BTreeMap<String, i64> = BTreeMap::new();
    for (name, metric) in metrics {
        if groups.unready.contains(name) || groups.ignored.contains(name) {
            continue;
        }
        if !pods.iter().any(|p| p["metadata"]["name"] == name.as_str()) {
            continue;
        }
        let value = metric
            .usage(resource, container)
            .ok_or_else(|| match container {
                Some(c) => format!("container {c} not present in metrics for pod {name}"),
                None => format!("missing {resource} metrics for pod {name}"),
            })?;
        usage.insert(name.clone(), value);
    }
    if usage.is_empty() {
        return Err("did not receive metrics for targeted pods (pods might be unready)".into());
    }
    let requests = match target {
        Target::Utilization(_) => requests(pods, resource, container)?,
        Target::AverageMilli(_) => BTreeMap::new(),
    };
    let (usage_ratio, utilization, average_milli) = ratio(&usage, &requests, target)?;
    let proposal = |replicas| Proposal {
        replicas,
        utilization,
        average_milli,
    };
    let scale_up_with_unready = !groups.unready.is_empty() && usage_ratio > 1.0;
    if !scale_up_with_unready && groups.missing.is_empty() {
        if (1.0 - usage_ratio).abs() <= TOLERANCE {
            return Ok(proposal(current));
        }
        return Ok(proposal((usage_ratio * groups.ready as f64).ceil() as i64));
    }
    if !groups.missing.is_empty() {
        for name in &groups.missing {
            let assumed = if usage_ratio < 1.0 {
                match target {
                    Target::Utilization(_) => requests.get(name).copied().unwrap_or(0),
                    Target::AverageMilli(value) => value,
                }
            } else {
                0
            };
            usage.insert(name.clone(), assumed);
        }
    }
    if scale_up_with_unready {
        for name in &groups.unready {
            usage.insert(name.clone(), 0);
        }
    }
    let (new_ratio, _, _) = ratio(&usage, &requests, target)?;
    if (1.0 - new_ratio).abs() <= TOLERANCE
        || (usage_ratio < 1.0 && new_ratio > 1.0)
        || (usage_ratio > 1.0 && new_ratio < 1.0)
    {
        return Ok(proposal(current));
    }
    let replicas = (new_ratio * usage.len() as f64).ceil() as i64;
    if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
        return Ok(proposal(current));
    }
    Ok(proposal(replicas))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        time(&json!("2026-01-01T01:00:00Z")).expect("a time")
    }

    fn pod(name: &str, cpu: &str) -> Value {
        json!({"metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:10Z"}]}})
    }

    fn metric(milli: i64) -> PodMetric {
        PodMetric {
            timestamp: now(),
            window: std::time::Duration::from_secs(15),
            containers: BTreeMap::from([(
                "app".to_string(),
                BTreeMap::from([("cpu".to_string(), milli)]),
            )]),
        }
    }

    #[test]
    fn utilization_above_target_scales_up() {
        let pods = vec![pod("a", "100m"), pod("b", "100m")];
        let metrics = BTreeMap::from([("a".into(), metric(90)), ("b".into(), metric(110))]);
        let p = propose(
            2,
            Target::Utilization(50),
            "cpu",
            None,
            &pods,
            &metrics,
            now(),
        )
        .expect("a proposal");
        assert_eq!(
            (p.replicas, p.utilization, p.average_milli),
            (4, Some(100), 100)
        );
    }

    #[test]
    fn within_tolerance_keeps_the_count() {
        let pods = vec![pod("a", "100m")];
        let metrics = BTreeMap::from([("a".into(), metric(54))]);
        let p = propose(
            1,
            Target::Utilization(50),
            "cpu",
            None,
            &pods,
            &metrics,
            now(),
        )
        .expect("a proposal");
        assert_eq!(p.replicas, 1);
    }

    #[test]
    fn missing_pods_hold_back_a_scale_down() {
        let pods = vec![pod("a", "100m"), pod("b", "100m")];
        // a uses 10% of its request; b has no metrics and counts as using 100%.
        let metrics = BTreeMap::from([("a".into(), metric(10))]);
        let p = propose(
            2,
            Target::Utilization(50),
            "cpu",
            None,
            &pods,
            &metrics,
            now(),
        )
        .expect("a proposal");
        assert_eq!(p.replicas, 2);
    }

    #[test]
    fn average_values_and_missing_requests() {
        let pods = vec![pod("a", "100m")];
        let metrics = BTreeMap::from([("a".into(), metric(300))]);
        let p = propose(
            1,
            Target::AverageMilli(100),
            "cpu",
            None,
            &pods,
            &metrics,
            now(),
        )
        .expect("a proposal");
        assert_eq!(p.replicas, 3);
        let mut bare = pod("a", "1");
        bare["spec"]["containers"][0]["resources"] = json!({});
        let e = propose(
            1,
            Target::Utilization(50),
            "cpu",
            None,
            &[bare],
            &metrics,
            now(),
        );
        assert_eq!(
            e,
            Err("missing request for cpu in container app of Pod a".into())
        );
    }
}
