//! What an object costs in quota, by resource (upstream's quota evaluators): pods (compute
//! resources, counted while not terminal), services (load balancers and node ports),
//! persistent volume claims (storage, per class too) and, for every other resource, the
//! object count (`count/<resource>.<group>`, and the legacy names `configmaps`, `secrets`,
//! `replicationcontrollers`, `resourcequotas`).

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use super::{add, object_count_name, Quantity, ResourceList};
use crate::admission::Operation;
use crate::types::{claim_class, ContainerRestartPolicy, PodPhase};

/// One scope requirement of a quota (corev1.ScopedResourceSelectorRequirement).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeSelector {
    pub scope: String,
    pub operator: String,
    pub values: Vec<String>,
}

impl ScopeSelector {
    pub fn from_json(value: &Value) -> Self {
        Self {
            scope: value["scopeName"].as_str().unwrap_or_default().to_string(),
            operator: value["operator"].as_str().unwrap_or_default().to_string(),
            values: value["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        }
    }
}

/// How a resource's objects are charged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evaluator {
    Pods,
    Services,
    Claims,
    /// Every object counts one under each name.
    Count(Vec<String>),
}

const POD_RESOURCES: &[&str] = &[
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];
const SERVICE_RESOURCES: &[&str] = &[
    "count/services",
    "services",
    "services.loadbalancers",
    "services.nodeports",
];
const CLAIM_RESOURCES: &[&str] = &["persistentvolumeclaims", "requests.storage"];
const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";
/// Quotas on these make every pod say what it wants of them (upstream keeps this old rule
/// for cpu and memory only).
const MUST_SPECIFY: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// Resources that are not named by a domain, or by a kubernetes.io one.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

fn is_extended(name: &str) -> bool {
    !is_native(name) && !name.starts_with("requests.")
}

impl Evaluator {
    /// The evaluator of `group`/`plural`.
    pub fn for_resource(group: &str, plural: &str) -> Self {
        match (group, plural) {
            ("", "pods") => Self::Pods,
            ("", "services") => Self::Services,
            ("", "persistentvolumeclaims") => Self::Claims,
            _ => {
                let mut names = vec![object_count_name(group, plural)];
                if group.is_empty()
                    && matches!(
                        plural,
                        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas"
                    )
                {
                    names.push(plural.to_string());
                }
                Self::Count(names)
            }
        }
    }

    /// Whether an update changed what the object is charged (a pod turned terminal, a service
    /// turned load balancer, a claim grown): the quotas of its namespace must be recounted
    /// (upstream's replenishment). Object counts change only by creates and deletes.
    pub fn replenishes(&self, old: &Value, new: &Value, now: DateTime<Utc>) -> bool {
        match self {
            Self::Count(_) => false,
            _ => !super::equals(&self.usage(old, now), &self.usage(new, now)),
        }
    }

    /// Whether a request can change what the resource uses.
    pub fn handles(&self, operation: Operation, subresource: &str) -> bool {
        match self {
            // In-place resize is not served here; a pod's cost is fixed at its create.
            Self::Pods | Self::Count(_) => operation == Operation::Create && subresource.is_empty(),
            Self::Services | Self::Claims => {
                matches!(operation, Operation::Create | Operation::Update) && subresource.is_empty()
            }
        }
    }

    /// Those of `names` this evaluator accounts for.
    pub fn matching_resources(&self, names: &BTreeSet<String>) -> BTreeSet<String> {
        names
            .iter()
            .filter(|name| match self {
                Self::Pods => {
                    POD_RESOURCES.contains(&name.as_str())
                        || name.starts_with("hugepages-")
                        || name.starts_with("requests.hugepages-")
                        || (name.starts_with("requests.") && !is_native(name))
                }
                Self::Services => SERVICE_RESOURCES.contains(&name.as_str()),
                Self::Claims => {
                    name.as_str() == "count/persistentvolumeclaims"
                        || CLAIM_RESOURCES.contains(&name.as_str())
                        || name
                            .split_once(STORAGE_CLASS_SUFFIX)
                            .is_some_and(|(_, rest)| CLAIM_RESOURCES.contains(&rest))
                }
                Self::Count(own) => own.contains(name),
            })
            .cloned()
            .collect()
    }

    /// Whether `object` is in `selector`'s scope.
    pub fn matches_scope(
        &self,
        selector: &ScopeSelector,
        object: &Value,
        now: DateTime<Utc>,
    ) -> bool {
        match self {
            Self::Pods => pod_in_scope(selector, object, now),
            _ => false,
        }
    }

    /// Whether `quota` counts `object`: it limits something this evaluator charges and every
    /// scope of it takes the object in.
    pub fn matches(&self, quota: &Value, object: &Value, now: DateTime<Utc>) -> bool {
        let hard = super::names(&super::parse_list(quota.pointer("/status/hard")));
        !self.matching_resources(&hard).is_empty()
            && super::scope_selectors(quota)
                .iter()
                .all(|s| self.matches_scope(s, object, now))
    }

    /// The scopes of `selectors` that take `object` in.
    pub fn matching_scopes(
        &self,
        object: &Value,
        selectors: &[ScopeSelector],
        now: DateTime<Utc>,
    ) -> Vec<ScopeSelector> {
        selectors
            .iter()
            .filter(|s| self.matches_scope(s, object, now))
            .cloned()
            .collect()
    }

    /// What `object` costs.
    pub fn usage(&self, object: &Value, now: DateTime<Utc>) -> ResourceList {
        match self {
            Self::Pods => pod_usage(object, now),
            Self::Services => service_usage(object),
            Self::Claims => claim_usage(object),
            Self::Count(names) => names
                .iter()
                .map(|n| (n.clone(), Quantity::count(1)))
                .collect(),
        }
    }

    /// upstream's Constraints: a pod under a quota of cpu or memory must say, in every
    /// container, what it wants of them: `must specify limits.cpu for: a,b; requests.cpu for: a`.
    pub fn constraints(&self, required: &BTreeSet<String>, object: &Value) -> Result<(), String> {
        if *self != Self::Pods {
            return Ok(());
        }
        let required: BTreeSet<&str> = required
            .iter()
            .map(String::as_str)
            .filter(|r| MUST_SPECIFY.contains(r))
            .collect();
        let mut missing: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for field in ["containers", "initContainers"] {
            for c in object["spec"][field].as_array().into_iter().flatten() {
                let has = compute_usage(
                    &super::parse_list(c.pointer("/resources/requests")),
                    &super::parse_list(c.pointer("/resources/limits")),
                );
                for name in &required {
                    if !has.contains_key(*name) {
                        missing
                            .entry(name)
                            .or_default()
                            .insert(c["name"].as_str().unwrap_or_default());
                    }
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = missing
            .iter()
            .map(|(r, cs)| {
                format!(
                    "{r} for: {}",
                    cs.iter().copied().collect::<Vec<_>>().join(",")
                )
            })
            .collect();
        Err(format!("must specify {}", parts.join("; ")))
    }

    /// The summed usage of `objects` in the quota's scopes, every one of `resources` present
    /// (zero when nothing uses it), as upstream's CalculateUsageStats.
    pub fn usage_stats<'a>(
        &self,
        objects: impl IntoIterator<Item = &'a Value>,
        selectors: &[ScopeSelector],
        resources: &BTreeSet<String>,
        now: DateTime<Utc>,
    ) -> ResourceList {
        let mut used: ResourceList = resources
            .iter()
            .map(|r| (r.clone(), Quantity::default()))
            .collect();
        for object in objects {
            if selectors.iter().all(|s| self.matches_scope(s, object, now)) {
                used = add(&used, &self.usage(object, now));
            }
        }
        used
    }
}

/// The resource (group, plural) whose objects a quota's resource name counts: what a
/// controller must watch to keep that name's usage; None for a name no evaluator knows.
pub fn resource_for(name: &str) -> Option<(String, String)> {
    let names = BTreeSet::from([name.to_string()]);
    for (plural, evaluator) in [
        ("pods", Evaluator::Pods),
        ("services", Evaluator::Services),
        ("persistentvolumeclaims", Evaluator::Claims),
    ] {
        if !evaluator.matching_resources(&names).is_empty() {
            return Some((String::new(), plural.into()));
        }
    }
    if let Some(counted) = name.strip_prefix("count/") {
        let (plural, group) = counted.split_once('.').unwrap_or((counted, ""));
        return (!plural.is_empty()).then(|| (group.to_string(), plural.to_string()));
    }
    matches!(
        name,
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas"
    )
    .then(|| (String::new(), name.to_string()))
}

/// upstream's QuotaV1Pod: a terminal pod, or one whose deletion grace ran out long ago (a lost
/// node), is not charged for compute.
fn charged(pod: &Value, now: DateTime<Utc>) -> bool {
    if PodPhase::terminal(pod) {
        return false;
    }
    let deleted = pod["metadata"]["deletionTimestamp"]
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok());
    let grace = pod["metadata"]["deletionGracePeriodSeconds"].as_i64();
    if let (Some(deleted), Some(grace)) = (deleted, grace) {
        if now > deleted.with_timezone(&Utc) + Duration::seconds(grace) {
            return false;
        }
    }
    true
}

/// upstream's podComputeUsageHelper: one pod, and the requests and limits it names.
fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert("pods".into(), Quantity::count(1));
    for (resource, legacy) in [("cpu", true), ("memory", true), ("ephemeral-storage", true)] {
        if let Some(q) = requests.get(resource) {
            if legacy {
                out.insert(resource.into(), *q);
            }
            out.insert(format!("requests.{resource}"), *q);
        }
        if let Some(q) = limits.get(resource) {
            out.insert(format!("limits.{resource}"), *q);
        }
    }
    for (resource, q) in requests {
        if resource.starts_with("hugepages-") {
            out.insert(resource.clone(), *q);
            out.insert(format!("requests.{resource}"), *q);
        }
        if is_extended(resource) {
            out.insert(format!("requests.{resource}"), *q);
        }
    }
    out
}

/// The pod's requests or limits (`which`), as upstream's PodRequests and PodLimits sum them:
/// the app containers and sidecars together, at least the largest init container's (with the
/// sidecars started before it), the pod's overhead added (to limits only where limited), and
/// pod-level resources in place of the sums where the pod sets them.
pub fn pod_resources(pod: &Value, which: &str) -> ResourceList {
    let list = |c: &Value| super::parse_list(c.pointer(&format!("/resources/{which}")));
    let mut sum = ResourceList::new();
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        sum = add(&sum, &list(c));
    }
    let mut sidecars = ResourceList::new();
    let mut init_peak = ResourceList::new();
    for c in pod["spec"]["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let own = list(c);
        let at = if ContainerRestartPolicy::restartable(c) {
            sum = add(&sum, &own);
            sidecars = add(&sidecars, &own);
            sidecars.clone()
        } else {
            add(&own, &sidecars)
        };
        for (k, v) in at {
            let peak = init_peak.entry(k).or_default();
            if v > *peak {
                *peak = v;
            }
        }
    }
    for (k, v) in init_peak {
        let total = sum.entry(k).or_default();
        if v > *total {
            *total = v;
        }
    }
    let overhead = super::parse_list(pod.pointer("/spec/overhead"));
    for (k, v) in overhead {
        if which == "requests" {
            sum.entry(k).or_default().add(&v);
        } else if let Some(limit) = sum.get_mut(&k) {
            limit.add(&v);
        }
    }
    let pod_level = super::parse_list(pod.pointer(&format!("/spec/resources/{which}")));
    for (k, v) in pod_level {
        if k == "cpu" || k == "memory" {
            sum.insert(k, v);
        }
    }
    sum
}

fn pod_usage(pod: &Value, now: DateTime<Utc>) -> ResourceList {
    let mut out = ResourceList::from([("count/pods".to_string(), Quantity::count(1))]);
    if !charged(pod, now) {
        return out;
    }
    let usage = compute_usage(
        &pod_resources(pod, "requests"),
        &pod_resources(pod, "limits"),
    );
    out.extend(usage);
    out
}

/// upstream's QoS BestEffort: no container asks for or limits cpu or memory.
fn best_effort(pod: &Value) -> bool {
    let names_any = |c: &Value, which: &str| {
        c["resources"][which]
            .as_object()
            .is_some_and(|m| m.keys().any(|k| k == "cpu" || k == "memory"))
    };
    let pod_level = ["requests", "limits"]
        .iter()
        .any(|w| names_any(&pod["spec"], w));
    !pod_level
        && ["containers", "initContainers"].iter().all(|field| {
            pod["spec"][*field]
                .as_array()
                .into_iter()
                .flatten()
                .all(|c| !names_any(c, "requests") && !names_any(c, "limits"))
        })
}

fn cross_namespace_affinity(pod: &Value) -> bool {
    let term = |t: &Value| {
        t["namespaces"].as_array().is_some_and(|n| !n.is_empty())
            || t.get("namespaceSelector").is_some_and(|s| !s.is_null())
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let affinity = &pod["spec"]["affinity"][*kind];
        affinity["requiredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .into_iter()
            .flatten()
            .any(term)
            || affinity["preferredDuringSchedulingIgnoredDuringExecution"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|w| term(&w["podAffinityTerm"]))
    })
}

/// A pod with a deadline (upstream's isTerminating).
fn terminating(pod: &Value) -> bool {
    pod["spec"]["activeDeadlineSeconds"]
        .as_i64()
        .is_some_and(|s| s >= 0)
}

fn pod_in_scope(selector: &ScopeSelector, pod: &Value, _now: DateTime<Utc>) -> bool {
    match selector.scope.as_str() {
        "Terminating" => terminating(pod),
        "NotTerminating" => !terminating(pod),
        "BestEffort" => best_effort(pod),
        "NotBestEffort" => !best_effort(pod),
        "PriorityClass" => {
            let class = pod["spec"]["priorityClassName"]
                .as_str()
                .filter(|c| !c.is_empty());
            match selector.operator.as_str() {
                "Exists" => class.is_some(),
                "DoesNotExist" => class.is_none(),
                "In" => class.is_some_and(|c| selector.values.iter().any(|v| v == c)),
                "NotIn" => class.is_none_or(|c| !selector.values.iter().any(|v| v == c)),
                _ => false,
            }
        }
        "CrossNamespacePodAffinity" => cross_namespace_affinity(pod),
        _ => false,
    }
}

fn service_usage(service: &Value) -> ResourceList {
    let mut out = ResourceList::from([
        ("services".to_string(), Quantity::count(1)),
        ("count/services".to_string(), Quantity::count(1)),
    ]);
    let ports = service["spec"]["ports"].as_array().map_or(0, Vec::len) as i64;
    match service["spec"]["type"].as_str() {
        Some("NodePort") => {
            out.insert("services.nodeports".into(), Quantity::count(ports));
        }
        Some("LoadBalancer") => {
            out.insert("services.loadbalancers".into(), Quantity::count(1));
            if service["spec"]["allocateLoadBalancerNodePorts"].as_bool() != Some(false) {
                out.insert("services.nodeports".into(), Quantity::count(ports));
            }
        }
        _ => {}
    }
    out
}

fn claim_usage(claim: &Value) -> ResourceList {
    let mut out = ResourceList::from([
        ("persistentvolumeclaims".to_string(), Quantity::count(1)),
        (
            "count/persistentvolumeclaims".to_string(),
            Quantity::count(1),
        ),
    ]);
    let class = claim_class(claim).filter(|c| !c.is_empty());
    if let Some(class) = class {
        out.insert(
            format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"),
            Quantity::count(1),
        );
    }
    // The larger of what is asked and what the volume was already grown to.
    let requested = claim
        .pointer("/spec/resources/requests/storage")
        .and_then(Value::as_str)
        .and_then(Quantity::parse);
    let allocated = claim
        .pointer("/status/allocatedResources/storage")
        .and_then(Value::as_str)
        .and_then(Quantity::parse);
    let storage = match (requested, allocated) {
        (Some(r), Some(a)) if a > r => Some(a),
        (Some(r), _) => Some(r),
        (None, a) => a,
    };
    if let Some(storage) = storage {
        out.insert("requests.storage".into(), storage);
        if let Some(class) = class {
            out.insert(
                format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"),
                storage,
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{parse_list, pretty_print};
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_pod_costs_its_requests_limits_sidecars_and_overhead() {
        let pod = json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "500m"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m", "nvidia.com/gpu": "1"}}}
            ],
            "initContainers": [
                {"name": "init", "resources": {"requests": {"cpu": "2"}}},
                {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"memory": "64Mi"}}}
            ],
            "overhead": {"cpu": "100m"}
        }});
        let usage = Evaluator::Pods.usage(&pod, Utc::now());
        assert_eq!(
            pretty_print(&usage),
            "count/pods=1,cpu=2100m,limits.cpu=600m,memory=128Mi,pods=1,requests.cpu=2100m,requests.memory=128Mi,requests.nvidia.com/gpu=1"
        );
        let done = json!({"spec": pod["spec"], "status": {"phase": "Succeeded"}});
        assert_eq!(
            pretty_print(&Evaluator::Pods.usage(&done, Utc::now())),
            "count/pods=1"
        );
    }

    #[test]
    fn quotas_of_cpu_or_memory_make_every_container_say_it() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1"}}},
            {"name": "b"}
        ], "initContainers": [{"name": "i"}]}});
        let err = Evaluator::Pods
            .constraints(
                &set(&["limits.cpu", "requests.cpu", "pods", "requests.storage"]),
                &pod,
            )
            .unwrap_err();
        assert_eq!(
            err,
            "must specify limits.cpu for: a,b,i; requests.cpu for: b,i"
        );
        assert!(Evaluator::Pods.constraints(&set(&["pods"]), &pod).is_ok());
    }

    #[test]
    fn evaluators_claim_their_resources() {
        let hard = set(&[
            "pods",
            "requests.cpu",
            "hugepages-2Mi",
            "requests.example.com/dongle",
            "services.nodeports",
            "gold.storageclass.storage.k8s.io/requests.storage",
            "count/deployments.apps",
            "configmaps",
        ]);
        assert_eq!(
            Evaluator::Pods.matching_resources(&hard),
            set(&[
                "pods",
                "requests.cpu",
                "hugepages-2Mi",
                "requests.example.com/dongle"
            ])
        );
        assert_eq!(
            Evaluator::Services.matching_resources(&hard),
            set(&["services.nodeports"])
        );
        assert_eq!(
            Evaluator::Claims.matching_resources(&hard),
            set(&["gold.storageclass.storage.k8s.io/requests.storage"])
        );
        assert_eq!(
            Evaluator::for_resource("apps", "deployments").matching_resources(&hard),
            set(&["count/deployments.apps"])
        );
        assert_eq!(
            Evaluator::for_resource("", "configmaps").matching_resources(&hard),
            set(&["configmaps"])
        );
    }

    #[test]
    fn services_and_claims_cost_as_upstream_counts_them() {
        let lb = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
        assert_eq!(
            pretty_print(&Evaluator::Services.usage(&lb, Utc::now())),
            "count/services=1,services=1,services.loadbalancers=1,services.nodeports=2"
        );
        let claim = json!({"spec": {"storageClassName": "gold", "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"allocatedResources": {"storage": "2Gi"}}});
        let usage = Evaluator::Claims.usage(&claim, Utc::now());
        assert_eq!(usage["requests.storage"].to_string(), "2Gi");
        assert_eq!(
            usage["gold.storageclass.storage.k8s.io/persistentvolumeclaims"].to_string(),
            "1"
        );
    }

    #[test]
    fn names_lead_to_the_resources_they_count() {
        let of = |n: &str| resource_for(n).map(|(g, p)| format!("{g}/{p}"));
        assert_eq!(of("requests.cpu").as_deref(), Some("/pods"));
        assert_eq!(of("services.nodeports").as_deref(), Some("/services"));
        assert_eq!(
            of("gold.storageclass.storage.k8s.io/requests.storage").as_deref(),
            Some("/persistentvolumeclaims")
        );
        assert_eq!(
            of("count/deployments.apps").as_deref(),
            Some("apps/deployments")
        );
        assert_eq!(
            of("count/widgets.example.com").as_deref(),
            Some("example.com/widgets")
        );
        assert_eq!(of("secrets").as_deref(), Some("/secrets"));
        assert_eq!(of("bogus"), None);
    }

    #[test]
    fn pod_scopes() {
        let now = Utc::now();
        let best = json!({"spec": {"containers": [{"name": "a"}], "priorityClassName": "high"}});
        let burst = json!({"spec": {"activeDeadlineSeconds": 5, "containers": [{"name": "a", "resources": {"limits": {"memory": "1Gi"}}}]}});
        let scope = |s: &str, op: &str, values: &[&str]| ScopeSelector {
            scope: s.into(),
            operator: op.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        };
        let e = Evaluator::Pods;
        assert!(e.matches_scope(&scope("BestEffort", "Exists", &[]), &best, now));
        assert!(!e.matches_scope(&scope("BestEffort", "Exists", &[]), &burst, now));
        assert!(e.matches_scope(&scope("Terminating", "Exists", &[]), &burst, now));
        assert!(e.matches_scope(&scope("PriorityClass", "In", &["high"]), &best, now));
        assert!(!e.matches_scope(&scope("PriorityClass", "In", &["high"]), &burst, now));
        assert!(e.matches_scope(&scope("PriorityClass", "NotIn", &["high"]), &burst, now));
        let quota = json!({"spec": {"scopes": ["BestEffort"]}, "status": {"hard": {"pods": "1"}}});
        assert!(e.matches(&quota, &best, now));
        assert!(!e.matches(&quota, &burst, now));
        assert!(!Evaluator::Services.matches(&quota, &best, now));
        let _ = parse_list(None);
    }
}
