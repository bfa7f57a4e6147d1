//! The scheduler's cache (upstream's internal/cache): every node with the pods assigned to
//! it and their aggregates (requests, host ports), kept up to date from the informers, plus
//! the pods this scheduler has just bound and the informer has not shown yet ("assumed"), so
//! the next decision already counts them.

use registry::types::PodPhase;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use client::component_helpers::{Taint, Toleration};
use registry::object;
use serde_json::Value;

use crate::resources::{non_zero_requests, pod_requests, Resources};

/// A host port a container asks for (protocol, host IP, port).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostPort {
    pub protocol: String,
    pub ip: String,
    pub port: i64,
}

impl HostPort {
    /// Whether two host ports clash: same protocol and port, and the same IP or a wildcard.
    pub fn conflicts(&self, other: &HostPort) -> bool {
        let wildcard = |ip: &str| ip.is_empty() || ip == "0.0.0.0";
        self.protocol == other.protocol
            && self.port == other.port
            && (self.ip == other.ip || wildcard(&self.ip) || wildcard(&other.ip))
    }
}

/// The host ports of a pod's containers (hostPort > 0 only).
pub fn host_ports(pod: &Value) -> Vec<HostPort> {
    let spec = &pod["spec"];
    let containers = spec["containers"].as_array().into_iter().flatten();
    let inits = spec["initContainers"].as_array().into_iter().flatten();
    containers
        .chain(inits)
        .flat_map(|c| c["ports"].as_array().into_iter().flatten())
        .filter_map(|p| {
            let port = p["hostPort"].as_i64().filter(|p| *p > 0)?;
            Some(HostPort {
                protocol: p["protocol"].as_str().unwrap_or("TCP").to_string(),
                ip: p["hostIP"].as_str().unwrap_or_default().to_string(),
                port,
            })
        })
        .collect()
}

/// What the scheduler needs of a pod, computed once.
#[derive(Debug)]
pub struct PodInfo {
    pub pod: Arc<Value>,
    pub key: String,
    pub requests: Resources,
    pub non_zero: Resources,
    pub ports: Vec<HostPort>,
    /// Of the pod being scheduled only (empty for placed pods): its tolerations, checked
    /// against the taints of every node a decision looks at.
    pub tolerations: Vec<Toleration>,
    /// The pod has neither a nodeSelector nor a required node affinity: every node's labels
    /// match it (of the pod being scheduled only).
    pub any_node_labels: bool,
}

impl PodInfo {
    pub fn new(pod: Arc<Value>) -> Self {
        let spec = &pod["spec"];
        let required =
            &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
        Self {
            key: format!("{}/{}", object::namespace(&pod), object::name(&pod)),
            requests: pod_requests(&pod),
            non_zero: non_zero_requests(&pod),
            ports: host_ports(&pod),
            tolerations: Toleration::list(&spec["tolerations"]),
            any_node_labels: !spec["nodeSelector"].is_object() && required.is_null(),
            pod,
        }
    }

    /// The info of a pod placed on a node, as the cache keeps it: what is computed from the
    /// whole pod, beside only the fields read of placed pods (see [`placed_view`]).
    pub fn placed(pod: &Value) -> Self {
        Self {
            key: format!("{}/{}", object::namespace(pod), object::name(pod)),
            requests: pod_requests(pod),
            non_zero: non_zero_requests(pod),
            ports: host_ports(pod),
            tolerations: Vec::new(),
            any_node_labels: false,
            pod: Arc::new(placed_view(pod)),
        }
    }

    pub fn namespace(&self) -> &str {
        object::namespace(&self.pod)
    }

    pub fn labels(&self) -> &Value {
        object::labels(&self.pod)
    }

    /// The required (anti-)affinity terms of the pod.
    pub fn required_terms(&self, kind: &str) -> &[Value] {
        self.pod["spec"]["affinity"][kind]["requiredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    }
}

/// What the cache keeps of a placed pod: the fields that filters, scores and preemption read
/// of pods already on nodes (identity and labels for affinity and spreading and for the
/// eviction's event and precondition; priority, the start time and the disruption condition
/// for preemption; the phase and deletion for what counts). The cache holds one per pod of
/// the cluster: a whole decoded pod is some 30 KB of maps, and every field kept here costs
/// its map entry and strings 150,000 times over.
pub fn placed_view(pod: &Value) -> Value {
    fn pick(from: &Value, fields: &[&str]) -> Value {
        let mut out = serde_json::Map::new();
        for f in fields {
            if let Some(v) = from.get(*f).filter(|v| !v.is_null()) {
                out.insert((*f).to_string(), v.clone());
            }
        }
        Value::Object(out)
    }
    let mut view = pick(pod, &["apiVersion", "kind"]);
    view["metadata"] = pick(
        &pod["metadata"],
        &["name", "namespace", "uid", "labels", "deletionTimestamp"],
    );
    let mut spec = pick(&pod["spec"], &["priority"]);
    // Only the required anti-affinity of placed pods is read (by the pods that come after).
    let anti = &pod["spec"]["affinity"]["podAntiAffinity"];
    if !anti.is_null() {
        spec["affinity"] = serde_json::json!({"podAntiAffinity": anti.clone()});
    }
    view["spec"] = spec;
    let mut status = pick(&pod["status"], &["phase", "startTime"]);
    let disruptions: Vec<Value> = pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["type"] == "DisruptionTarget")
        .cloned()
        .collect();
    if !disruptions.is_empty() {
        status["conditions"] = Value::Array(disruptions);
    }
    view["status"] = status;
    view
}

/// A node and what is placed on it. What the filters and scores read of every node they
/// look at is kept typed here, set once per node revision: at 5,000 nodes, field lookups in
/// the nodes' JSON (scattered over the heap, a cache miss each) were a fifth of the server's
/// CPU.
#[derive(Clone, Debug, Default)]
pub struct NodeInfo {
    /// None while pods name a node the informer has not shown (or has deleted).
    pub node: Option<Arc<Value>>,
    name: String,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// `spec.taints`.
    pub taints: Vec<Taint>,
    pub allocatable: Resources,
    pub allowed_pods: i64,
    pub requested: Resources,
    pub non_zero_requested: Resources,
    pub pods: BTreeMap<String, Arc<PodInfo>>,
    /// The pods with required anti-affinity terms (upstream's PodsWithRequiredAntiAffinity):
    /// every decision checks them, and most pods have none, so a decision costs the nodes and
    /// these, not every pod of the cluster.
    pub with_required_anti_affinity: BTreeMap<String, Arc<PodInfo>>,
}

impl NodeInfo {
    fn set_node(&mut self, node: Arc<Value>) {
        let allocatable = &node["status"]["allocatable"];
        self.allocatable = Resources::from_list(allocatable);
        self.allowed_pods = allocatable["pods"]
            .as_str()
            .and_then(registry::types::parse_quantity)
            .map(|p| p as i64)
            .or_else(|| allocatable["pods"].as_i64())
            .unwrap_or(0);
        self.name = object::name(&node).to_string();
        self.unschedulable = node["spec"]["unschedulable"] == Value::Bool(true);
        self.taints = Taint::list(&node["spec"]["taints"]);
        self.node = Some(node);
    }

    /// The node's name ("" while the node is unknown).
    pub fn name(&self) -> &str {
        if self.node.is_some() {
            &self.name
        } else {
            ""
        }
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.node
            .as_deref()
            .and_then(|n| object::labels(n).get(key))
            .and_then(Value::as_str)
    }

    pub fn ports_in_use(&self) -> impl Iterator<Item = &HostPort> {
        self.pods.values().flat_map(|p| p.ports.iter())
    }

    pub(crate) fn add(&mut self, pod: Arc<PodInfo>) {
        self.requested.add(&pod.requests);
        self.non_zero_requested.add(&pod.non_zero);
        if !pod.required_terms("podAntiAffinity").is_empty() {
            self.with_required_anti_affinity
                .insert(pod.key.clone(), pod.clone());
        }
        self.pods.insert(pod.key.clone(), pod);
    }

    pub(crate) fn remove(&mut self, key: &str) {
        if let Some(pod) = self.pods.remove(key) {
            self.with_required_anti_affinity.remove(key);
            self.requested.sub(&pod.requests);
            self.non_zero_requested.sub(&pod.non_zero);
        }
    }
}

#[derive(Default)]
pub struct Cache {
    nodes: BTreeMap<String, NodeInfo>,
    /// Pod key → (node, assumed by us and not yet seen bound).
    placed: HashMap<String, (String, bool)>,
}

impl Cache {
    pub fn nodes(&self) -> impl Iterator<Item = &NodeInfo> {
        self.nodes.values().filter(|n| n.node.is_some())
    }

    pub fn set_node(&mut self, node: Arc<Value>) {
        let name = object::name(&node).to_string();
        self.nodes.entry(name).or_default().set_node(node);
    }

    pub fn remove_node(&mut self, name: &str) {
        let empty = self.nodes.get_mut(name).map(|info| {
            info.node = None;
            info.pods.is_empty()
        });
        if empty == Some(true) {
            self.nodes.remove(name);
        }
    }

    /// A pod the informer shows assigned to a node (confirming an assumed one), or one this
    /// scheduler assumes (`assumed`). A finished pod holds nothing.
    pub fn add_pod(&mut self, pod: Arc<Value>, assumed: bool) {
        let node = pod["spec"]["nodeName"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let info = Arc::new(PodInfo::placed(&pod));
        drop(pod);
        self.remove_pod(&info.key);
        if node.is_empty() || PodPhase::terminal(&info.pod) {
            return;
        }
        self.placed
            .insert(info.key.clone(), (node.clone(), assumed));
        self.nodes.entry(node).or_default().add(info);
    }

    pub fn remove_pod(&mut self, key: &str) {
        let Some((node, _)) = self.placed.remove(key) else {
            return;
        };
        let gone = self.nodes.get_mut(&node).map(|info| {
            info.remove(key);
            info.node.is_none() && info.pods.is_empty()
        });
        if gone == Some(true) {
            self.nodes.remove(&node);
        }
    }

    /// Drops an assumed pod whose binding failed; a pod the informer showed bound stays.
    pub fn forget(&mut self, key: &str) {
        if matches!(self.placed.get(key), Some((_, true))) {
            self.remove_pod(key);
        }
    }

    /// Whether the pod is placed (assumed or seen bound).
    pub fn is_placed(&self, key: &str) -> bool {
        self.placed.contains_key(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_placed_pod_keeps_what_is_read_of_placed_pods_and_not_its_spec() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"app": "a"},
                "deletionTimestamp": "2024-01-01T00:00:00Z", "resourceVersion": "5",
                "creationTimestamp": "2024-01-01T00:00:00Z",
                "ownerReferences": [{"uid": "rs", "controller": true}],
                "managedFields": [{"manager": "m"}], "annotations": {"big": "x"}},
            "spec": {"nodeName": "n", "priority": 7, "preemptionPolicy": "Never",
                "schedulerName": "default-scheduler", "nodeSelector": {"a": "b"},
                "affinity": {"podAntiAffinity": {}, "nodeAffinity": {}},
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}},
                    "ports": [{"hostPort": 80, "containerPort": 80}]}],
                "tolerations": [{"key": "k"}], "volumes": [{"name": "v"}]},
            "status": {"phase": "Running", "startTime": "2024-01-01T00:00:00Z",
                "conditions": [{"type": "Ready", "status": "True"},
                    {"type": "DisruptionTarget", "reason": "PreemptionByScheduler"}],
                "containerStatuses": [{"name": "c"}]}
        });
        let info = PodInfo::placed(&pod);
        // What is computed from the whole pod is still whole.
        assert_eq!(info.key, "ns/p");
        assert_eq!(info.requests, pod_requests(&pod));
        assert_eq!(info.ports.len(), 1);
        assert_eq!(
            *info.pod,
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"app": "a"},
                    "deletionTimestamp": "2024-01-01T00:00:00Z"},
                "spec": {"priority": 7, "affinity": {"podAntiAffinity": {}}},
                "status": {"phase": "Running", "startTime": "2024-01-01T00:00:00Z",
                    "conditions": [{"type": "DisruptionTarget",
                        "reason": "PreemptionByScheduler"}]}
            })
        );
    }
}
