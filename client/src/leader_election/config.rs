//! What an election is run with: which Lease, who is campaigning, and its timings.

use std::time::Duration;

/// Upstream's defaults for kube-controller-manager and kube-scheduler.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// Candidates wait between one and `1 + JITTER_FACTOR` retry periods between attempts, so that
/// replicas started together do not keep colliding.
pub(crate) const JITTER_FACTOR: f64 = 1.2;

#[derive(Clone, Debug)]
pub struct LeaderElectionConfig {
    pub namespace: String,
    pub name: String,
    /// Unique per candidate; see [`default_identity`].
    pub identity: String,
    /// How long others wait, after they last saw the record change, before taking the lease.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives leadership up. Shorter than
    /// the lease duration, so the leader stops before anyone else can start.
    pub renew_deadline: Duration,
    /// The pause between attempts to acquire or renew.
    pub retry_period: Duration,
    /// Release the lease on shutdown so another candidate takes over at once rather than after
    /// the lease duration.
    pub release_on_cancel: bool,
}

impl LeaderElectionConfig {
    /// Upstream's timings. Releasing on shutdown is on: [`super::LeaderElector::run`] waits for
    /// the leader's work to finish before it releases, which is what makes releasing safe.
    pub fn new(
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            release_on_cancel: true,
        }
    }

    /// Upstream's constraints: without them a leader could still believe it leads after
    /// another candidate took over.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.namespace.is_empty() || self.name.is_empty() {
            return Err(ConfigError::NoLease);
        }
        if self.identity.is_empty() {
            return Err(ConfigError::NoIdentity);
        }
        if self.retry_period.is_zero() {
            return Err(ConfigError::ZeroRetryPeriod);
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(ConfigError::LeaseNotLongerThanRenew);
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return Err(ConfigError::RenewNotLongerThanRetry);
        }
        Ok(())
    }
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("leader election needs a lease namespace and name")]
    NoLease,
    #[error("leader election needs a candidate identity")]
    NoIdentity,
    #[error("the retry period must be positive")]
    ZeroRetryPeriod,
    #[error("the lease duration must be longer than the renew deadline")]
    LeaseNotLongerThanRenew,
    #[error("the renew deadline must be longer than {JITTER_FACTOR} retry periods")]
    RenewNotLongerThanRetry,
}

/// `<hostname>_<uuid>`, as upstream's components name themselves: the host tells people which
/// replica leads, the uuid keeps two processes on one host apart.
pub fn default_identity() -> String {
    format!("{}_{}", hostname(), uuid::Uuid::new_v4())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> LeaderElectionConfig {
        LeaderElectionConfig::new("kube-system", "kube-controller-manager", "me")
    }

    #[test]
    fn defaults_are_valid() {
        assert_eq!(config().validate(), Ok(()));
    }

    #[test]
    fn renew_deadline_must_be_shorter_than_lease() {
        let c = LeaderElectionConfig {
            renew_deadline: DEFAULT_LEASE_DURATION,
            ..config()
        };
        assert_eq!(c.validate(), Err(ConfigError::LeaseNotLongerThanRenew));
    }

    #[test]
    fn retries_must_fit_in_renew_deadline() {
        let c = LeaderElectionConfig {
            retry_period: Duration::from_secs(9),
            ..config()
        };
        assert_eq!(c.validate(), Err(ConfigError::RenewNotLongerThanRetry));
    }

    #[test]
    fn identity_is_host_and_unique_suffix() {
        let a = default_identity();
        let b = default_identity();
        assert_ne!(a, b);
        let (host, suffix) = a.rsplit_once('_').expect("host_uuid");
        assert!(!host.is_empty());
        assert!(uuid::Uuid::parse_str(suffix).is_ok());
    }
}
