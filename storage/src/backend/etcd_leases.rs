//! Leases for keys written with a ttl, as upstream's etcd3 leaseManager: one lease serves every
//! write of a similar ttl within a short window, so a burst of events costs one LeaseGrant, not
//! one per event. The lease is granted a little longer than asked (a fraction of the ttl, at
//! most a minute), so a key lives at least its ttl and at most that much longer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use super::etcd::map_error;
use super::etcd_members::Members;
use crate::Result;

/// Upstream's defaults: reuse for 5% of the ttl, at most 60s, at most 1000 keys per lease.
const REUSE_FRACTION: f64 = 0.05;
const MAX_REUSE: Duration = Duration::from_secs(60);
const MAX_KEYS_PER_LEASE: u64 = 1000;

struct Current {
    id: i64,
    expires: Instant,
    attached: u64,
}

pub struct LeaseManager {
    members: Arc<Members>,
    current: Mutex<Option<Current>>,
}

impl LeaseManager {
    pub fn new(members: Arc<Members>) -> Self {
        Self {
            members,
            current: Mutex::new(None),
        }
    }

    /// A lease that keeps a key written now alive at least `ttl` (whole seconds, at least one,
    /// as etcd counts) and not much longer.
    pub async fn lease_for(&self, ttl: Duration) -> Result<i64> {
        let ttl = Duration::from_secs(ttl.as_secs().max(1));
        let reuse = ttl.mul_f64(REUSE_FRACTION).min(MAX_REUSE);
        let reuse = Duration::from_secs(reuse.as_secs());
        let now = Instant::now();
        let mut current = self.current.lock().await;
        if let Some(lease) = current.as_mut() {
            // Long enough for this key, and not so long that it would outlive its ttl by more
            // than the reuse window.
            let long_enough = now + ttl < lease.expires;
            let not_too_long = now + ttl + reuse > lease.expires;
            if long_enough && not_too_long && lease.attached < MAX_KEYS_PER_LEASE {
                lease.attached += 1;
                return Ok(lease.id);
            }
        }
        let granted = ttl + reuse;
        let seconds = i64::try_from(granted.as_secs()).unwrap_or(i64::MAX);
        let resp = self
            .members
            .write(|mut c| async move { c.lease.grant(seconds, None).await })
            .await
            .map_err(map_error)?;
        tracing::debug!(lease = resp.id(), seconds, "granted an etcd lease");
        *current = Some(Current {
            id: resp.id(),
            expires: now + granted,
            attached: 1,
        });
        Ok(resp.id())
    }
}
