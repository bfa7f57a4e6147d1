//! The in-process controllers (kube-controller-manager's: garbage collector, namespace,
//! serviceaccount, workload controllers): started with the
//! server, and with several servers on one storage run only by the holder of the
//! `kube-system/kube-controller-manager` Lease, as kube-controller-manager's leader election.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use client::informer::InformerFactory;
use client::leader_election::{default_identity, LeaderElectionConfig, LeaderElector, Leadership};
use controllers::clusterrole_aggregation::ClusterRoleAggregationController;
use controllers::cronjob::{CronJobController, CronJobControllerConfig};
use controllers::daemonset::{DaemonSetController, DaemonSetControllerConfig};
use controllers::deployment::{DeploymentController, DeploymentControllerConfig};
use controllers::disruption::{DisruptionController, DisruptionControllerConfig};
use controllers::endpoints::{EndpointsController, EndpointsControllerConfig};
use controllers::endpointslice::{EndpointSliceController, EndpointSliceControllerConfig};
use controllers::garbage_collector::{GarbageCollector, GcConfig};
use controllers::job::{JobController, JobControllerConfig};
use controllers::namespace::{NamespaceController, NamespaceControllerConfig};
use controllers::node_lifecycle::{
    NodeLifecycleConfig, NodeLifecycleController, TaintEvictionController,
};
use controllers::replicaset::{ReplicaSetController, ReplicaSetControllerConfig, ReplicaSetKind};
use controllers::root_ca_publisher::RootCaPublisher;
use controllers::service_repair::{self, ServiceRepairController};
use controllers::serviceaccount::ServiceAccountController;
use controllers::statefulset::{StatefulSetController, StatefulSetControllerConfig};
use controllers::ttl_after_finished::{TtlAfterFinishedConfig, TtlAfterFinishedController};
use controllers::volume::PersistentVolumeController;
use futures::future::BoxFuture;
use futures::FutureExt;
use kubelet::Nodes;
use scheduler::{Scheduler, SchedulerConfig};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{error, info};

/// The lease kube-controller-manager elects its leader with.
const LEASE_NAMESPACE: &str = "kube-system";
const LEASE_NAME: &str = "kube-controller-manager";

/// How controllers run in this server.
#[derive(Clone, Debug)]
pub struct ControllerOptions {
    pub enabled: bool,
    pub leader_elect: bool,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
    /// Run the scheduler with the controllers (`--scheduler`).
    pub scheduler: bool,
    /// The simulated nodes served with the controllers (`--nodes`, none when 0).
    pub nodes: kubelet::NodeConfig,
    /// The CA bundle that verifies the server, published in every namespace as
    /// `kube-root-ca.crt` (none without a secure port).
    pub root_ca: Option<String>,
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

/// Starts the controllers in the background; they stop when `shutdown` is cancelled.
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
    if !options.leader_elect {
        let task = tokio::spawn(run_controllers(
            informers,
            handle.clone(),
            options.clone(),
            shutdown.child_token(),
        ));
        handle.set_task(task);
        return handle;
    }
    let Some(leases) = informers
        .registry()
        .store("coordination.k8s.io", "v1", "leases")
    else {
        error!("no leases resource: controllers cannot elect a leader and do not run");
        return handle;
    };
    let mut config = LeaderElectionConfig::new(LEASE_NAMESPACE, LEASE_NAME, default_identity());
    config.lease_duration = options.lease_duration;
    config.renew_deadline = options.renew_deadline;
    config.retry_period = options.retry_period;
    let elector = match LeaderElector::new(leases, config) {
        Ok(e) => e,
        Err(e) => {
            error!(error = %e, "invalid leader election settings: controllers do not run");
            return handle;
        }
    };
    if let Ok(mut slot) = handle.leadership.write() {
        *slot = Some(elector.status());
    }
    info!(identity = elector.identity(), lease = %format!("{LEASE_NAMESPACE}/{LEASE_NAME}"), "campaigning to run the controllers");
    let h = handle.clone();
    let task = tokio::spawn(elector.run(shutdown.cancelled_owned(), move |term| {
        run_controllers(informers.clone(), h.clone(), options.clone(), term.token())
    }));
    handle.set_task(task);
    handle
}

async fn run_controllers(
    informers: Arc<InformerFactory>,
    handle: Arc<Controllers>,
    options: ControllerOptions,
    stop: CancellationToken,
) {
    info!("starting controllers");
    let gc = GarbageCollector::new(informers.clone(), GcConfig::default());
    handle.set_gc(Some(gc.clone()));
    // Each runs until `stop`; one that cannot start is logged and the others run.
    let mut running: Vec<BoxFuture<'static, ()>> = vec![gc.run(stop.clone()).boxed()];
    match NamespaceController::new(&informers, NamespaceControllerConfig::default()) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "namespace controller cannot run"),
    }
    match ServiceAccountController::new(&informers) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "serviceaccount controller cannot run"),
    }
    match ClusterRoleAggregationController::new(&informers) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "clusterrole aggregation controller cannot run"),
    }
    if let Some(bundle) = options.root_ca.clone() {
        match RootCaPublisher::new(&informers, bundle) {
            Ok(c) => running.push(c.run(stop.clone()).boxed()),
            Err(e) => error!(error = %e, "root CA certificate publisher cannot run"),
        }
    }
    for kind in [
        ReplicaSetKind::ReplicaSet,
        ReplicaSetKind::ReplicationController,
    ] {
        match ReplicaSetController::new(&informers, ReplicaSetControllerConfig::for_kind(kind)) {
            Ok(c) => running.push(c.run(stop.clone()).boxed()),
            Err(e) => error!(error = %e, controller = kind.component(), "controller cannot run"),
        }
    }
    match DeploymentController::new(&informers, DeploymentControllerConfig::default()) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "deployment controller cannot run"),
    }
    match DaemonSetController::new(&informers, DaemonSetControllerConfig::default()) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "daemon set controller cannot run"),
    }
    match StatefulSetController::new(&informers, StatefulSetControllerConfig::default()) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "statefulset controller cannot run"),
    }
    match JobController::new(&informers, JobControllerConfig::default()) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "job controller cannot run"),
    }
    match CronJobController::new(&informers, CronJobControllerConfig::default()) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "cronjob controller cannot run"),
    }
    match TtlAfterFinishedController::new(&informers, TtlAfterFinishedConfig::default()) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "TTL after finished controller cannot run"),
    }
    match NodeLifecycleController::new(&informers, NodeLifecycleConfig::default()) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "node lifecycle controller cannot run"),
    }
    match TaintEvictionController::new(&informers) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "taint eviction controller cannot run"),
    }
    if options.scheduler {
        match Scheduler::new(&informers, SchedulerConfig::default()) {
            Ok(s) => running.push(s.run(stop.clone()).boxed()),
            Err(e) => error!(error = %e, "scheduler cannot run"),
        }
    }
    // The nodes are served by the leader, so that with several servers each runs once.
    if options.nodes.count > 0 {
        match Nodes::new(&informers, options.nodes.clone()) {
            Ok(n) => running.push(n.run(stop.clone()).boxed()),
            Err(e) => error!(error = %e, "nodes cannot run"),
        }
    }
    match EndpointSliceController::new(&informers, EndpointSliceControllerConfig::default()) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "endpointslice controller cannot run"),
    }
    match EndpointsController::new(&informers, EndpointsControllerConfig::default()) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "endpoints controller cannot run"),
    }
    match DisruptionController::new(&informers, DisruptionControllerConfig::default()) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "disruption controller cannot run"),
    }
    match ServiceRepairController::new(&informers, service_repair::INTERVAL) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "service allocation repair cannot run"),
    }
    match PersistentVolumeController::new(&informers) {
        Ok(c) => running.push(c.run(stop.clone()).boxed()),
        Err(e) => error!(error = %e, "persistent volume controller cannot run"),
    }
    futures::future::join_all(running).await;
    handle.set_gc(None);
    info!("controllers stopped");
}
