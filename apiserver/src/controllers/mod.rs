//! The in-process controllers (kube-controller-manager's: garbage collector, namespace,
//! serviceaccount, workload controllers, chosen by `--controllers` from [`CONTROLLERS`]):
//! started with the server, and with several servers on one storage run only by the holder of
//! the `kube-system/kube-controller-manager` Lease, as kube-controller-manager's leader
//! election.

mod runtime;
mod table;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use client::informer::InformerFactory;
use client::leader_election::{default_identity, LeaderElectionConfig, LeaderElector, Leadership};
use controllers::garbage_collector::GarbageCollector;
use controllers::ipaddress::IpAddressController;
use controllers::service_repair::{self, ServiceRepairController};
use futures::FutureExt;
use kubelet::Nodes;
use scheduler::{Scheduler, SchedulerConfig};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use table::Running;
pub use table::{Descriptor, Selection, UnknownController, CONTROLLERS};

/// The lease kube-controller-manager elects its leader with.
const LEASE_NAMESPACE: &str = "kube-system";
const LEASE_NAME: &str = "kube-controller-manager";

/// How controllers run in this server.
#[derive(Clone, Debug)]
pub struct ControllerOptions {
    /// False with `--disable-controllers`: none of them runs, nor the scheduler and nodes.
    pub enabled: bool,
    /// Which of kube-controller-manager's run (`--controllers`).
    pub selection: Selection,
    pub leader_elect: bool,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
    /// Run the scheduler with the controllers (`--scheduler`).
    pub scheduler: bool,
    /// The scheduler's configuration (`--scheduler-config`, the defaults without it).
    pub scheduler_config: SchedulerConfig,
    /// The simulated nodes served with the controllers (`--nodes`, none when 0).
    pub nodes: kubelet::NodeConfig,
    /// The CA bundle that verifies the server, published in every namespace as
    /// `kube-root-ca.crt` (none without a secure port).
    pub root_ca: Option<String>,
    /// The CA certificate and key (PEM) the certificate signers issue with, and the longest a
    /// certificate lasts; None: no signer runs.
    pub signing: Option<(String, String, std::time::Duration)>,
    /// How often the horizontal pod autoscaler looks at each autoscaler.
    pub hpa_sync_period: Duration,
    /// The resource metrics API the autoscaler reads.
    pub resource_metrics: Option<::controllers::podautoscaler::source::MetricsClient>,
}

/// What the HTTP side may ask of the running controllers.
#[derive(Default)]
pub struct Controllers {
    gc: RwLock<Option<Arc<GarbageCollector>>>,
    leadership: RwLock<Option<watch::Receiver<Leadership>>>,
    task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Controllers {
    /// The garbage collector, while this server runs it.
    pub fn garbage_collector(&self) -> Option<Arc<GarbageCollector>> {
        self.gc.read().ok()?.clone()
    }

    pub fn leadership(&self) -> Option<Leadership> {
        let status = self.leadership.read().ok()?;
        status.as_ref().map(|s| s.borrow().clone())
    }

    /// Waits (up to `limit`) for the controllers to finish after shutdown began, so a leader
    /// releases its lease and another server takes over at once.
    pub async fn stopped(&self, limit: Duration) {
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task {
            let _ = tokio::time::timeout(limit, task).await;
        }
    }

    fn set_task(&self, task: tokio::task::JoinHandle<()>) {
        if let Ok(mut slot) = self.task.lock() {
            *slot = Some(task);
        }
    }

    fn set_gc(&self, gc: Option<Arc<GarbageCollector>>) {
        if let Ok(mut slot) = self.gc.write() {
            *slot = gc;
        }
    }
}

/// Starts the controllers in the background, on a runtime of their own (see `runtime`);
/// they stop when `shutdown` is cancelled.
pub fn start(
    informers: Arc<InformerFactory>,
    options: ControllerOptions,
    shutdown: CancellationToken,
) -> Arc<Controllers> {
    let handle = Arc::new(Controllers::default());
    if !options.enabled {
        info!("controllers disabled");
        return handle;
    }
    let (work, release) = match runtime::start() {
        Ok((work, release)) => (work, Some(release)),
        Err(e) => {
            warn!(error = %e, "no runtime of their own for the controllers: they share the server's");
            (tokio::runtime::Handle::current(), None)
        }
    };
    let task = start_on(&work, informers, &handle, options, shutdown);
    if let Some(task) = task {
        // The runtime ends once the controllers have.
        handle.set_task(tokio::spawn(async move {
            let _ = task.await;
            drop(release);
        }));
    }
    handle
}

/// Runs the controllers on `work`, under leader election unless it is off; the task that
/// ends when they have stopped, None when they cannot run.
fn start_on(
    work: &tokio::runtime::Handle,
    informers: Arc<InformerFactory>,
    handle: &Arc<Controllers>,
    options: ControllerOptions,
    shutdown: CancellationToken,
) -> Option<tokio::task::JoinHandle<()>> {
    if !options.leader_elect {
        return Some(work.spawn(run_controllers(
            informers,
            handle.clone(),
            options.clone(),
            shutdown.child_token(),
        )));
    }
    let Some(leases) = informers
        .registry()
        .store("coordination.k8s.io", "v1", "leases")
    else {
        error!("no leases resource: controllers cannot elect a leader and do not run");
        return None;
    };
    let mut config = LeaderElectionConfig::new(LEASE_NAMESPACE, LEASE_NAME, default_identity());
    config.lease_duration = options.lease_duration;
    config.renew_deadline = options.renew_deadline;
    config.retry_period = options.retry_period;
    let elector = match LeaderElector::new(leases, config) {
        Ok(e) => e,
        Err(e) => {
            error!(error = %e, "invalid leader election settings: controllers do not run");
            return None;
        }
    };
    if let Ok(mut slot) = handle.leadership.write() {
        *slot = Some(elector.status());
    }
    info!(identity = elector.identity(), lease = %format!("{LEASE_NAMESPACE}/{LEASE_NAME}"), "campaigning to run the controllers");
    let h = handle.clone();
    let elected = elector.spawn_on_own_thread(work.clone(), shutdown, move |term| {
        run_controllers(informers.clone(), h.clone(), options.clone(), term.token())
    });
    match elected {
        Ok(task) => Some(task),
        Err(e) => {
            error!(error = %e, "no thread for the leader election: controllers do not run");
            None
        }
    }
}

async fn run_controllers(
    informers: Arc<InformerFactory>,
    handle: Arc<Controllers>,
    options: ControllerOptions,
    stop: CancellationToken,
) {
    info!("starting controllers");
    let context = table::Context {
        informers: &informers,
        options: &options,
        handle: &handle,
        stop: &stop,
    };
    // Each runs until `stop`; one that cannot start is logged and the others run.
    let mut running: Vec<Running> = Vec::new();
    for controller in CONTROLLERS {
        if !options.selection.is_enabled(controller) {
            info!(controller = controller.name, "controller disabled");
            continue;
        }
        match (controller.start)(&context) {
            Ok(Some(run)) => running.push(run),
            Ok(None) => {}
            Err(e) => error!(controller = controller.name, error = %e, "controller cannot run"),
        }
    }
    // Not kube-controller-manager's, so not in `--controllers`: kube-apiserver's repair of
    // the Service allocations, the scheduler, and the nodes (served by the leader, so that
    // with several servers each runs once).
    match ServiceRepairController::new(&informers, service_repair::INTERVAL) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "service allocation repair cannot run"),
    }
    match IpAddressController::new(&informers) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "the IPAddresses of cluster IPs will not be kept"),
    }
    if options.scheduler {
        match Scheduler::new(&informers, options.scheduler_config.clone()) {
            Ok(s) => running.push(s.run(stop.clone()).boxed()),
            Err(e) => error!(error = %e, "scheduler cannot run"),
        }
    }
    if options.nodes.count > 0 {
        match Nodes::new(&informers, options.nodes.clone()) {
            Ok(n) => running.push(n.run(stop.clone()).boxed()),
            Err(e) => error!(error = %e, "nodes cannot run"),
        }
    }
    futures::future::join_all(running).await;
    handle.set_gc(None);
    info!("controllers stopped");
}
