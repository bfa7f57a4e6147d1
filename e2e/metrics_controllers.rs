//! `/metrics` beyond the request filters: the controllers' work queues under client-go's
//! `workqueue_*` names (labelled by each queue's upstream name) and the storage backend's
//! `etcd_request_duration_seconds`, on the embedded store and on etcd.

mod support;

use std::time::Duration;

use serde_json::json;
use support::Server;
use test_support::wait_until;

/// One parsed sample line: `name{labels} value`.
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

impl Sample {
    fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// `k="v",k2="v2"` (values here hold no quotes or commas).
fn parse_labels(s: &str) -> Option<Vec<(String, String)>> {
    if s.is_empty() {
        return Some(Vec::new());
    }
    s.split(',')
        .map(|pair| {
            let (k, v) = pair.split_once('=')?;
            let v = v.strip_prefix('"')?.strip_suffix('"')?;
            is_name(k).then(|| (k.to_string(), v.to_string()))
        })
        .collect()
}

/// Every line of the exposition: comments are `# HELP` / `# TYPE`, every other line a sample.
fn parse(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        if let Some(comment) = line.strip_prefix("# ") {
            assert!(
                comment.starts_with("HELP ") || comment.starts_with("TYPE "),
                "{line}"
            );
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("no value: {line}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value: {line}"));
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => {
                let inner = rest
                    .strip_suffix('}')
                    .unwrap_or_else(|| panic!("unclosed labels: {line}"));
                let labels = parse_labels(inner).unwrap_or_else(|| panic!("bad labels: {line}"));
                (name, labels)
            }
            None => (series, Vec::new()),
        };
        assert!(is_name(name), "bad name: {line}");
        samples.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    samples
}

fn scrape(server: &Server) -> Vec<Sample> {
    let response = server.get("/metrics");
    assert_eq!(response.status, 200, "{}", response.body);
    parse(&response.body)
}

fn value_of(samples: &[Sample], name: &str, queue: &str) -> Option<f64> {
    samples
        .iter()
        .find(|s| s.name == name && s.label("name") == Some(queue))
        .map(|s| s.value)
}

fn deployment() -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "measured"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "measured"}},
            "template": {
                "metadata": {"labels": {"app": "measured"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}
            }
        }
    })
}

fn controllers_and_storage_are_measured(server: Server) {
    let created = server.send_json(
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        &deployment(),
    );
    assert_eq!(created.status, 201, "{}", created.body);

    // The deployment controller takes it up, then the ReplicaSet controller its set.
    let mut samples = Vec::new();
    // A worker may still hold the deployment when its add is counted: wait for its work too.
    wait_until(
        "the deployment and replicaset queues count adds, and deployment work",
        Duration::from_secs(30),
        || {
            samples = scrape(&server);
            let positive = |family: &str, queue: &str| {
                value_of(&samples, family, queue).is_some_and(|v| v > 0.0)
            };
            positive("workqueue_adds_total", "deployment")
                && positive("workqueue_adds_total", "replicaset")
                && positive("workqueue_work_duration_seconds_count", "deployment")
        },
    );
    // Every running controller's queue shows under its upstream name.
    for queue in [
        "deployment",
        "replicaset",
        "namespace",
        "garbage_collector_attempt_to_delete",
        "garbage_collector_attempt_to_orphan",
        "root_ca_cert_publisher",
    ] {
        let depth = value_of(&samples, "workqueue_depth", queue)
            .unwrap_or_else(|| panic!("no workqueue_depth for {queue}"));
        assert!(depth >= 0.0, "{queue}: depth {depth}");
        for family in [
            "workqueue_retries_total",
            "workqueue_unfinished_work_seconds",
            "workqueue_longest_running_processor_seconds",
            "workqueue_queue_duration_seconds_count",
            "workqueue_work_duration_seconds_count",
        ] {
            assert!(
                value_of(&samples, family, queue).is_some(),
                "no {family} for {queue}"
            );
        }
    }
    // Items were handed out and finished: their waits and work are observed.
    for family in [
        "workqueue_queue_duration_seconds_count",
        "workqueue_work_duration_seconds_count",
    ] {
        let n = value_of(&samples, family, "deployment").unwrap_or_default();
        assert!(n > 0.0, "{family} of deployment: {n}");
    }
    let le_buckets: Vec<&str> = samples
        .iter()
        .filter(|s| {
            s.name == "workqueue_queue_duration_seconds_bucket"
                && s.label("name") == Some("deployment")
        })
        .filter_map(|s| s.label("le"))
        .collect();
    assert_eq!(le_buckets.len(), 11, "10 buckets and +Inf: {le_buckets:?}");
    assert!(le_buckets.contains(&"+Inf"));

    // The storage calls behind the create and the controllers' reads and writes.
    let etcd = |operation: &str, resource: &str| {
        samples
            .iter()
            .find(|s| {
                s.name == "etcd_request_duration_seconds_count"
                    && s.label("operation") == Some(operation)
                    && s.label("type") == Some(resource)
            })
            .map(|s| s.value)
            .unwrap_or_default()
    };
    assert!(etcd("create", "deployments") >= 1.0);
    assert!(etcd("create", "replicasets") >= 1.0);
    let operations: std::collections::BTreeSet<&str> = samples
        .iter()
        .filter(|s| s.name == "etcd_request_duration_seconds_bucket")
        .filter_map(|s| s.label("operation"))
        .collect();
    for operation in ["create", "get", "update"] {
        assert!(
            operations.contains(operation),
            "no {operation} in {operations:?}"
        );
    }
    // Lists that reach the store: whole ones, or (where the watch cache serves whole lists
    // at the latest revision, as on the embedded store) paged ones.
    assert!(
        operations.contains("list") || operations.contains("listWithCount"),
        "no list in {operations:?}"
    );
}

#[test]
fn controllers_and_storage_are_measured_on_the_embedded_store() {
    controllers_and_storage_are_measured(support::start());
}

#[test]
fn controllers_and_storage_are_measured_on_etcd() {
    controllers_and_storage_are_measured(support::start_on_etcd());
}
