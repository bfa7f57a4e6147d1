//! The API Priority and Fairness configuration every cluster starts with (upstream's
//! apis/flowcontrol/bootstrap): the mandatory priority levels and flow schemas the server
//! always restores, and the suggested ones it creates and keeps current while their
//! `apf.kubernetes.io/autoupdate-spec` annotation lets it.

use serde_json::{json, Value};

/// The annotation saying whether the server keeps an object's spec as it suggests it.
pub const AUTO_UPDATE_ANNOTATION: &str = "apf.kubernetes.io/autoupdate-spec";
/// The priority level of requests that are never limited.
pub const EXEMPT: &str = "exempt";
/// The priority level and flow schema of whatever nothing else matches.
pub const CATCH_ALL: &str = "catch-all";

/// Priority levels and flow schemas, levels first.
pub struct Configuration {
    pub priority_levels: Vec<Value>,
    pub flow_schemas: Vec<Value>,
}

fn annotated(kind: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}},
        "spec": spec,
    })
}

fn level(name: &str, spec: Value) -> Value {
    annotated("PriorityLevelConfiguration", name, spec)
}

/// A Limited level queuing (queues, hand size, queue length limit) what exceeds its share.
fn queuing(name: &str, shares: i64, lendable: i64, queues: i64, hand: i64) -> Value {
    level(
        name,
        json!({"type": "Limited", "limited": {
            "nominalConcurrencyShares": shares,
            "lendablePercent": lendable,
            "limitResponse": {"type": "Queue", "queuing": {
                "queues": queues, "handSize": hand, "queueLengthLimit": 50,
            }},
        }}),
    )
}

fn schema(name: &str, level: &str, precedence: i64, by: Option<&str>, rules: Value) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": level},
        "matchingPrecedence": precedence,
        "rules": [rules],
    });
    if let Some(by) = by {
        spec["distinguisherMethod"] = json!({"type": by});
    }
    annotated("FlowSchema", name, spec)
}

fn group(name: &str) -> Value {
    json!({"kind": "Group", "group": {"name": name}})
}

fn user(name: &str) -> Value {
    json!({"kind": "User", "user": {"name": name}})
}

/// Every service account of kube-system.
fn kube_system_accounts() -> Value {
    json!({"kind": "ServiceAccount", "serviceAccount": {"name": "*", "namespace": "kube-system"}})
}

fn resource_rule(verbs: &[&str], groups: &[&str], resources: &[&str], cluster: bool) -> Value {
    let mut rule = json!({
        "verbs": verbs, "apiGroups": groups, "resources": resources, "namespaces": ["*"],
    });
    if cluster {
        rule["clusterScope"] = json!(true);
    }
    rule
}

/// Every request of these subjects, resource or not.
fn everything(subjects: Vec<Value>) -> Value {
    json!({
        "subjects": subjects,
        "resourceRules": [resource_rule(&["*"], &["*"], &["*"], true)],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    })
}

const ALL_USERS: [&str; 2] = ["system:unauthenticated", "system:authenticated"];

fn groups(names: &[&str]) -> Vec<Value> {
    names.iter().map(|n| group(n)).collect()
}

/// The objects the server always restores: the exempt level and schema (system:masters is
/// never limited) and the catch-all ones.
pub fn mandatory() -> Configuration {
    Configuration {
        priority_levels: vec![
            level(
                CATCH_ALL,
                json!({"type": "Limited", "limited": {
                    "nominalConcurrencyShares": 5,
                    "lendablePercent": 0,
                    "limitResponse": {"type": "Reject"},
                }}),
            ),
            level(
                EXEMPT,
                json!({"type": "Exempt", "exempt": {
                    "nominalConcurrencyShares": 0, "lendablePercent": 0,
                }}),
            ),
        ],
        flow_schemas: vec![
            schema(
                EXEMPT,
                EXEMPT,
                1,
                None,
                everything(groups(&["system:masters"])),
            ),
            schema(
                CATCH_ALL,
                CATCH_ALL,
                10000,
                Some("ByUser"),
                everything(groups(&ALL_USERS)),
            ),
        ],
    }
}

/// The suggested levels and schemas: nodes, leader election, the control plane's own
/// components, service accounts and everyone else, each with its share.
pub fn suggested() -> Configuration {
    let election = ["get", "create", "update"];
    Configuration {
        priority_levels: vec![
            queuing("system", 30, 33, 64, 6),
            queuing("node-high", 40, 25, 64, 6),
            queuing("leader-election", 10, 0, 16, 4),
            queuing("workload-high", 40, 50, 128, 6),
            queuing("workload-low", 100, 90, 128, 6),
            queuing("global-default", 20, 50, 128, 6),
        ],
        flow_schemas: vec![
            schema(
                "system-nodes",
                "system",
                500,
                Some("ByUser"),
                everything(groups(&["system:nodes"])),
            ),
            schema(
                "system-node-high",
                "node-high",
                400,
                Some("ByUser"),
                json!({
                    "subjects": groups(&["system:nodes"]),
                    "resourceRules": [
                        resource_rule(&["*"], &[""], &["nodes", "nodes/status"], true),
                        resource_rule(&["*"], &["coordination.k8s.io"], &["leases"], false),
                    ],
                }),
            ),
            schema(
                "probes",
                EXEMPT,
                2,
                None,
                json!({
                    "subjects": groups(&ALL_USERS),
                    "nonResourceRules": [{
                        "verbs": ["get"],
                        "nonResourceURLs": ["/healthz", "/readyz", "/livez"],
                    }],
                }),
            ),
            schema(
                "system-leader-election",
                "leader-election",
                100,
                Some("ByUser"),
                json!({
                    "subjects": [
                        user("system:kube-controller-manager"),
                        user("system:kube-scheduler"),
                        kube_system_accounts(),
                    ],
                    "resourceRules": [
                        resource_rule(&election, &["coordination.k8s.io"], &["leases"], false),
                    ],
                }),
            ),
            schema(
                "kube-controller-manager",
                "workload-high",
                800,
                Some("ByNamespace"),
                everything(vec![user("system:kube-controller-manager")]),
            ),
            schema(
                "kube-scheduler",
                "workload-high",
                800,
                Some("ByNamespace"),
                everything(vec![user("system:kube-scheduler")]),
            ),
            schema(
                "kube-system-service-accounts",
                "workload-high",
                900,
                Some("ByNamespace"),
                everything(vec![kube_system_accounts()]),
            ),
            schema(
                "service-accounts",
                "workload-low",
                9000,
                Some("ByUser"),
                everything(groups(&["system:serviceaccounts"])),
            ),
            schema(
                "global-default",
                "global-default",
                9900,
                Some("ByUser"),
                everything(groups(&ALL_USERS)),
            ),
        ],
    }
}

/// The mandatory object of this name, if there is one.
pub fn mandatory_spec(kind: &str, name: &str) -> Option<Value> {
    let config = mandatory();
    let objects = match kind {
        "FlowSchema" => config.flow_schemas,
        _ => config.priority_levels,
    };
    objects
        .into_iter()
        .find(|o| o["metadata"]["name"] == name)
        .map(|o| o["spec"].clone())
}

/// Whether two specs are equal as Go compares the decoded structs (upstream's
/// equality.Semantic): absent, null, false, zero, empty lists and empty maps all read as
/// the zero value.
pub fn specs_equal(a: &Value, b: &Value) -> bool {
    zeroless(a) == zeroless(b)
}

fn zeroless(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), zeroless(v)))
                .filter(|(_, v)| !is_zero(v))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(zeroless).collect()),
        other => other.clone(),
    }
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
    }
}
