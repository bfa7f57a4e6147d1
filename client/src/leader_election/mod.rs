//! Leader election over a coordination.k8s.io/v1 Lease, as upstream's client-go
//! leaderelection with a LeaseLock: with several API server replicas on one etcd, only the
//! holder of the Lease runs the in-process controllers, and another replica takes over when it
//! stops renewing.
//!
//! ```ignore
//! let config = LeaderElectionConfig::new("kube-system", "kube-controller-manager", default_identity());
//! let elector = LeaderElector::new(leases, config)?;
//! let status = elector.status(); // status.borrow().leading
//! tokio::spawn(elector.run(shutdown, |stop| async move { run_controllers(stop).await }));
//! // or, with renewals kept apart from a busy runtime:
//! elector.spawn_on_own_thread(Handle::current(), token, |stop| async move { run_controllers(stop).await })?;
//! ```

mod config;
mod elector;
mod lock;
mod record;
mod run;
mod thread;

use tokio_util::sync::CancellationToken;

pub use config::{
    default_identity, ConfigError, LeaderElectionConfig, DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD,
};
pub use elector::LeaderElector;

/// The election as one candidate sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Leadership {
    /// True from acquiring the lease until the term's [`StopSignal`] fires.
    pub leading: bool,
    /// The holder named in the Lease as last read; None while nobody holds it.
    pub holder: Option<String>,
}

/// Given to the leader's work: fires when leadership is lost or shutdown begins, or when the
/// elector goes away (nothing renews the lease any more). The server's one cancellation
/// mechanism, a [`CancellationToken`], underneath.
#[derive(Clone, Debug)]
pub struct StopSignal(CancellationToken);

impl StopSignal {
    fn new(term: CancellationToken) -> Self {
        Self(term)
    }

    pub fn is_stopped(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Resolves once the work must stop.
    pub async fn stopped(&self) {
        self.0.cancelled().await
    }

    /// The term as a token, for work that takes one.
    pub fn token(&self) -> CancellationToken {
        self.0.clone()
    }
}
