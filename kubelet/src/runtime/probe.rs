//! Probe timing as upstream's prober workers have it: a worker ticks every periodSeconds
//! from the container's start, skips ticks before initialDelaySeconds (and, for readiness
//! and liveness, before the container counts as started), and turns a result over after
//! successThreshold successes or failureThreshold failures in a row. Results are simulated
//! (the container's script), so the verdict times follow from the spec alone.

use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub initial_delay: Duration,
    pub period: Duration,
    pub success_threshold: u32,
    pub failure_threshold: u32,
}

fn field(probe: &Value, name: &str, default: u64) -> u64 {
    probe[name].as_u64().filter(|v| *v > 0).unwrap_or(default)
}

impl Probe {
    /// The container's `readinessProbe`, `livenessProbe` or `startupProbe`, with upstream's
    /// defaults (period 10 s, success 1, failure 3).
    pub fn of(container: &Value, kind: &str) -> Option<Self> {
        let probe = container.get(kind).filter(|p| p.is_object())?;
        Some(Self {
            initial_delay: Duration::from_secs(probe["initialDelaySeconds"].as_u64().unwrap_or(0)),
            period: Duration::from_secs(field(probe, "periodSeconds", 10)),
            success_threshold: field(probe, "successThreshold", 1) as u32,
            failure_threshold: field(probe, "failureThreshold", 3) as u32,
        })
    }

    /// The first tick at or after both the initial delay and `not_before`.
    fn first_tick(&self, start: Instant, not_before: Instant) -> Instant {
        let wait = (start + self.initial_delay).max(not_before) - start;
        let period = self.period.as_millis().max(1);
        let ticks = wait.as_millis().div_ceil(period);
        start + Duration::from_millis((ticks * period) as u64)
    }

    /// When the probe first succeeds (`success_threshold` passing ticks).
    pub fn succeeds_at(&self, start: Instant, not_before: Instant) -> Instant {
        self.first_tick(start, not_before) + self.period * (self.success_threshold - 1)
    }

    /// When the probe has failed `failure_threshold` ticks in a row.
    pub fn fails_at(&self, start: Instant, not_before: Instant) -> Instant {
        self.first_tick(start, not_before) + self.period * (self.failure_threshold - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn verdicts_follow_the_ticks() {
        let c = json!({"readinessProbe": {"initialDelaySeconds": 5, "periodSeconds": 2}});
        let p = Probe::of(&c, "readinessProbe").unwrap();
        let t = Instant::now();
        assert_eq!(p.succeeds_at(t, t), t + Duration::from_secs(6));
        assert_eq!(p.fails_at(t, t), t + Duration::from_secs(10));
        assert!(Probe::of(&c, "livenessProbe").is_none());
        let d = Probe::of(&json!({"startupProbe": {}}), "startupProbe").unwrap();
        assert_eq!(d.succeeds_at(t, t), t);
    }
}
