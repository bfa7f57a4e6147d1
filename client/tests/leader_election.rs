//! Leader election over a real Lease: candidates on registries sharing one etcd (two API
//! server replicas), with short timings so each test takes a few seconds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use client::leader_election::{LeaderElectionConfig, LeaderElector, Leadership, StopSignal};
use registry::options::{ListOptions, WriteOptions};
use registry::{Catalogue, Registry, RegistryError, Store, Subresource};
use serde_json::Value;
use storage::backend::etcd::{EtcdBackend, EtcdConfig};
use storage::backend::DynBackend;
use storage::CacherConfig;
use test_support::{eventually, EtcdServer, TestBackend};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::{sleep, Instant};

const NAMESPACE: &str = "kube-system";
const NAME: &str = "kube-controller-manager";
const LEASE: Duration = Duration::from_secs(1);
const RENEW: Duration = Duration::from_millis(700);
const RETRY: Duration = Duration::from_millis(100);

async fn leases_over(backend: DynBackend) -> Arc<Store> {
    let root = storage::KvStore::new(backend, "/registry");
    let registry = Registry::new(
        root,
        Arc::new(Catalogue::builtin()),
        CacherConfig::default(),
    );
    registry.bootstrap().await.expect("bootstrap");
    registry
        .store("coordination.k8s.io", "v1", "leases")
        .expect("leases are served")
}

/// One API server replica's view of the shared etcd: its own client, its own registry.
async fn replica(etcd: &EtcdServer) -> Arc<Store> {
    let config = EtcdConfig::new(vec![etcd.endpoint()]);
    let client = EtcdBackend::connect(config).await.expect("connect to etcd");
    leases_over(Arc::new(client)).await
}

async fn embedded_leases() -> (Arc<Store>, TestBackend) {
    let backend = TestBackend::embedded().await;
    (
        leases_over(
            storage::backend::open(&backend.etcd_servers(), backend.data_dir())
                .await
                .expect("open the test backend"),
        )
        .await,
        backend,
    )
}

async fn lease(leases: &Store) -> Value {
    leases
        .get(Some(NAMESPACE), NAME, &ListOptions::default())
        .await
        .expect("the lease exists")
}

fn holder(lease: &Value) -> &str {
    lease["spec"]["holderIdentity"].as_str().unwrap_or_default()
}

fn transitions(lease: &Value) -> i64 {
    lease["spec"]["leaseTransitions"].as_i64().unwrap_or(-1)
}

/// Writes the lease as `change` makes it from the stored one, again on a conflict with a
/// renewal; returns what `change` returned for the write that landed.
async fn overwrite_lease<T>(leases: &Store, mut change: impl FnMut(&mut Value) -> T) -> T {
    loop {
        let mut stored = lease(leases).await;
        let made = change(&mut stored);
        let written = leases
            .update(
                Some(NAMESPACE),
                NAME,
                stored,
                Subresource::Main,
                &WriteOptions::default(),
            )
            .await;
        match written {
            Ok(_) => return made,
            Err(RegistryError::Conflict { .. }) => continue,
            Err(e) => panic!("overwriting the lease: {e}"),
        }
    }
}

struct Candidate {
    identity: String,
    status: watch::Receiver<Leadership>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
    /// Terms begun: times `lead` was called.
    terms: Arc<AtomicUsize>,
    /// Terms whose work saw its stop signal and returned.
    stopped: Arc<AtomicUsize>,
}

impl Candidate {
    fn spawn(leases: Arc<Store>, identity: &str) -> Self {
        let config = LeaderElectionConfig {
            lease_duration: LEASE,
            renew_deadline: RENEW,
            retry_period: RETRY,
            ..LeaderElectionConfig::new(NAMESPACE, NAME, identity)
        };
        let elector = LeaderElector::new(leases, config).expect("valid config");
        let status = elector.status();
        let (shutdown, down) = oneshot::channel::<()>();
        let terms = Arc::new(AtomicUsize::new(0));
        let stopped = Arc::new(AtomicUsize::new(0));
        let (t, s) = (terms.clone(), stopped.clone());
        let lead = move |stop: StopSignal| {
            let (terms, stopped) = (t.clone(), s.clone());
            async move {
                terms.fetch_add(1, Ordering::SeqCst);
                stop.stopped().await;
                assert!(stop.is_stopped());
                stopped.fetch_add(1, Ordering::SeqCst);
            }
        };
        let task = tokio::spawn(elector.run(
            async move {
                let _ = down.await;
            },
            lead,
        ));
        Self {
            identity: identity.to_string(),
            status,
            shutdown: Some(shutdown),
            task,
            terms,
            stopped,
        }
    }

    fn leading(&self) -> bool {
        self.status.borrow().leading
    }

    fn terms(&self) -> usize {
        self.terms.load(Ordering::SeqCst)
    }

    fn stopped(&self) -> usize {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Clean shutdown; waits for `run` to return.
    async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        tokio::time::timeout(Duration::from_secs(5), &mut self.task)
            .await
            .expect("run returns after shutdown")
            .expect("run does not panic");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_never_lead_at_once() {
    let etcd = EtcdServer::start().await;
    let leases = replica(&etcd).await;
    let a = Candidate::spawn(leases.clone(), "replica-a");
    let b = Candidate::spawn(replica(&etcd).await, "replica-b");
    eventually("someone leads", Duration::from_secs(5), || {
        a.leading() || b.leading()
    })
    .await;
    let first = if a.leading() {
        "replica-a"
    } else {
        "replica-b"
    };

    // Twice the lease duration: a leader that failed to renew would be replaced meanwhile.
    let end = Instant::now() + 2 * LEASE;
    while Instant::now() < end {
        let (la, lb) = (a.leading(), b.leading());
        assert!(!(la && lb), "both replicas lead");
        assert!(la || lb, "nobody leads while the leader is healthy");
        let now = if la { "replica-a" } else { "replica-b" };
        assert_eq!(now, first, "leadership moved while the leader was healthy");
        sleep(Duration::from_millis(5)).await;
    }

    let stored = lease(&leases).await;
    assert_eq!(holder(&stored), first);
    assert_eq!(transitions(&stored), 0);
    assert_eq!(stored["spec"]["leaseDurationSeconds"], 1);
    let (leader, follower) = if first == "replica-a" {
        (&a, &b)
    } else {
        (&b, &a)
    };
    assert_eq!((leader.terms(), follower.terms()), (1, 0));
    assert_eq!(leader.status.borrow().holder.as_deref(), Some(first));
    assert_eq!(follower.status.borrow().holder.as_deref(), Some(first));
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn released_lease_is_taken_over_at_once() {
    let etcd = EtcdServer::start().await;
    let leases = replica(&etcd).await;
    let a = Candidate::spawn(leases.clone(), "replica-a");
    eventually("a leads", Duration::from_secs(5), || a.leading()).await;
    let b = Candidate::spawn(replica(&etcd).await, "replica-b");
    sleep(3 * RETRY).await;
    assert!(!b.leading());
    let before = transitions(&lease(&leases).await);

    let a_stopped = a.stopped.clone();
    let mut a_status = a.status.clone();
    let stopping = tokio::spawn(a.stop());
    let took = eventually("b takes over", Duration::from_secs(3), || b.leading()).await;
    // Without the release b would wait out the lease duration from its last sight of a renewal.
    assert!(took < LEASE / 2, "takeover after release took {took:?}");
    assert_eq!(
        a_stopped.load(Ordering::SeqCst),
        1,
        "a's work must have finished before the lease was released"
    );
    assert!(!a_status.borrow_and_update().leading);
    stopping.await.expect("a stops");

    let stored = lease(&leases).await;
    assert_eq!(holder(&stored), b.identity);
    assert_eq!(transitions(&stored), before + 1);
    assert_eq!(stored["spec"]["leaseDurationSeconds"], 1);
    b.stop().await;

    // b released on its way out too.
    let released = lease(&leases).await;
    assert_eq!(holder(&released), "");
    assert_eq!(transitions(&released), before + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vanished_leader_is_replaced_only_after_lease_duration() {
    let etcd = EtcdServer::start().await;
    let leases = replica(&etcd).await;
    let a = Candidate::spawn(leases.clone(), "replica-a");
    eventually("a leads", Duration::from_secs(5), || a.leading()).await;
    let b = Candidate::spawn(replica(&etcd).await, "replica-b");
    sleep(3 * RETRY).await;
    let before = transitions(&lease(&leases).await);

    a.task.abort();
    let took = eventually("b takes over", Duration::from_secs(4), || b.leading()).await;
    // a renewed at most one retry period before it vanished, and b counts the lease duration
    // from when it saw that renewal.
    assert!(
        took >= LEASE - 2 * RETRY,
        "b took over {took:?} after a vanished, before the lease expired"
    );
    assert!(!a.leading(), "an aborted elector does not claim to lead");
    assert_eq!(a.stopped(), 0);

    let stored = lease(&leases).await;
    assert_eq!(holder(&stored), b.identity);
    assert_eq!(transitions(&stored), before + 1);
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_without_etcd_stops_within_renew_deadline() {
    let mut etcd = EtcdServer::start().await;
    let a = Candidate::spawn(replica(&etcd).await, "replica-a");
    eventually("a leads", Duration::from_secs(5), || a.leading()).await;
    sleep(3 * RETRY).await;
    assert!(a.leading());

    etcd.stop();
    let took = eventually("a's work is stopped", Duration::from_secs(3), || {
        a.stopped() == 1
    })
    .await;
    assert!(took <= RENEW + 3 * RETRY, "stopped only after {took:?}");
    assert!(!a.leading());
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_whose_lease_is_taken_stops_and_campaigns_again() {
    let (leases, _backend) = embedded_leases().await;
    let a = Candidate::spawn(leases.clone(), "replica-a");
    eventually("a leads", Duration::from_secs(5), || a.leading()).await;

    // Another holder writes itself in (and then never renews).
    let intruder_transitions = overwrite_lease(&leases, |stored| {
        let next = transitions(stored) + 1;
        stored["spec"]["holderIdentity"] = "intruder".into();
        stored["spec"]["leaseTransitions"] = next.into();
        next
    })
    .await;

    let took = eventually("a's work is stopped", Duration::from_secs(2), || {
        a.stopped() == 1
    })
    .await;
    assert!(took < RENEW, "a noticed the new holder only after {took:?}");
    assert!(!a.leading());
    assert_eq!(a.status.borrow().holder.as_deref(), Some("intruder"));

    // The intruder never renews: a takes the lease back once it has expired, not before.
    let back = eventually("a leads again", Duration::from_secs(4), || a.terms() == 2).await;
    assert!(
        back + took >= LEASE - RETRY,
        "a took the lease back {:?} after it was taken",
        back + took
    );
    assert!(a.leading());
    let stored = lease(&leases).await;
    assert_eq!(holder(&stored), "replica-a");
    assert_eq!(transitions(&stored), intruder_transitions + 1);
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_is_judged_by_the_candidates_own_clock() {
    let (leases, _backend) = embedded_leases().await;
    // Held by a replica whose clock is far behind: by its renewTime the lease expired long
    // ago, yet a newcomer must still wait a full lease duration from when it first saw it.
    let stale = serde_json::json!({
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": {
            "holderIdentity": "slow-clock",
            "leaseDurationSeconds": 1,
            "acquireTime": "2000-01-01T00:00:00.000000Z",
            "renewTime": "2000-01-01T00:00:00.000000Z",
            "leaseTransitions": 4,
        },
    });
    leases
        .create(Some(NAMESPACE), stale, &WriteOptions::default())
        .await
        .expect("create the lease");

    let a = Candidate::spawn(leases.clone(), "replica-a");
    let took = eventually("a leads", Duration::from_secs(4), || a.leading()).await;
    assert!(
        took >= LEASE - RETRY,
        "a took a lease it saw held only {took:?} ago"
    );
    let stored = lease(&leases).await;
    assert_eq!(holder(&stored), "replica-a");
    assert_eq!(transitions(&stored), 5);
    let acquired = stored["spec"]["acquireTime"].as_str().unwrap_or_default();
    assert_eq!(
        acquired.len(),
        "2026-11-21T10:00:00.123456Z".len(),
        "{acquired}"
    );
    assert!(
        chrono::DateTime::parse_from_rfc3339(acquired).is_ok_and(|t| t.timestamp() > 946_684_800),
        "acquireTime {acquired} is this candidate's own"
    );
    a.stop().await;
}

fn renewed_at(lease: &Value) -> chrono::DateTime<chrono::FixedOffset> {
    let renew = lease["spec"]["renewTime"].as_str().unwrap_or_default();
    chrono::DateTime::parse_from_rfc3339(renew).expect("renewTime is RFC 3339")
}

/// The server's runtime can be busy for longer than the renew deadline (a burst of work that
/// does not yield); renewals on the election's own thread must go on meanwhile, so the lone
/// leader keeps its lease and its one term. Here the runtime has one thread and the test blocks
/// it outright for three lease durations.
#[tokio::test(flavor = "current_thread")]
async fn leader_on_its_own_thread_renews_while_the_runtime_is_blocked() {
    let (leases, _backend) = embedded_leases().await;
    let config = LeaderElectionConfig {
        lease_duration: LEASE,
        renew_deadline: RENEW,
        retry_period: RETRY,
        ..LeaderElectionConfig::new(NAMESPACE, NAME, "replica-a")
    };
    let elector = LeaderElector::new(leases.clone(), config).expect("valid config");
    let status = elector.status();
    let terms = Arc::new(AtomicUsize::new(0));
    let stopped = Arc::new(AtomicUsize::new(0));
    let (t, s) = (terms.clone(), stopped.clone());
    let shutdown = tokio_util::sync::CancellationToken::new();
    let task = elector
        .spawn_on_own_thread(
            tokio::runtime::Handle::current(),
            shutdown.clone(),
            move |stop: StopSignal| {
                let (terms, stopped) = (t.clone(), s.clone());
                async move {
                    terms.fetch_add(1, Ordering::SeqCst);
                    stop.stopped().await;
                    stopped.fetch_add(1, Ordering::SeqCst);
                }
            },
        )
        .expect("a thread for the election");
    eventually("a leads", Duration::from_secs(5), || {
        status.borrow().leading
    })
    .await;
    eventually("the term's work started", Duration::from_secs(2), || {
        terms.load(Ordering::SeqCst) == 1
    })
    .await;

    let blocked_from = chrono::Utc::now();
    std::thread::sleep(3 * LEASE);
    let blocked_until = chrono::Utc::now();

    assert!(status.borrow().leading, "the leader lost its lease");
    let renewed = renewed_at(&lease(&leases).await);
    assert!(
        renewed > blocked_from + chrono::Duration::from_std(2 * LEASE).unwrap_or_default(),
        "last renewal at {renewed}, runtime blocked from {blocked_from} to {blocked_until}"
    );
    sleep(3 * RETRY).await;
    assert_eq!(
        terms.load(Ordering::SeqCst),
        1,
        "leadership was lost and retaken"
    );
    assert_eq!(stopped.load(Ordering::SeqCst), 0);
    assert_eq!(holder(&lease(&leases).await), "replica-a");

    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the election stops after shutdown")
        .expect("the election task does not panic");
    assert_eq!(
        stopped.load(Ordering::SeqCst),
        1,
        "the term's work was stopped"
    );
    assert_eq!(holder(&lease(&leases).await), "", "the lease was released");
}

/// A renewal cancelled by the shutdown may land without the leader seeing its result; the
/// release must not write over the stale copy (a Conflict taken for "already taken" left the
/// lease held for its whole duration). Here an outside write changes the lease, holder kept,
/// right before shutdown: the release still gives it up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_lands_over_a_lease_changed_since_last_seen() {
    let (leases, _backend) = embedded_leases().await;
    let a = Candidate::spawn(leases.clone(), "replica-a");
    eventually("a leads", Duration::from_secs(5), || a.leading()).await;
    overwrite_lease(&leases, |stored| {
        stored["metadata"]["labels"] = serde_json::json!({"changed": "before-release"});
    })
    .await;
    a.stop().await;
    let stored = lease(&leases).await;
    assert_eq!(holder(&stored), "", "the lease was released");
    assert_eq!(stored["spec"]["leaseDurationSeconds"], 1);
}

/// The leader renews by writing over the lease it last saw; when someone else wrote in
/// between (here: a label, not the holder), that write conflicts and the leader reads the lease
/// again and renews it, keeping its term.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_renews_over_a_lease_changed_by_someone_else() {
    let (leases, _backend) = embedded_leases().await;
    let a = Candidate::spawn(leases.clone(), "replica-a");
    eventually("a leads", Duration::from_secs(5), || a.leading()).await;
    for round in 0..5 {
        overwrite_lease(&leases, |stored| {
            stored["metadata"]["labels"] = serde_json::json!({"round": round.to_string()});
        })
        .await;
        let before = renewed_at(&lease(&leases).await);
        let deadline = Instant::now() + Duration::from_secs(2);
        while renewed_at(&lease(&leases).await) <= before {
            assert!(
                Instant::now() < deadline,
                "no renewal after the outside write"
            );
            sleep(Duration::from_millis(10)).await;
        }
    }
    assert!(a.leading());
    assert_eq!(a.terms(), 1, "the conflicts cost the leader its term");
    let stored = lease(&leases).await;
    assert_eq!(holder(&stored), "replica-a");
    assert_eq!(
        stored["metadata"]["labels"]["round"], "4",
        "the renewal kept the outside write"
    );
    a.stop().await;
}
