//! Every simulated node of the process: registration and heartbeats, and one kubelet per
//! node. The kubelets share the process's pods informer (upstream's kubelet watches with the
//! field selector spec.nodeName; here one informer serves all, and each notification goes to
//! the kubelet of the node it names), and run one worker per pod.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use client::events::EventRecorder;
use client::informer::{dispatch, InformerFactory, Notification, SharedInformer};
use registry::Store;
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::config::NodeConfig;
use crate::error::{KubeletError, Result};
use crate::network::{probe_network_plugin, Ipv4Cidr};
use crate::node::{self, object::internal_ip};
use crate::pod_worker::{self, NodeContext};
use crate::status::StatusManager;

/// The component name of the kubelet's events.
pub const COMPONENT: &str = "kubelet";

struct PodWorkerHandle {
    updates: watch::Sender<bool>,
}

/// One node's kubelet: its context and its pods' workers by UID.
struct Kubelet {
    ctx: Arc<NodeContext>,
    workers: Mutex<HashMap<String, PodWorkerHandle>>,
}

pub struct Nodes {
    config: NodeConfig,
    pods: SharedInformer,
    node_store: Arc<Store>,
    leases: Arc<Store>,
    /// Where the simulated DRA driver publishes (None when resource.k8s.io is not served).
    slices: Option<Arc<Store>>,
    node_objects: Vec<serde_json::Value>,
    kubelets: HashMap<String, Arc<Kubelet>>,
}

fn store(informers: &InformerFactory, group: &str, plural: &str) -> Result<Arc<Store>> {
    informers
        .registry()
        .store(group, "v1", plural)
        .ok_or_else(|| KubeletError::NotServed(plural.to_string()))
}

impl Nodes {
    pub fn new(informers: &InformerFactory, config: NodeConfig) -> Result<Arc<Self>> {
        let cidr_error = |why: String| KubeletError::ClusterCidr {
            cidr: config.cluster_cidr.clone(),
            why,
        };
        let cluster: Ipv4Cidr = config.cluster_cidr.parse().map_err(cidr_error)?;
        let pods_store = store(informers, "", "pods")?;
        let pods = informers.informer("", "v1", "pods")?;
        let recorder = EventRecorder::new(informers.registry().clone(), COMPONENT);
        let mut node_objects = Vec::new();
        let mut kubelets = HashMap::new();
        for index in 0..config.count {
            let name = format!("{}-{index}", config.name_prefix);
            let pod_cidr = cluster.node_subnet(index).ok_or_else(|| {
                cidr_error(format!(
                    "it has no room for a /24 per node for {} nodes",
                    config.count
                ))
            })?;
            node_objects.push(node::object::node(&config, index, &name, pod_cidr));
            let ctx = NodeContext {
                node_name: name.clone(),
                pods: pods.indexer().clone(),
                host_ip: internal_ip(index).to_string(),
                network: probe_network_plugin(&name, pod_cidr, &config.network),
                status: StatusManager::new(pods_store.clone()),
                recorder: recorder.clone(),
                timings: config.timings.clone(),
            };
            kubelets.insert(
                name,
                Arc::new(Kubelet {
                    ctx: Arc::new(ctx),
                    workers: Mutex::new(HashMap::new()),
                }),
            );
        }
        Ok(Arc::new(Self {
            pods,
            node_store: store(informers, "", "nodes")?,
            leases: store(informers, "coordination.k8s.io", "leases")?,
            slices: informers
                .registry()
                .store("resource.k8s.io", "v1", "resourceslices"),
            config,
            node_objects,
            kubelets,
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        info!(
            nodes = self.config.count,
            "starting simulated nodes and their kubelets"
        );
        let mut tasks = Vec::new();
        for node in &self.node_objects {
            tasks.push(tokio::spawn(node::run_heartbeat(
                self.node_store.clone(),
                self.leases.clone(),
                node.clone(),
                self.config.timings.clone(),
                stop.clone(),
            )));
            if let Some(slices) = &self.slices {
                tasks.push(tokio::spawn(node::devices::publish(
                    slices.clone(),
                    self.node_store.clone(),
                    registry::object::name(node).to_string(),
                    self.config.devices,
                    stop.clone(),
                )));
            }
        }
        let this = self.clone();
        let worker_stop = stop.clone();
        let events = dispatch(self.pods.subscribe(), stop.clone(), move |n| {
            this.handle(n, &worker_stop)
        });
        stop.cancelled().await;
        let _ = events.await;
        for t in tasks {
            let _ = t.await;
        }
        info!("simulated nodes stopped");
    }

    fn handle(&self, notification: Notification, stop: &CancellationToken) {
        match notification {
            Notification::Add(pod) | Notification::Update { new: pod, .. } => {
                let Some(kubelet) = pod["spec"]["nodeName"]
                    .as_str()
                    .and_then(|n| self.kubelets.get(n))
                else {
                    return;
                };
                kubelet.pod_update(pod, stop);
            }
            Notification::Delete(gone) => {
                let Some(pod) = gone.object() else {
                    return;
                };
                if let Some(kubelet) = pod["spec"]["nodeName"]
                    .as_str()
                    .and_then(|n| self.kubelets.get(n))
                {
                    kubelet.pod_removed(registry::object::uid(pod));
                }
            }
        }
    }
}

impl Kubelet {
    fn workers(&self) -> std::sync::MutexGuard<'_, HashMap<String, PodWorkerHandle>> {
        self.workers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// HandlePodAdditions / HandlePodUpdates: the pod's worker gets the latest pod.
    fn pod_update(&self, pod: Arc<Value>, stop: &CancellationToken) {
        let uid = registry::object::uid(&pod).to_string();
        let mut workers = self.workers();
        if let Some(w) = workers.get(&uid) {
            // The worker reads the pod from the informer's cache when it wakes.
            let _ = w.updates.send(true);
            return;
        }
        let (tx, rx) = watch::channel(true);
        workers.insert(uid, PodWorkerHandle { updates: tx });
        tokio::spawn(pod_worker::run(self.ctx.clone(), pod, rx, stop.clone()));
    }

    /// HandlePodRemoves: the worker stops what remains and ends.
    fn pod_removed(&self, uid: &str) {
        if let Some(w) = self.workers().remove(uid) {
            let _ = w.updates.send(false);
        }
    }
}
