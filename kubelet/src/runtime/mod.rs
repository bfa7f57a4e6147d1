//! The simulated container runtime: what a CRI runtime and the kubelet's pod workers do to a
//! pod's containers, as pure state over time. [`PodRuntime::advance`] moves a pod to `now`
//! (starts, exits, probe verdicts, restarts with CrashLoopBackOff) and
//! [`PodRuntime::deadline`] says when something happens next, so a pod worker only wakes
//! when there is work.

pub mod backoff;
pub mod container;
pub mod pod;
pub mod probe;
mod resume;

pub use container::{Container, State, Termination};
pub use pod::{PodRuntime, RuntimeEvent};

/// A duration as Go prints it (`10s`, `2m40s`, `500ms`), for messages upstream formats so.
pub fn go_duration(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m{s}s"),
        (h, m) => format!("{h}h{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::go_duration;
    use std::time::Duration;

    #[test]
    fn formats_as_go() {
        assert_eq!(go_duration(Duration::from_secs(10)), "10s");
        assert_eq!(go_duration(Duration::from_secs(160)), "2m40s");
        assert_eq!(go_duration(Duration::from_secs(300)), "5m0s");
        assert_eq!(go_duration(Duration::from_millis(500)), "500ms");
    }
}
