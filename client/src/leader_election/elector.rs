//! One candidate's view of the election (upstream's LeaderElector): what it last saw in the
//! Lease and when, and the single step that tries to take or keep the lease.

use std::sync::Arc;

use registry::Store;
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{debug, info};

use super::config::{ConfigError, LeaderElectionConfig};
use super::lock::{LeaseLock, LockError};
use super::record::{micro_time_now, whole_seconds, LeaseRecord};
use super::Leadership;

pub struct LeaderElector {
    pub(super) config: LeaderElectionConfig,
    lock: LeaseLock,
    observed: Option<Observed>,
    pub(super) state: watch::Sender<Leadership>,
}

/// The record as last seen, and when this candidate saw it change. Expiry is judged from that
/// local instant, never from the renewTime inside the record, so clocks of different machines
/// need not agree.
struct Observed {
    spec: Value,
    record: LeaseRecord,
    at: Instant,
}

/// What one try to acquire or renew came to.
pub(super) enum Attempt {
    /// This candidate holds the lease now.
    Held,
    /// Another candidate holds a lease that has not expired.
    HeldBy(String),
    Failed(LockError),
}

impl LeaderElector {
    /// `leases` is the registry's Store for coordination.k8s.io/v1 leases.
    pub fn new(leases: Arc<Store>, config: LeaderElectionConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let lock = LeaseLock::new(leases, config.namespace.clone(), config.name.clone());
        Ok(Self {
            config,
            lock,
            observed: None,
            state: watch::Sender::new(Leadership::default()),
        })
    }

    /// Follows whether this candidate leads and who holds the lease; take it before
    /// [`Self::run`] consumes the elector.
    pub fn status(&self) -> watch::Receiver<Leadership> {
        self.state.subscribe()
    }

    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    pub(super) fn lease(&self) -> String {
        self.lock.describe()
    }

    /// Whether the record as last seen names this candidate.
    fn holds(&self) -> bool {
        self.observed
            .as_ref()
            .is_some_and(|o| o.record.holder_identity == self.config.identity)
    }

    pub(super) async fn try_acquire_or_renew(&mut self) -> Attempt {
        let started = Instant::now();
        let now = micro_time_now();
        let mut desired = LeaseRecord {
            holder_identity: self.config.identity.clone(),
            lease_duration_seconds: whole_seconds(self.config.lease_duration),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: 0,
        };
        if let Some(renewed) = self.renew_optimistically(started, &desired).await {
            return renewed;
        }
        let current = match self.lock.get().await {
            Ok(Some(spec)) => spec,
            Ok(None) => {
                return match self.lock.create(&desired).await {
                    Ok(spec) => {
                        self.observe(spec);
                        Attempt::Held
                    }
                    Err(e) => Attempt::Failed(e),
                };
            }
            Err(e) => return Attempt::Failed(e),
        };
        if self.observed.as_ref().map(|o| &o.spec) != Some(&current) {
            self.observe(current);
        }
        let Some(seen) = &self.observed else {
            return Attempt::Failed(LockError::NotRead);
        };
        let old = &seen.record;
        let held_by_other =
            !old.holder_identity.is_empty() && old.holder_identity != self.config.identity;
        if held_by_other && seen.at + old.lease_duration() > started {
            return Attempt::HeldBy(old.holder_identity.clone());
        }
        if old.holder_identity == self.config.identity {
            desired.acquire_time = old.acquire_time.clone();
            desired.lease_transitions = old.lease_transitions;
        } else {
            desired.lease_transitions = old.lease_transitions.saturating_add(1);
        }
        match self.lock.update(&desired).await {
            Ok(spec) => {
                self.observe(spec);
                Attempt::Held
            }
            Err(e) => Attempt::Failed(e),
        }
    }

    /// The leader's fast path, as upstream's: while the lease it last wrote is still valid, it
    /// writes the renewal over that record without reading it first. Under load this makes a
    /// renewal one write instead of a read and a write; a Conflict (or any failure) falls back
    /// to the read that follows, which decides whether the lease is still ours.
    async fn renew_optimistically(
        &mut self,
        started: Instant,
        desired: &LeaseRecord,
    ) -> Option<Attempt> {
        let seen = self.observed.as_ref()?;
        if !self.holds() || seen.at + seen.record.lease_duration() <= started {
            return None;
        }
        let renewal = LeaseRecord {
            acquire_time: seen.record.acquire_time.clone(),
            lease_transitions: seen.record.lease_transitions,
            ..desired.clone()
        };
        match self.lock.update(&renewal).await {
            Ok(spec) => {
                self.observe(spec);
                Some(Attempt::Held)
            }
            Err(error) => {
                debug!(lease = %self.lease(), %error, "optimistic renewal failed; reading the lease");
                None
            }
        }
    }

    /// Gives the lease up so the next candidate need not wait out its duration: no holder, a
    /// one-second duration, transitions kept. It reads the lease first, as upstream: a renewal
    /// cancelled by the shutdown may have landed without this candidate seeing its result, and
    /// writing over the stale copy would conflict and leave the lease held. A Conflict after
    /// the read means someone took it meanwhile, which is as good.
    pub(super) async fn release(&mut self) -> Result<(), LockError> {
        match self.lock.get().await? {
            Some(spec) => self.observe(spec),
            None => return Ok(()),
        }
        if !self.holds() {
            return Ok(());
        }
        let now = micro_time_now();
        let released = LeaseRecord {
            holder_identity: String::new(),
            lease_duration_seconds: 1,
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: self
                .observed
                .as_ref()
                .map_or(0, |o| o.record.lease_transitions),
        };
        let spec = self.lock.update(&released).await?;
        self.observe(spec);
        info!(lease = %self.lease(), identity = %self.config.identity, "released the lease");
        Ok(())
    }

    fn observe(&mut self, spec: Value) {
        let record = LeaseRecord::from_spec(&spec);
        let holder = Some(record.holder_identity.clone()).filter(|h| !h.is_empty());
        let changed = self.state.send_if_modified(|s| {
            let differs = s.holder != holder;
            s.holder.clone_from(&holder);
            differs
        });
        if changed {
            match &holder {
                Some(h) => info!(lease = %self.lease(), holder = %h, "new leader observed"),
                None => info!(lease = %self.lease(), "the lease has no holder"),
            }
        }
        self.observed = Some(Observed {
            spec,
            record,
            at: Instant::now(),
        });
    }

    pub(super) fn set_leading(&self, leading: bool) {
        self.state.send_if_modified(|s| {
            let differs = s.leading != leading;
            s.leading = leading;
            differs
        });
    }
}
