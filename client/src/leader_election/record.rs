//! The election record as a coordination.k8s.io/v1 Lease's spec carries it, and the MicroTime
//! stamps written into it.

use std::time::Duration;

use serde_json::{json, Value};

/// What the election reads from and writes to a Lease's spec.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LeaseRecord {
    /// Empty when nobody holds the lease (never acquired, or released).
    pub holder_identity: String,
    pub lease_duration_seconds: i64,
    /// Kept as the stored text: the election only copies it forward, never computes with it.
    pub acquire_time: Option<String>,
    pub renew_time: Option<String>,
    pub lease_transitions: i64,
}

impl LeaseRecord {
    /// Absent or mistyped fields read as their zero values, as upstream's conversion does, so a
    /// hand-written Lease never stops the election.
    pub fn from_spec(spec: &Value) -> Self {
        let text = |field: &str| spec.get(field).and_then(Value::as_str).map(str::to_string);
        let number = |field: &str| spec.get(field).and_then(Value::as_i64).unwrap_or(0);
        Self {
            holder_identity: text("holderIdentity").unwrap_or_default(),
            lease_duration_seconds: number("leaseDurationSeconds"),
            acquire_time: text("acquireTime"),
            renew_time: text("renewTime"),
            lease_transitions: number("leaseTransitions"),
        }
    }

    pub fn to_spec(&self) -> Value {
        let mut spec = json!({
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.lease_transitions,
        });
        if let Some(map) = spec.as_object_mut() {
            if let Some(t) = &self.acquire_time {
                map.insert("acquireTime".into(), json!(t));
            }
            if let Some(t) = &self.renew_time {
                map.insert("renewTime".into(), json!(t));
            }
        }
        spec
    }

    pub fn lease_duration(&self) -> Duration {
        Duration::from_secs(self.lease_duration_seconds.max(0).unsigned_abs())
    }
}

/// Now as a metav1.MicroTime: RFC 3339 in UTC with exactly six fractional digits.
pub(crate) fn micro_time_now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// Whole seconds for leaseDurationSeconds, rounded up: a stored duration shorter than the one
/// the holder works to would let others take over while it still believes it leads.
pub(crate) fn whole_seconds(d: Duration) -> i64 {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    i64::try_from(secs).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_round_trips() {
        let record = LeaseRecord {
            holder_identity: "a_1".into(),
            lease_duration_seconds: 15,
            acquire_time: Some("2026-11-21T10:00:00.123456Z".into()),
            renew_time: Some("2026-11-21T10:00:02.000001Z".into()),
            lease_transitions: 3,
        };
        assert_eq!(LeaseRecord::from_spec(&record.to_spec()), record);
    }

    #[test]
    fn empty_spec_is_unheld() {
        let record = LeaseRecord::from_spec(&json!({}));
        assert_eq!(record, LeaseRecord::default());
        assert_eq!(record.lease_duration(), Duration::ZERO);
    }

    #[test]
    fn micro_time_has_six_fractional_digits() {
        let now = micro_time_now();
        let parsed = chrono::DateTime::parse_from_rfc3339(&now).expect("RFC 3339");
        assert_eq!(parsed.offset().local_minus_utc(), 0);
        let fraction = now
            .split('.')
            .nth(1)
            .and_then(|f| f.strip_suffix('Z'))
            .expect("fraction");
        assert_eq!(fraction.len(), 6, "{now}");
    }

    #[test]
    fn durations_round_up_to_seconds() {
        assert_eq!(whole_seconds(Duration::from_secs(15)), 15);
        assert_eq!(whole_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(whole_seconds(Duration::from_millis(300)), 1);
    }
}
