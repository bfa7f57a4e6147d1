//! Every simulated node of the process: registration and heartbeats, and one kubelet per
//! node. The kubelets share the process's pods informer (upstream's kubelet watches with the
//! field selector spec.nodeName; here one informer serves all, and each notification goes to
//! the kubelet of the node it names). Pods' workers are state stepped from one shared queue
//! (`pod_workers`), not a task per pod.

use std::collections::HashMap;
use std::sync::Arc;

use client::events::EventRecorder;
use client::informer::{dispatch, InformerFactory, Notification, SharedInformer};
use registry::Store;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::config::NodeConfig;
use crate::error::{KubeletError, Result};
use crate::network::{probe_network_plugin, Ipv4Cidr};
use crate::node::{self, object::internal_ip};
use crate::pod_worker::NodeContext;
use crate::pod_workers::{PodWorkStats, PodWorkers};
use crate::status::StatusManager;

/// The component name of the kubelet's events.
pub const COMPONENT: &str = "kubelet";
/// Writers of the nodes' shared event recorder: each pod started makes three events (pulled,
/// created, started), a thousand nodes' worth at once; with the default
/// four, a burst of pods made the recorder drop most of them.
const EVENT_WRITERS: usize = 32;

pub struct Nodes {
    config: NodeConfig,
    pods: SharedInformer,
    node_store: Arc<Store>,
    leases: Arc<Store>,
    /// Where the simulated DRA driver publishes (None when resource.k8s.io is not served).
    slices: Option<Arc<Store>>,
    node_objects: Vec<serde_json::Value>,
    /// Each node's kubelet, by node name.
    kubelets: HashMap<String, Arc<NodeContext>>,
    workers: Arc<PodWorkers>,
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
        let recorder = EventRecorder::with_writer_count(
            informers.registry().clone(),
            COMPONENT,
            EVENT_WRITERS,
        );
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
            kubelets.insert(name, Arc::new(ctx));
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
            workers: Arc::new(PodWorkers::new()),
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
        let workers = tokio::spawn(self.workers.clone().run(stop.clone()));
        let this = self.clone();
        let events = dispatch(self.pods.subscribe(), stop.clone(), move |n| this.handle(n));
        stop.cancelled().await;
        let _ = events.await;
        let _ = workers.await;
        for t in tasks {
            let _ = t.await;
        }
        info!("simulated nodes stopped");
    }

    /// What the pod workers hold now (tests prove idle pods hold nothing).
    pub fn pod_work(&self) -> PodWorkStats {
        self.workers.stats()
    }

    fn handle(&self, notification: Notification) {
        match notification {
            Notification::Add(pod) | Notification::Update { new: pod, .. } => {
                let Some(kubelet) = pod["spec"]["nodeName"]
                    .as_str()
                    .and_then(|n| self.kubelets.get(n))
                else {
                    return;
                };
                self.workers.update(kubelet, &pod);
            }
            Notification::Delete(gone) => {
                let Some(pod) = gone.object() else {
                    return;
                };
                // Removal goes by UID: a pod's node never changes once it is bound.
                self.workers.remove(registry::object::uid(pod));
            }
        }
    }
}
