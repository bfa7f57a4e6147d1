//! Workload controllers: deployments, replica sets, replication controllers, stateful sets,
//! daemon sets, jobs, cron jobs, controller revisions and disruption budgets.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::format::{
    containers, human_duration, int_or_string, label_selector, labels, selector, since,
};
use super::zero_values::{condition_true, deleting, get, int, items, len, object, text, time};
use super::{age, column, container_columns, integer, name, text_column, wide, Cell, TableColumn};

const POD_NODE_SELECTOR_DOC: &str = "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/";
const READY_PODS_DOC: &str = "Number of the pod with ready state";

pub(in crate::catalogue) fn deployment_columns() -> Vec<TableColumn> {
    // Upstream declares these counts as strings but fills them with integers.
    let [containers, images] = container_columns(template_containers, template_images);
    vec![
        name(),
        text_column("Ready", READY_PODS_DOC, ready_of_desired),
        text_column("Up-to-date", "Total number of non-terminated pods targeted by this deployment that have the desired template spec.", updated_replicas),
        text_column("Available", "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.", available_replicas),
        age(),
        containers,
        images,
        wide(text_column("Selector", "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.", deployment_selector)),
    ]
}

pub(in crate::catalogue) fn replicaset_columns() -> Vec<TableColumn> {
    let [containers, images] = container_columns(template_containers, template_images);
    vec![
        name(),
        integer("Desired", "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller", desired_replicas),
        integer("Current", "Replicas is the most recently oberved number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller", current_replicas),
        integer("Ready", "The number of ready replicas for this replica set.", ready_replicas),
        age(),
        containers,
        images,
        wide(text_column("Selector", "Selector is a label query over pods that should match the replica count. If the selector is empty, it is defaulted to the labels present on the pod template. Label keys and values that must match in order to be controlled by this replica set. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors", spec_label_selector)),
    ]
}

pub(in crate::catalogue) fn replicationcontroller_columns() -> Vec<TableColumn> {
    let [containers, images] = container_columns(template_containers, template_images);
    vec![
        name(),
        integer("Desired", "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller", desired_replicas),
        integer("Current", "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller", current_replicas),
        integer("Ready", "The number of ready replicas for this replication controller.", ready_replicas),
        age(),
        containers,
        images,
        wide(text_column("Selector", "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors", spec_selector_map)),
    ]
}

pub(in crate::catalogue) fn statefulset_columns() -> Vec<TableColumn> {
    let [containers, images] = container_columns(template_containers, template_images);
    vec![
        name(),
        text_column("Ready", READY_PODS_DOC, ready_of_desired),
        age(),
        containers,
        images,
    ]
}

pub(in crate::catalogue) fn daemonset_columns() -> Vec<TableColumn> {
    let [containers, images] = container_columns(template_containers, template_images);
    vec![
        name(),
        integer("Desired", "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/", desired_scheduled),
        integer("Current", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/", current_scheduled),
        integer("Ready", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.", number_ready),
        integer("Up-to-date", "The total number of nodes that are running updated daemon pod", updated_scheduled),
        integer("Available", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)", number_available),
        text_column("Node Selector", POD_NODE_SELECTOR_DOC, node_selector),
        age(),
        containers,
        images,
        wide(text_column("Selector", "A label query over pods that are managed by the daemon set. Must match in order to be controlled. If empty, defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors", spec_label_selector)),
    ]
}

const JOB_SELECTOR_DOC: &str = "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

pub(in crate::catalogue) fn job_columns() -> Vec<TableColumn> {
    let [containers, images] = container_columns(template_containers, template_images);
    vec![
        name(),
        text_column("Status", "Status of the job.", job_status),
        text_column("Completions", "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.", job_completions),
        text_column("Duration", "Time required to complete the job.", job_duration),
        age(),
        containers,
        images,
        wide(text_column("Selector", JOB_SELECTOR_DOC, spec_label_selector)),
    ]
}

pub(in crate::catalogue) fn cronjob_columns() -> Vec<TableColumn> {
    let [containers, images] = container_columns(cronjob_containers, cronjob_images);
    vec![
        name(),
        column("Schedule", "string", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.", Cell::Path(".spec.schedule".to_string())),
        text_column("Timezone", "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones", cronjob_timezone),
        column("Suspend", "boolean", "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions. Defaults to false.", Cell::Printer(cronjob_suspend)),
        integer("Active", "A list of pointers to currently running jobs.", cronjob_active),
        text_column("Last Schedule", "Information when was the last time the job was successfully scheduled.", cronjob_last_schedule),
        age(),
        containers,
        images,
        wide(text_column("Selector", JOB_SELECTOR_DOC, cronjob_selector)),
    ]
}

pub(in crate::catalogue) fn controllerrevision_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column(
            "Controller",
            "Controller of the object",
            revision_controller,
        ),
        // Declared a string upstream, filled with the integer revision.
        text_column(
            "Revision",
            "Revision indicates the revision of the state represented by Data.",
            revision_number,
        ),
        age(),
    ]
}

pub(in crate::catalogue) fn pdb_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column(
            "Min Available",
            "The minimum number of pods that must be available.",
            pdb_min_available,
        ),
        text_column(
            "Max Unavailable",
            "The maximum number of pods that may be unavailable.",
            pdb_max_unavailable,
        ),
        integer(
            "Allowed Disruptions",
            "Calculated number of pods that may be disrupted at this time.",
            pdb_allowed,
        ),
        age(),
    ]
}

fn count(obj: &Value, path: &[&str]) -> Value {
    Value::from(int(obj, path).unwrap_or(0))
}

/// spec.replicas; defaulting makes an unset value 1, which is what upstream's stored objects hold.
fn desired(obj: &Value) -> i64 {
    int(obj, &["spec", "replicas"]).unwrap_or(1)
}

fn desired_replicas(obj: &Value) -> Value {
    Value::from(desired(obj))
}

fn current_replicas(obj: &Value) -> Value {
    count(obj, &["status", "replicas"])
}

fn ready_replicas(obj: &Value) -> Value {
    count(obj, &["status", "readyReplicas"])
}

fn ready_of_desired(obj: &Value) -> Value {
    let ready = int(obj, &["status", "readyReplicas"]).unwrap_or(0);
    Value::String(format!("{ready}/{}", desired(obj)))
}

fn updated_replicas(obj: &Value) -> Value {
    count(obj, &["status", "updatedReplicas"])
}

fn available_replicas(obj: &Value) -> Value {
    count(obj, &["status", "availableReplicas"])
}

fn desired_scheduled(obj: &Value) -> Value {
    count(obj, &["status", "desiredNumberScheduled"])
}

fn current_scheduled(obj: &Value) -> Value {
    count(obj, &["status", "currentNumberScheduled"])
}

fn number_ready(obj: &Value) -> Value {
    count(obj, &["status", "numberReady"])
}

fn updated_scheduled(obj: &Value) -> Value {
    count(obj, &["status", "updatedNumberScheduled"])
}

fn number_available(obj: &Value) -> Value {
    count(obj, &["status", "numberAvailable"])
}

fn node_selector(obj: &Value) -> Value {
    Value::String(labels(object(
        obj,
        &["spec", "template", "spec", "nodeSelector"],
    )))
}

fn template_containers(obj: &Value) -> Value {
    Value::String(containers(get(obj, &["spec", "template", "spec"])).0)
}

fn template_images(obj: &Value) -> Value {
    Value::String(containers(get(obj, &["spec", "template", "spec"])).1)
}

fn cronjob_pod_spec(obj: &Value) -> Option<&Value> {
    get(obj, &["spec", "jobTemplate", "spec", "template", "spec"])
}

fn cronjob_containers(obj: &Value) -> Value {
    Value::String(containers(cronjob_pod_spec(obj)).0)
}

fn cronjob_images(obj: &Value) -> Value {
    Value::String(containers(cronjob_pod_spec(obj)).1)
}

fn deployment_selector(obj: &Value) -> Value {
    // Unlike the other workloads, upstream prints a deployment's selector without `<none>`.
    let sel = selector(get(obj, &["spec", "selector"]));
    Value::String(sel.unwrap_or_else(|| "<invalid>".to_string()))
}

fn spec_label_selector(obj: &Value) -> Value {
    Value::String(label_selector(get(obj, &["spec", "selector"])))
}

fn spec_selector_map(obj: &Value) -> Value {
    Value::String(labels(object(obj, &["spec", "selector"])))
}

fn cronjob_selector(obj: &Value) -> Value {
    Value::String(label_selector(get(
        obj,
        &["spec", "jobTemplate", "spec", "selector"],
    )))
}

fn job_status(job: &Value) -> Value {
    let conditions = items(job, &["status", "conditions"]);
    let status = if condition_true(conditions, "Complete") {
        "Complete"
    } else if condition_true(conditions, "Failed") {
        "Failed"
    } else if deleting(job) {
        "Terminating"
    } else if condition_true(conditions, "Suspended") {
        "Suspended"
    } else if condition_true(conditions, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    Value::String(status.to_string())
}

fn job_completions(job: &Value) -> Value {
    let succeeded = int(job, &["status", "succeeded"]).unwrap_or(0);
    let parallelism = int(job, &["spec", "parallelism"]).unwrap_or(0);
    let text = match int(job, &["spec", "completions"]) {
        Some(completions) => format!("{succeeded}/{completions}"),
        None if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
        None => format!("{succeeded}/1"),
    };
    Value::String(text)
}

fn job_duration(job: &Value) -> Value {
    Value::String(job_duration_at(job, Utc::now()))
}

fn job_duration_at(job: &Value, now: DateTime<Utc>) -> String {
    let Some(start) = time(job, &["status", "startTime"]) else {
        return String::new();
    };
    let end = time(job, &["status", "completionTime"]).unwrap_or(now);
    human_duration(end - start)
}

fn cronjob_timezone(obj: &Value) -> Value {
    let tz = get(obj, &["spec", "timeZone"]).and_then(Value::as_str);
    Value::String(tz.unwrap_or("<none>").to_string())
}

fn cronjob_suspend(obj: &Value) -> Value {
    let text = match get(obj, &["spec", "suspend"]).and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    Value::String(text.to_string())
}

fn cronjob_active(obj: &Value) -> Value {
    Value::from(len(obj, &["status", "active"]))
}

fn cronjob_last_schedule(obj: &Value) -> Value {
    Value::String(last_schedule_at(obj, Utc::now()))
}

fn last_schedule_at(obj: &Value, now: DateTime<Utc>) -> String {
    match time(obj, &["status", "lastScheduleTime"]) {
        Some(t) => since(Some(t), now),
        None => "<none>".to_string(),
    }
}

fn revision_controller(obj: &Value) -> Value {
    let owner = items(obj, &["metadata", "ownerReferences"])
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true));
    let Some(owner) = owner else {
        return Value::String("<none>".to_string());
    };
    let name = text(owner, &["name"]);
    let kind = text(owner, &["kind"]);
    // The group is what precedes the version in apiVersion; core has none.
    let group = text(owner, &["apiVersion"])
        .split_once('/')
        .map_or("", |(group, _)| group);
    let rendered = match (kind, group) {
        ("", "") => name.to_string(),
        (kind, "") => format!("{}/{name}", kind.to_lowercase()),
        (kind, group) => format!("{}.{}/{name}", kind.to_lowercase(), group.to_lowercase()),
    };
    Value::String(rendered)
}

fn revision_number(obj: &Value) -> Value {
    count(obj, &["revision"])
}

fn pdb_bound(obj: &Value, field: &str) -> Value {
    let bound = get(obj, &["spec", field]).and_then(int_or_string);
    Value::String(bound.unwrap_or_else(|| "N/A".to_string()))
}

fn pdb_min_available(obj: &Value) -> Value {
    pdb_bound(obj, "minAvailable")
}

fn pdb_max_unavailable(obj: &Value) -> Value {
    pdb_bound(obj, "maxUnavailable")
}

fn pdb_allowed(obj: &Value) -> Value {
    count(obj, &["status", "disruptionsAllowed"])
}

/// Upstream prints pod templates without an age, and their containers by default.
pub(in crate::catalogue) fn podtemplate_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Containers", super::CONTAINERS_DOC, |t| {
            Value::String(containers(get(t, &["template", "spec"])).0)
        }),
        text_column("Images", super::IMAGES_DOC, |t| {
            Value::String(containers(get(t, &["template", "spec"])).1)
        }),
        text_column("Pod Labels", "The labels for the pod template.", |t| {
            Value::String(labels(object(t, &["template", "metadata", "labels"])))
        }),
    ]
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;
    use serde_json::json;

    use super::*;

    fn deployment() -> Value {
        json!({
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [
                    {"name": "nginx", "image": "nginx:1.27"},
                    {"name": "log", "image": "busybox"},
                ]}},
            },
            "status": {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 2, "availableReplicas": 2},
        })
    }

    #[test]
    fn deployment_two_of_three_ready() {
        let d = deployment();
        assert_eq!(ready_of_desired(&d), "2/3");
        assert_eq!(updated_replicas(&d), 3);
        assert_eq!(available_replicas(&d), 2);
        assert_eq!(template_containers(&d), "nginx,log");
        assert_eq!(template_images(&d), "nginx:1.27,busybox");
        assert_eq!(deployment_selector(&d), "app=web");
        assert_eq!(ready_of_desired(&json!({})), "0/1");
        assert_eq!(deployment_selector(&json!({})), "");
    }

    #[test]
    fn jobs() {
        let now = Utc::now();
        let mut job = json!({"spec": {"completions": 5}, "status": {"succeeded": 2}});
        assert_eq!(job_completions(&job), "2/5");
        assert_eq!(job_status(&job), "Running");
        assert_eq!(job_duration_at(&job, now), "");
        job["spec"] = json!({"parallelism": 3});
        assert_eq!(job_completions(&job), "2/1 of 3");
        job["status"]["startTime"] = json!("2024-01-01T00:00:00Z");
        job["status"]["completionTime"] = json!("2024-01-01T00:01:30Z");
        assert_eq!(job_duration_at(&job, now), "90s");
        job["status"]["conditions"] = json!([{"type": "Complete", "status": "True"}]);
        assert_eq!(job_status(&job), "Complete");
    }

    #[test]
    fn cronjobs_and_revisions() {
        let now = Utc::now();
        let cj = json!({"spec": {"suspend": false}, "status": {"active": [{}, {}],
            "lastScheduleTime": (now - TimeDelta::minutes(30)).to_rfc3339()}});
        assert_eq!(cronjob_suspend(&cj), "False");
        assert_eq!(cronjob_timezone(&cj), "<none>");
        assert_eq!(cronjob_active(&cj), 2);
        assert_eq!(last_schedule_at(&cj, now), "30m");
        assert_eq!(last_schedule_at(&json!({}), now), "<none>");
        let rev = json!({"revision": 4, "metadata": {"ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "controller": true}]}});
        assert_eq!(revision_controller(&rev), "daemonset.apps/agent");
        assert_eq!(revision_number(&rev), 4);
        assert_eq!(revision_controller(&json!({})), "<none>");
    }

    #[test]
    fn disruption_budgets_and_daemonsets() {
        let pdb = json!({"spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 1}});
        assert_eq!(pdb_min_available(&pdb), "50%");
        assert_eq!(pdb_max_unavailable(&pdb), "N/A");
        assert_eq!(pdb_allowed(&pdb), 1);
        let ds = json!({"spec": {"template": {"spec": {"nodeSelector": {"os": "linux"}}}}});
        assert_eq!(node_selector(&ds), "os=linux");
        assert_eq!(node_selector(&json!({})), "<none>");
        assert_eq!(spec_label_selector(&ds), "<none>");
    }
}
