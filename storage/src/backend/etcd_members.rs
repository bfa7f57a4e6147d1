//! The etcd cluster's members as seen by one API server: one client per endpoint, each member's
//! health from request outcomes and a periodic status probe, and the order in which a request
//! tries them. Upstream's clientv3 balances over healthy endpoints and retries reads that found a
//! member unavailable on another one; a single balanced channel over every endpoint kept sending
//! to a dead member, so this picks members itself.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use etcd_client::{Client, ConnectOptions, KvClient, LeaseClient, WatchClient};
use tonic::Code;

/// The largest response read from etcd. gRPC's default of 4 MiB would fail any full list of
/// a large collection; upstream's etcd client accepts up to 2 GiB (clientv3's default
/// MaxCallRecvMsgSize), and so do we.
const MAX_RESPONSE_BYTES: usize = i32::MAX as usize;

/// How often healthy members are probed, and how long a probe may take.
const PROBE_INTERVAL: Duration = Duration::from_millis(500);
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Retry delays for a failed member: doubling from the first to the last.
const BACKOFF_FIRST: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// One member's clients; cheap to clone (they share the member's channel).
#[derive(Clone)]
pub struct Conn {
    pub client: Client,
    pub kv: KvClient,
    pub watch: WatchClient,
    pub lease: LeaseClient,
}

/// How often a read in flight looks whether its member has since been found dead.
const ABANDON_CHECK: Duration = Duration::from_millis(100);

/// A member's health: failures in a row (0 is healthy), when it last failed and when it may be
/// tried again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemberHealth {
    failures: u32,
    failed_at: Option<Instant>,
    retry_at: Option<Instant>,
}

impl MemberHealth {
    pub fn healthy(&self) -> bool {
        self.failures == 0
    }

    /// Failures in a row; 0 when healthy.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// Whether the member was found failing after `t` (by a probe or another request).
    fn failed_after(&self, t: Instant) -> bool {
        self.failed_at.is_some_and(|at| at > t)
    }

    fn failed(&mut self, now: Instant) {
        self.failures = self.failures.saturating_add(1);
        self.failed_at = Some(now);
        self.retry_at = Some(now + backoff(self.failures));
    }

    fn succeeded(&mut self) {
        *self = Self::default();
    }

    /// Whether the prober should ask this member now: healthy ones every round, failed ones
    /// once their back-off has passed.
    fn due(&self, now: Instant) -> bool {
        self.retry_at.is_none_or(|at| at <= now)
    }
}

/// The wait after `failures` failures in a row.
pub fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    BACKOFF_FIRST
        .saturating_mul(1 << doublings)
        .min(BACKOFF_MAX)
}

/// The order in which a request tries members: the healthy ones round-robin from `start`, then
/// the failed ones, soonest retry first, as a last resort (all may have failed only briefly).
pub fn pick_order(health: &[MemberHealth], start: usize) -> Vec<usize> {
    let n = health.len();
    let mut order: Vec<usize> = (0..n)
        .map(|i| (start + i) % n.max(1))
        .filter(|&i| health[i].healthy())
        .collect();
    let mut failed: Vec<usize> = (0..n).filter(|&i| !health[i].healthy()).collect();
    failed.sort_by_key(|&i| health[i].retry_at);
    order.extend(failed);
    order
}

struct Member {
    endpoint: String,
    conn: Conn,
    health: Mutex<MemberHealth>,
}

pub struct Members {
    members: Vec<Member>,
    next: AtomicUsize,
    /// How long a request waits for a member when none can be reached.
    wait_for_member: Duration,
}

impl Members {
    /// One lazily connecting client per endpoint (etcd need not be up yet), and a prober that
    /// runs for as long as the members are in use.
    /// `wait_for_member` bounds how long a request waits for a member to come back when all
    /// are silent (see [`attempt`](Self::attempt)).
    pub async fn connect(
        endpoints: &[String],
        options: ConnectOptions,
        wait_for_member: Duration,
    ) -> Result<Arc<Self>, etcd_client::Error> {
        let mut members = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            let client = Client::connect([endpoint.as_str()], Some(options.clone())).await?;
            let conn = Conn {
                kv: client
                    .kv_client()
                    .max_decoding_message_size(MAX_RESPONSE_BYTES),
                watch: client
                    .watch_client()
                    .max_decoding_message_size(MAX_RESPONSE_BYTES),
                lease: client.lease_client(),
                client,
            };
            members.push(Member {
                endpoint: endpoint.clone(),
                conn,
                health: Mutex::new(MemberHealth::default()),
            });
        }
        if members.is_empty() {
            return Err(etcd_client::Error::InvalidArgs(
                "no etcd endpoints given".into(),
            ));
        }
        let members = Arc::new(Self {
            members,
            next: AtomicUsize::new(0),
            wait_for_member,
        });
        tokio::spawn(probe_loop(Arc::downgrade(&members)));
        Ok(members)
    }

    /// The first member's client, for callers that measure against raw etcd.
    pub fn first_client(&self) -> Client {
        self.members[0].conn.client.clone()
    }

    fn health(&self, i: usize) -> MemberHealth {
        *self.members[i]
            .health
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, i: usize, f: impl FnOnce(&mut MemberHealth)) {
        let member = &self.members[i];
        let mut health = member.health.lock().unwrap_or_else(|e| e.into_inner());
        let was = health.healthy();
        f(&mut health);
        if was != health.healthy() {
            if health.healthy() {
                tracing::info!(endpoint = %member.endpoint, "etcd member is healthy again");
            } else {
                tracing::warn!(endpoint = %member.endpoint, "etcd member failed; avoiding it");
            }
        }
    }

    fn order(&self) -> Vec<usize> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let health: Vec<_> = (0..self.members.len()).map(|i| self.health(i)).collect();
        pick_order(&health, start % self.members.len())
    }

    /// Each endpoint and its current health.
    pub fn endpoints(&self) -> Vec<(String, MemberHealth)> {
        (0..self.members.len())
            .map(|i| (self.members[i].endpoint.clone(), self.health(i)))
            .collect()
    }

    /// Runs a read on a healthy member; one that fails as unavailable is tried on the next
    /// member, as clientv3 retries Unavailable reads. A read whose member stops answering (the
    /// prober finds it dead while the read waits: a partition or a stalled process, where
    /// nothing fails and TCP only retransmits) is abandoned and sent to the next member. That
    /// is the per-attempt deadline: liveness rather than a fixed time, so a large list from a
    /// live but busy member is never cut off and repeated elsewhere. The last member tried is
    /// waited for (up to the client's request timeout), so a request with nowhere else to go
    /// ends at the API server's `--request-timeout`, as upstream's does.
    pub async fn read<T, F, Fut>(&self, mut op: F) -> Result<T, etcd_client::Error>
    where
        F: FnMut(Conn) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        self.attempt(&mut op, is_unavailable, true).await
    }

    /// Runs a write on a healthy member; it moves to the next member only when it provably
    /// never reached the first (the connection was refused), as a write that may have been
    /// applied must not be applied twice.
    pub async fn write<T, F, Fut>(&self, mut op: F) -> Result<T, etcd_client::Error>
    where
        F: FnMut(Conn) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        // Never abandoned: a write in flight may be applied, so it is not sent again.
        self.attempt(&mut op, never_sent, false).await
    }

    /// Rounds over the members until one answers. A round in which every member was
    /// unreachable in silence (connections timing out or dropped, nothing refused) is followed
    /// by a wait for one to come back, as clientv3 waits for a connection (gRPC's
    /// waitForReady): a request across a partition ends at the API server's
    /// `--request-timeout` with upstream's 504, not with a quick 503 once the dead connection
    /// is dropped. The wait is bounded by the client's request timeout, for callers that have
    /// no deadline of their own; a refused connection (nothing listens) fails at once.
    async fn attempt<T, F, Fut>(
        &self,
        op: &mut F,
        retryable: fn(&etcd_client::Error) -> bool,
        abandon_dead: bool,
    ) -> Result<T, etcd_client::Error>
    where
        F: FnMut(Conn) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let deadline = Instant::now() + self.wait_for_member;
        loop {
            let (err, silent) = match self.round(op, retryable, abandon_dead).await {
                Ok(value) => return Ok(value),
                Err(failed) => failed,
            };
            if !silent || Instant::now() >= deadline {
                return Err(err);
            }
            self.until_one_may_answer(deadline).await;
        }
    }

    /// Each member once, in [`order`](Self::order). Err: the last error, and whether every
    /// member failed in silence.
    async fn round<T, F, Fut>(
        &self,
        op: &mut F,
        retryable: fn(&etcd_client::Error) -> bool,
        abandon_dead: bool,
    ) -> Result<T, (etcd_client::Error, bool)>
    where
        F: FnMut(Conn) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let order = self.order();
        let count = order.len();
        let mut last = None;
        let mut silent = true;
        for (k, i) in order.into_iter().enumerate() {
            let call = op(self.members[i].conn.clone());
            let outcome = if abandon_dead && k + 1 < count {
                self.unless_found_dead(i, call).await
            } else {
                Some(call.await)
            };
            let Some(outcome) = outcome else {
                let endpoint = &self.members[i].endpoint;
                tracing::debug!(%endpoint, "etcd member stopped answering a read; trying another member");
                last = Some(etcd_client::Error::GRpcStatus(tonic::Status::unavailable(
                    format!("etcd member {endpoint} stopped answering"),
                )));
                continue;
            };
            match outcome {
                Ok(value) => {
                    self.update(i, MemberHealth::succeeded);
                    return Ok(value);
                }
                Err(err) => {
                    let transport = is_transport_failure(&err);
                    if transport {
                        self.update(i, |h| h.failed(Instant::now()));
                    }
                    if !retryable(&err) {
                        return Err((err, false));
                    }
                    silent &= transport && !refused(&err);
                    tracing::debug!(endpoint = %self.members[i].endpoint, error = %err, "etcd request failed; trying another member");
                    last = Some(err);
                }
            }
        }
        let err =
            last.unwrap_or_else(|| etcd_client::Error::InvalidArgs("no etcd endpoints".into()));
        Err((err, silent))
    }

    /// Waits until a member is healthy again or due to be tried (its back-off passed), or
    /// `deadline`.
    async fn until_one_may_answer(&self, deadline: Instant) {
        loop {
            let now = Instant::now();
            let any = (0..self.members.len()).any(|i| {
                let h = self.health(i);
                h.healthy() || h.due(now)
            });
            if any || now >= deadline {
                return;
            }
            tokio::time::sleep(ABANDON_CHECK).await;
        }
    }
}

impl Members {
    /// `call`'s outcome, or None once member `i` is found failing after the call began.
    async fn unless_found_dead<T>(&self, i: usize, call: impl Future<Output = T>) -> Option<T> {
        let started = Instant::now();
        tokio::pin!(call);
        let mut check = tokio::time::interval(ABANDON_CHECK);
        check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                out = &mut call => return Some(out),
                _ = check.tick() => {
                    if self.health(i).failed_after(started) {
                        return None;
                    }
                }
            }
        }
    }
}

/// Asks every due member for its status (alive, and knowing a leader); stops when the members are dropped.
async fn probe_loop(members: Weak<Members>) {
    let mut ticker = tokio::time::interval(PROBE_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let Some(members) = members.upgrade() else {
            return;
        };
        let now = Instant::now();
        let due: Vec<usize> = (0..members.members.len())
            .filter(|&i| members.health(i).due(now))
            .collect();
        let probes = due.iter().map(|&i| {
            let mut maintenance = members.members[i].conn.client.maintenance_client();
            async move {
                let answer = tokio::time::timeout(PROBE_TIMEOUT, maintenance.status()).await;
                // A member that knows no leader (restarting, or cut off) would hold a write
                // until etcd's own request timeout: as etcd's /health, count it unhealthy.
                (i, matches!(answer, Ok(Ok(status)) if status.leader() != 0))
            }
        });
        for (i, ok) in futures::future::join_all(probes).await {
            if ok {
                members.update(i, MemberHealth::succeeded);
            } else {
                members.update(i, |h| h.failed(Instant::now()));
            }
        }
    }
}

/// The member itself could not be reached or dropped the connection (as opposed to an answer
/// from a live member, such as "leader changed" during an election).
pub fn is_transport_failure(err: &etcd_client::Error) -> bool {
    use etcd_client::Error as E;
    match err {
        E::TransportError(_) | E::IoError(_) => true,
        E::GRpcStatus(status) => {
            let mut source = std::error::Error::source(status);
            while let Some(e) = source {
                if e.is::<tonic::transport::Error>() || e.is::<std::io::Error>() {
                    return true;
                }
                source = e.source();
            }
            false
        }
        _ => false,
    }
}

fn is_unavailable(err: &etcd_client::Error) -> bool {
    match err {
        etcd_client::Error::GRpcStatus(status) => {
            matches!(status.code(), Code::Unavailable) || is_transport_failure(err)
        }
        other => is_transport_failure(other),
    }
}

/// Whether `test` holds for any cause of `err` (the transport and I/O errors under it).
fn any_cause(
    err: &etcd_client::Error,
    test: impl Fn(&(dyn std::error::Error + 'static)) -> bool,
) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = match err {
        etcd_client::Error::GRpcStatus(status) => std::error::Error::source(status),
        etcd_client::Error::IoError(io) => Some(io),
        etcd_client::Error::TransportError(e) => Some(e),
        _ => None,
    };
    while let Some(e) = source {
        if test(e) {
            return true;
        }
        source = e.source();
    }
    false
}

fn io_kind(e: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    e.downcast_ref::<std::io::Error>().map(std::io::Error::kind)
}

/// The member's host answered that nothing is there: the connection was refused, or reset
/// or broken by a process that died (the peer's kernel answering; a partition only ever times
/// out). An answer rather than silence.
fn refused(err: &etcd_client::Error) -> bool {
    use std::io::ErrorKind as K;
    any_cause(err, |e| {
        matches!(
            io_kind(e),
            Some(K::ConnectionRefused | K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe)
        ) || e.to_string().contains("Connection refused")
    })
}

/// The request never left: the member refused the connection (or none could be made).
fn never_sent(err: &etcd_client::Error) -> bool {
    any_cause(err, |e| {
        io_kind(e) == Some(std::io::ErrorKind::ConnectionRefused)
            || e.to_string().contains("tcp connect error")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(times: u32, now: Instant) -> MemberHealth {
        let mut h = MemberHealth::default();
        for _ in 0..times {
            h.failed(now);
        }
        h
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        assert_eq!(backoff(1), Duration::from_millis(200));
        assert_eq!(backoff(2), Duration::from_millis(400));
        assert_eq!(backoff(3), Duration::from_millis(800));
        assert_eq!(backoff(6), Duration::from_secs(5));
        assert_eq!(backoff(u32::MAX), Duration::from_secs(5));
    }

    #[test]
    fn failed_member_is_due_only_after_its_backoff() {
        let now = Instant::now();
        let h = failed(2, now);
        assert!(!h.healthy());
        assert!(!h.due(now));
        assert!(!h.due(now + Duration::from_millis(399)));
        assert!(h.due(now + Duration::from_millis(400)));
        let mut h = h;
        h.succeeded();
        assert!(h.healthy() && h.due(now));
    }

    #[test]
    fn healthy_members_round_robin_before_failed_ones() {
        let now = Instant::now();
        let ok = MemberHealth::default();
        let health = [ok, failed(1, now), ok];
        assert_eq!(pick_order(&health, 0), vec![0, 2, 1]);
        assert_eq!(pick_order(&health, 1), vec![2, 0, 1]);
        assert_eq!(pick_order(&health, 2), vec![2, 0, 1]);
    }

    #[test]
    fn failed_members_are_tried_soonest_retry_first() {
        let now = Instant::now();
        let health = [failed(3, now), failed(1, now), failed(2, now)];
        assert_eq!(pick_order(&health, 0), vec![1, 2, 0]);
    }

    #[test]
    fn errors_from_a_live_member_do_not_count_against_it() {
        let leader_changed = etcd_client::Error::GRpcStatus(tonic::Status::unavailable(
            "etcdserver: leader changed",
        ));
        assert!(!is_transport_failure(&leader_changed));
        assert!(is_unavailable(&leader_changed));
        assert!(!never_sent(&leader_changed));
        let refused = etcd_client::Error::IoError(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        ));
        assert!(is_transport_failure(&refused));
        assert!(never_sent(&refused));
        assert!(super::refused(&refused));
        let timed_out =
            etcd_client::Error::IoError(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert!(is_transport_failure(&timed_out));
        assert!(!super::refused(&timed_out));
        // A reset answers (the process died), but a write on it may have been applied.
        let reset =
            etcd_client::Error::IoError(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(super::refused(&reset));
        assert!(!never_sent(&reset));
    }
}
