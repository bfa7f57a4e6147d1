//! DynamicResources (upstream's scheduler plugin, structured parameters): a pod's
//! ResourceClaims must exist (PreFilter); on each node, a claim already allocated must be
//! reachable there, and one not yet allocated must find the devices its requests ask for
//! among the ResourceSlices published for that node (or for all nodes) and not allocated to
//! another claim, each device passing its class's and its request's CEL selectors (Filter).
//! The chosen node's allocation is written to the claim's status, with the pod reserved, before
//! the pod is bound (Reserve and PreBind).
//!
//! Not modelled: device taints and tolerations, constraints across requests (`matchAttribute`),
//! admin access, consumable capacity, partitionable devices (shared counters), slices chosen
//! by node selector or per device, and Kubernetes' quantity and semver CEL libraries (a
//! selector that uses them does not compile and the claim cannot be allocated).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use apiextensions::cel::Expression;
use client::component_helpers::node_selector_matches;
use client::informer::SharedInformer;
use registry::object;
use serde_json::{json, Map, Value};

use crate::cache::NodeInfo;
use crate::filters::Rejection;

/// The finalizer an allocated claim carries until it is deallocated.
pub const DELETE_PROTECTION: &str = "resource.kubernetes.io/delete-protection";
const CANNOT_ALLOCATE: &str = "cannot allocate all claims";
const NOT_ON_NODE: &str = "resourceclaim not available on the node";

/// A device, as allocations name it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceId {
    pub driver: String,
    pub pool: String,
    pub device: String,
}

/// The claim named by a pod's `spec.resourceClaims` entry (upstream's resourceclaim.Name).
fn claim_name<'a>(pod: &'a Value, entry: &'a Value) -> Result<Option<&'a str>, String> {
    if let Some(name) = entry["resourceClaimName"].as_str() {
        return Ok(Some(name));
    }
    if entry["resourceClaimTemplateName"].is_string() {
        let own = entry["name"].as_str().unwrap_or_default();
        let status = pod["status"]["resourceClaimStatuses"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["name"] == own);
        return match status {
            // Made from the template, or not needed (no name).
            Some(s) => Ok(s["resourceClaimName"].as_str()),
            None => Err(format!(
                "pod \"{}/{}\": ResourceClaim not created yet",
                object::namespace(pod),
                object::name(pod)
            )),
        };
    }
    Err("none of the supported fields are set".into())
}

/// The claims of a pod (PreFilter); Err is why the pod cannot be scheduled yet.
pub fn pod_claims(pod: &Value, claims: &SharedInformer) -> Result<Vec<Arc<Value>>, String> {
    let mut out = Vec::new();
    let namespace = object::namespace(pod);
    for entry in pod["spec"]["resourceClaims"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let Some(name) = claim_name(pod, entry)? else {
            continue;
        };
        let claim = claims
            .indexer()
            .get(&format!("{namespace}/{name}"))
            .ok_or_else(|| format!("resourceclaim.resource.k8s.io \"{name}\" not found"))?;
        // A claim made from a template belongs to its pod.
        if entry["resourceClaimTemplateName"].is_string() {
            let owned = claim["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["uid"] == pod["metadata"]["uid"]);
            if !owned {
                return Err(format!(
                    "ResourceClaim {namespace}/{name} was not created for pod {namespace}/{} (pod is not owner)",
                    object::name(pod)
                ));
            }
        }
        if claim["metadata"]["deletionTimestamp"].is_string() {
            return Err(format!("resourceclaim \"{name}\" is being deleted"));
        }
        out.push(claim);
    }
    Ok(out)
}

/// The allocation results of a claim.
fn allocated_devices(claim: &Value) -> impl Iterator<Item = DeviceId> + '_ {
    claim["status"]["allocation"]["devices"]["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| DeviceId {
            driver: r["driver"].as_str().unwrap_or_default().to_string(),
            pool: r["pool"].as_str().unwrap_or_default().to_string(),
            device: r["device"].as_str().unwrap_or_default().to_string(),
        })
}

/// A device as its selectors see it: attributes and capacities by domain (an unqualified name
/// is the driver's), attribute values unwrapped from their type tags.
fn cel_device(driver: &str, device: &Value) -> Value {
    let split = |name: &str| -> (String, String) {
        match name.rsplit_once('/') {
            Some((domain, id)) => (domain.to_string(), id.to_string()),
            None => (driver.to_string(), name.to_string()),
        }
    };
    let mut attributes: Map<String, Value> = Map::new();
    for (name, value) in device["attributes"].as_object().into_iter().flatten() {
        let (domain, id) = split(name);
        let unwrapped = ["int", "bool", "string", "version"]
            .iter()
            .find_map(|t| value.get(*t).cloned())
            .unwrap_or(Value::Null);
        attributes
            .entry(domain)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .map(|m| m.insert(id, unwrapped));
    }
    let mut capacity: Map<String, Value> = Map::new();
    for (name, value) in device["capacity"].as_object().into_iter().flatten() {
        let (domain, id) = split(name);
        capacity
            .entry(domain)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .map(|m| m.insert(id, value["value"].clone()));
    }
    json!({
        "driver": driver,
        "attributes": attributes,
        "capacity": capacity,
        "allowMultipleAllocations": device["allowMultipleAllocations"].as_bool().unwrap_or(false),
    })
}

/// What one decision knows: the devices taken, the classes and the slices, and the
/// expressions compiled so far.
pub struct DraState {
    claims: Vec<Arc<Value>>,
    taken: BTreeSet<DeviceId>,
    classes: HashMap<String, Arc<Value>>,
    slices: Vec<Arc<Value>>,
    compiled: std::sync::Mutex<HashMap<String, Option<Arc<Expression>>>>,
}

/// One claim's allocation on the chosen node.
#[derive(Clone, Debug)]
pub struct ClaimAllocation {
    pub claim: Arc<Value>,
    /// None: already allocated (the pod is only added to its consumers).
    pub allocation: Option<Value>,
}

impl DraState {
    /// `assumed`: devices of allocations decided but not yet seen written.
    pub fn compute(
        claims: Vec<Arc<Value>>,
        all_claims: &SharedInformer,
        classes: &SharedInformer,
        slices: &SharedInformer,
        assumed: &BTreeSet<DeviceId>,
    ) -> Self {
        let mut taken: BTreeSet<DeviceId> = assumed.clone();
        if !claims.is_empty() {
            for c in all_claims.indexer().list() {
                taken.extend(allocated_devices(&c));
            }
        }
        Self {
            taken,
            classes: classes
                .indexer()
                .list()
                .into_iter()
                .map(|c| (object::name(&c).to_string(), c))
                .collect(),
            slices: if claims.is_empty() {
                Vec::new()
            } else {
                slices.indexer().list()
            },
            claims,
            compiled: Default::default(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.claims.is_empty()
    }

    fn expression(&self, source: &str) -> Option<Arc<Expression>> {
        let mut compiled = self.compiled.lock().unwrap_or_else(|p| p.into_inner());
        compiled
            .entry(source.to_string())
            .or_insert_with(|| Expression::compile(source).ok().map(Arc::new))
            .clone()
    }

    /// Whether every selector takes the device in; a selector that does not compile or
    /// evaluate takes nothing.
    fn selected(&self, selectors: &[&Value], device: &Value) -> bool {
        selectors.iter().all(|s| {
            let Some(source) = s.pointer("/cel/expression").and_then(Value::as_str) else {
                return false;
            };
            self.expression(source)
                .is_some_and(|e| e.evaluate_bool(&[("device", device)]) == Ok(true))
        })
    }

    /// The devices of one request (or subrequest) on `node`, none of them in `taken`.
    fn pick(
        &self,
        request: &Value,
        node: &str,
        taken: &BTreeSet<DeviceId>,
    ) -> Option<Vec<DeviceId>> {
        let class = self.classes.get(request["deviceClassName"].as_str()?)?;
        let mut selectors: Vec<&Value> = class["spec"]["selectors"]
            .as_array()
            .into_iter()
            .flatten()
            .collect();
        selectors.extend(request["selectors"].as_array().into_iter().flatten());
        let mut found = Vec::new();
        for slice in &self.slices {
            let spec = &slice["spec"];
            let here = spec["nodeName"].as_str() == Some(node) || spec["allNodes"] == true;
            if !here {
                continue;
            }
            let driver = spec["driver"].as_str().unwrap_or_default();
            let pool = spec["pool"]["name"].as_str().unwrap_or_default();
            for device in spec["devices"].as_array().into_iter().flatten() {
                let id = DeviceId {
                    driver: driver.to_string(),
                    pool: pool.to_string(),
                    device: device["name"].as_str().unwrap_or_default().to_string(),
                };
                if taken.contains(&id) || found.contains(&id) {
                    continue;
                }
                if self.selected(&selectors, &cel_device(driver, device)) {
                    found.push(id);
                }
            }
        }
        match request["allocationMode"].as_str() {
            Some("All") => (!found.is_empty()).then_some(found),
            _ => {
                let count = request["count"].as_u64().unwrap_or(1) as usize;
                (found.len() >= count).then(|| found.into_iter().take(count).collect())
            }
        }
    }

    /// One claim's devices on `node`: each request in order, a `firstAvailable` request by
    /// its first subrequest that can be met.
    fn allocate(&self, claim: &Value, node: &str, taken: &mut BTreeSet<DeviceId>) -> Option<Value> {
        let mut results = Vec::new();
        for request in claim["spec"]["devices"]["requests"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let name = request["name"].as_str().unwrap_or_default();
            let (label, devices) = if let Some(exactly) = request.get("exactly") {
                (name.to_string(), self.pick(exactly, node, taken)?)
            } else {
                request["firstAvailable"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find_map(|sub| {
                        let sub_name = sub["name"].as_str().unwrap_or_default();
                        self.pick(sub, node, taken)
                            .map(|d| (format!("{name}/{sub_name}"), d))
                    })?
            };
            for id in devices {
                results.push(json!({
                    "request": label, "driver": id.driver, "pool": id.pool, "device": id.device,
                }));
                taken.insert(id);
            }
        }
        Some(json!({
            "devices": {"results": results},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}
            ]}]},
        }))
    }

    /// The Filter: the pod's claims on `node`, or why not.
    pub fn filter(&self, node: &NodeInfo) -> Result<Vec<ClaimAllocation>, Rejection> {
        let Some(node_object) = node.node.as_deref() else {
            return Err(Rejection::unresolvable(NOT_ON_NODE));
        };
        let mut taken = self.taken.clone();
        let mut out = Vec::new();
        for claim in &self.claims {
            let allocation = &claim["status"]["allocation"];
            if !allocation.is_null() {
                let reachable = allocation
                    .get("nodeSelector")
                    .is_none_or(|s| s.is_null() || node_selector_matches(s, node_object));
                if !reachable {
                    return Err(Rejection::unresolvable(NOT_ON_NODE));
                }
                out.push(ClaimAllocation {
                    claim: claim.clone(),
                    allocation: None,
                });
                continue;
            }
            match self.allocate(claim, node.name(), &mut taken) {
                Some(allocation) => out.push(ClaimAllocation {
                    claim: claim.clone(),
                    allocation: Some(allocation),
                }),
                // Evicting pods frees no devices here: preemption cannot help.
                None => return Err(Rejection::unresolvable(CANNOT_ALLOCATE)),
            }
        }
        Ok(out)
    }
}

/// The devices an allocation takes.
pub fn devices_of(allocation: &Value) -> Vec<DeviceId> {
    allocated_devices(&json!({"status": {"allocation": allocation}})).collect()
}

/// The claim with the allocation (if new) and the pod among its consumers, its finalizer
/// set: what the scheduler writes before binding.
pub fn reserved(claim: &Value, allocation: Option<&Value>, pod: &Value) -> Value {
    let mut claim = claim.clone();
    if let Some(allocation) = allocation {
        claim["status"]["allocation"] = allocation.clone();
    }
    let consumer = json!({
        "resource": "pods",
        "name": object::name(pod),
        "uid": object::uid(pod),
    });
    let reserved = claim["status"]["reservedFor"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !reserved.iter().any(|r| r["uid"] == consumer["uid"]) {
        let mut reserved = reserved;
        reserved.push(consumer);
        claim["status"]["reservedFor"] = Value::Array(reserved);
    }
    claim
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_are_seen_by_domain_with_their_values_unwrapped() {
        let device = json!({"name": "gpu-0", "attributes": {
            "model": {"string": "a100"}, "other.example.com/index": {"int": 1}},
            "capacity": {"memory": {"value": "16Gi"}}});
        assert_eq!(
            cel_device("gpu.example.com", &device),
            json!({"driver": "gpu.example.com",
                "attributes": {"gpu.example.com": {"model": "a100"}, "other.example.com": {"index": 1}},
                "capacity": {"gpu.example.com": {"memory": "16Gi"}},
                "allowMultipleAllocations": false})
        );
    }

    #[test]
    fn template_claims_are_named_by_the_pods_status() {
        let pod = json!({"metadata": {"name": "p", "namespace": "d"},
            "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x1"}]}});
        let entry = json!({"name": "gpu", "resourceClaimTemplateName": "t"});
        assert_eq!(claim_name(&pod, &entry), Ok(Some("p-gpu-x1")));
        let other = json!({"name": "fpga", "resourceClaimTemplateName": "t"});
        assert_eq!(
            claim_name(&pod, &other),
            Err("pod \"d/p\": ResourceClaim not created yet".to_string())
        );
        let direct = json!({"name": "x", "resourceClaimName": "shared"});
        assert_eq!(claim_name(&pod, &direct), Ok(Some("shared")));
    }
}
