//! From the metrics' proposal to the count written (upstream's normalizeDesiredReplicas and
//! normalizeDesiredReplicasWithBehaviors): recommendations are stabilized over a window
//! (scale-down: the highest of the last 5 min, or `behavior`'s windows), then limited by the
//! scale rate (without `behavior`: at most max(2×current, 4); with it, its Pods and Percent
//! policies over their periods, from the scale events this controller made) and by min and
//! max. The AbleToScale and ScalingLimited conditions say which rule decided, in upstream's
//! words.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

/// --horizontal-pod-autoscaler-downscale-stabilization.
const DOWNSCALE_STABILIZATION: Duration = Duration::from_secs(300);

/// A condition to set: type, status, reason, message.
pub type Condition = (&'static str, &'static str, &'static str, &'static str);

#[derive(Clone, Copy)]
struct Recommendation {
    replicas: i64,
    at: Instant,
}

#[derive(Clone, Copy)]
struct ScaleEvent {
    change: i64,
    at: Instant,
}

#[derive(Default)]
struct History {
    recommendations: Vec<Recommendation>,
    ups: Vec<ScaleEvent>,
    downs: Vec<ScaleEvent>,
}

/// What the controller remembers of each autoscaler between syncs.
#[derive(Default)]
pub struct Normalizer {
    histories: Mutex<HashMap<String, History>>,
}

/// One direction's rules (HPAScalingRules), with upstream's defaults filled in.
struct Rules {
    window: Duration,
    select: String,
    /// (type, value, period)
    policies: Vec<(String, i64, Duration)>,
}

fn rules(behavior: &Value, up: bool) -> Rules {
    let (default_window, default_policies) = if up {
        (
            0,
            vec![
                ("Pods".to_string(), 4, Duration::from_secs(15)),
                ("Percent".to_string(), 100, Duration::from_secs(15)),
            ],
        )
    } else {
        (
            DOWNSCALE_STABILIZATION.as_secs() as i64,
            vec![("Percent".to_string(), 100, Duration::from_secs(15))],
        )
    };
    let policies: Vec<(String, i64, Duration)> = behavior["policies"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|p| {
                    (
                        p["type"].as_str().unwrap_or_default().to_string(),
                        p["value"].as_i64().unwrap_or(0),
                        Duration::from_secs(p["periodSeconds"].as_u64().unwrap_or(15)),
                    )
                })
                .collect()
        })
        .unwrap_or(default_policies);
    Rules {
        window: Duration::from_secs(
            behavior["stabilizationWindowSeconds"]
                .as_u64()
                .unwrap_or(default_window as u64),
        ),
        select: behavior["selectPolicy"]
            .as_str()
            .unwrap_or("Max")
            .to_string(),
        policies,
    }
}

fn changed_within(events: &[ScaleEvent], period: Duration, now: Instant) -> i64 {
    events
        .iter()
        .filter(|e| now.duration_since(e.at) <= period)
        .map(|e| e.change)
        .sum()
}

fn scale_up_limit(current: i64, events: &[ScaleEvent], rules: &Rules, now: Instant) -> i64 {
    if rules.select == "Disabled" {
        return current;
    }
    let min_change = rules.select == "Min";
    let mut result = if min_change { i64::MAX } else { i64::MIN };
    for (kind, value, period) in &rules.policies {
        let start = current - changed_within(events, *period, now);
        let proposed = if kind == "Pods" {
            start + value
        } else {
            (start as f64 * (1.0 + *value as f64 / 100.0)).ceil() as i64
        };
        result = if min_change {
            result.min(proposed)
        } else {
            result.max(proposed)
        };
    }
    result
}

fn scale_down_limit(current: i64, events: &[ScaleEvent], rules: &Rules, now: Instant) -> i64 {
    if rules.select == "Disabled" {
        return current;
    }
    let min_change = rules.select == "Min";
    let mut result = if min_change { i64::MIN } else { i64::MAX };
    for (kind, value, period) in &rules.policies {
        let start = current + changed_within(events, *period, now);
        let proposed = if kind == "Pods" {
            start - value
        } else {
            (start as f64 * (1.0 - *value as f64 / 100.0)) as i64
        };
        result = if min_change {
            result.max(proposed)
        } else {
            result.min(proposed)
        };
    }
    result
}

impl Normalizer {
    /// The count to scale to, and the AbleToScale and ScalingLimited conditions.
    pub fn normalize(
        &self,
        key: &str,
        spec: &Value,
        current: i64,
        proposed: i64,
    ) -> (i64, Vec<Condition>) {
        let min = spec["minReplicas"].as_i64().unwrap_or(1);
        let max = spec["maxReplicas"].as_i64().unwrap_or(0);
        let behavior = &spec["behavior"];
        let now = Instant::now();
        let Ok(mut histories) = self.histories.lock() else {
            return (current, Vec::new());
        };
        let history = histories.entry(key.to_string()).or_default();
        let with_behavior = behavior.is_object();
        let (up, down) = (
            rules(&behavior["scaleUp"], true),
            rules(&behavior["scaleDown"], false),
        );
        // Stabilization.
        let (window, upward) = if !with_behavior {
            (DOWNSCALE_STABILIZATION, false)
        } else if proposed >= current {
            (up.window, true)
        } else {
            (down.window, false)
        };
        let keep = if with_behavior {
            up.window.max(down.window)
        } else {
            window
        };
        let mut stabilized = proposed;
        for r in &history.recommendations {
            if now.duration_since(r.at) <= window {
                stabilized = if upward {
                    stabilized.min(r.replicas)
                } else {
                    stabilized.max(r.replicas)
                };
            }
        }
        history
            .recommendations
            .retain(|r| now.duration_since(r.at) <= keep);
        history.recommendations.push(Recommendation {
            replicas: proposed,
            at: now,
        });
        let mut conditions = Vec::new();
        conditions.push(if stabilized == proposed {
            ("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
        } else if upward {
            ("AbleToScale", "True", "ScaleUpStabilized",
                "recent recommendations were lower than current one, applying the lowest recent recommendation")
        } else {
            ("AbleToScale", "True", "ScaleDownStabilized",
                "recent recommendations were higher than current one, applying the highest recent recommendation")
        });
        // The rate and the range.
        let (desired, reason, message) = if with_behavior {
            self.limit_with_behavior(history, &up, &down, current, stabilized, min, max, now)
        } else {
            limit_with_rules(current, stabilized, min, max)
        };
        let status = if desired == stabilized {
            "False"
        } else {
            "True"
        };
        conditions.push(("ScalingLimited", status, reason, message));
        (desired, conditions)
    }

    #[allow(clippy::too_many_arguments)]
    fn limit_with_behavior(
        &self,
        history: &History,
        up: &Rules,
        down: &Rules,
        current: i64,
        desired: i64,
        min: i64,
        max: i64,
        now: Instant,
    ) -> (i64, &'static str, &'static str) {
        if desired > current {
            let limit = scale_up_limit(current, &history.ups, up, now).max(current);
            let (allowed, reason, message) = if max > limit {
                (
                    limit,
                    "ScaleUpLimit",
                    "the desired replica count is increasing faster than the maximum scale rate",
                )
            } else {
                (
                    max,
                    "TooManyReplicas",
                    "the desired replica count is more than the maximum replica count",
                )
            };
            if desired > allowed {
                return (allowed, reason, message);
            }
        } else if desired < current {
            let limit = scale_down_limit(current, &history.downs, down, now).min(current);
            let (allowed, reason, message) = if min < limit {
                (
                    limit,
                    "ScaleDownLimit",
                    "the desired replica count is decreasing faster than the maximum scale rate",
                )
            } else {
                (
                    min,
                    "TooFewReplicas",
                    "the desired replica count is less than the minimum replica count",
                )
            };
            if desired < allowed {
                return (allowed, reason, message);
            }
        }
        (
            desired,
            "DesiredWithinRange",
            "the desired count is within the acceptable range",
        )
    }

    /// Remembers a rescale for the rate policies.
    pub fn record_scale(&self, key: &str, from: i64, to: i64) {
        let Ok(mut histories) = self.histories.lock() else {
            return;
        };
        let history = histories.entry(key.to_string()).or_default();
        let now = Instant::now();
        // Events older than any policy period no longer count (upstream marks them outdated).
        let horizon = Duration::from_secs(1800);
        history.ups.retain(|e| now.duration_since(e.at) <= horizon);
        history
            .downs
            .retain(|e| now.duration_since(e.at) <= horizon);
        let event = ScaleEvent {
            change: (to - from).abs(),
            at: now,
        };
        if to > from {
            history.ups.push(event);
        } else if to < from {
            history.downs.push(event);
        }
    }

    pub fn forget(&self, key: &str) {
        if let Ok(mut histories) = self.histories.lock() {
            histories.remove(key);
        }
    }
}

/// Without `behavior`: at most max(2×current, 4) at once, and within min..max.
fn limit_with_rules(
    current: i64,
    desired: i64,
    min: i64,
    max: i64,
) -> (i64, &'static str, &'static str) {
    let up_limit = (2 * current).max(4);
    let (allowed_max, reason, message) = if max > up_limit {
        (
            up_limit,
            "ScaleUpLimit",
            "the desired replica count is increasing faster than the maximum scale rate",
        )
    } else {
        (
            max,
            "TooManyReplicas",
            "the desired replica count is more than the maximum replica count",
        )
    };
    if desired < min {
        return (
            min,
            "TooFewReplicas",
            "the desired replica count is less than the minimum replica count",
        );
    }
    if desired > allowed_max {
        return (allowed_max, reason, message);
    }
    (
        desired,
        "DesiredWithinRange",
        "the desired count is within the acceptable range",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scale_down_is_stabilized_and_scale_up_limited() {
        let n = Normalizer::default();
        let spec = json!({"minReplicas": 1, "maxReplicas": 20});
        let (up, conditions) = n.normalize("ns/a", &spec, 2, 10);
        assert_eq!(up, 4);
        assert_eq!(conditions[1].2, "ScaleUpLimit");
        // A lower recommendation within five minutes of a higher one is held up.
        let (down, conditions) = n.normalize("ns/a", &spec, 4, 2);
        assert_eq!(down, 8);
        assert_eq!(conditions[0].2, "ScaleDownStabilized");
    }

    #[test]
    fn behaviors_limit_by_policy() {
        let n = Normalizer::default();
        let spec = json!({"minReplicas": 1, "maxReplicas": 20, "behavior": {
            "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]},
            "scaleDown": {"stabilizationWindowSeconds": 0}}});
        let (first, _) = n.normalize("ns/b", &spec, 2, 6);
        assert_eq!(first, 3);
        n.record_scale("ns/b", 2, 3);
        let (second, conditions) = n.normalize("ns/b", &spec, 3, 6);
        assert_eq!(second, 3);
        assert_eq!(conditions[1].2, "ScaleUpLimit");
        let (down, _) = n.normalize("ns/b", &spec, 3, 1);
        assert_eq!(down, 1);
    }
}
