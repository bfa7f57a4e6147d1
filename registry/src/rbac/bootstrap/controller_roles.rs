//! The `system:controller:*` ClusterRoles of upstream's controller_policy.go, for the
//! controllers this server runs, each bound to its kube-system ServiceAccount as upstream's
//! kube-controller-manager uses with --use-service-account-credentials.

use serde_json::Value;

use super::objects::{cluster_role, cluster_role_binding, service_account};
use super::rule::{core, events, res, PolicyRule, READ};

const PREFIX: &str = "system:controller:";
const NAMESPACE: &str = "kube-system";
const APPS: &str = "apps";
const EXTENSIONS: &str = "extensions";
const BATCH: &str = "batch";
const RESOURCE: &str = "resource.k8s.io";

/// (controller, rules): the role is `system:controller:<controller>`, the account
/// `kube-system/<controller>`.
fn controllers() -> Vec<(&'static str, Vec<PolicyRule>)> {
    vec![
        (
            "clusterrole-aggregation-controller",
            vec![res(
                &["escalate", "get", "list", "watch", "update", "patch"],
                &["rbac.authorization.k8s.io"],
                &["clusterroles"],
            )],
        ),
        (
            "cronjob-controller",
            vec![
                res(&["get", "list", "watch", "update"], &[BATCH], &["cronjobs"]),
                res(
                    &[
                        "get", "list", "watch", "create", "update", "delete", "patch",
                    ],
                    &[BATCH],
                    &["jobs"],
                ),
                res(&["update"], &[BATCH], &["cronjobs/status"]),
                res(&["update"], &[BATCH], &["cronjobs/finalizers"]),
                core(&["list", "watch", "delete"], &["pods"]),
                events(),
            ],
        ),
        (
            "daemon-set-controller",
            vec![
                res(READ, &[EXTENSIONS, APPS], &["daemonsets"]),
                res(&["update"], &[EXTENSIONS, APPS], &["daemonsets/status"]),
                res(&["update"], &[EXTENSIONS, APPS], &["daemonsets/finalizers"]),
                core(&["list", "watch"], &["nodes"]),
                core(&["list", "watch", "create", "delete", "patch"], &["pods"]),
                core(&["create"], &["pods/binding"]),
                res(
                    &[
                        "get", "list", "watch", "create", "delete", "update", "patch",
                    ],
                    &[APPS],
                    &["controllerrevisions"],
                ),
                events(),
            ],
        ),
        (
            "deployment-controller",
            vec![
                res(
                    &["get", "list", "watch", "update"],
                    &[EXTENSIONS, APPS],
                    &["deployments"],
                ),
                res(&["update"], &[EXTENSIONS, APPS], &["deployments/status"]),
                res(
                    &["update"],
                    &[EXTENSIONS, APPS],
                    &["deployments/finalizers"],
                ),
                res(
                    &[
                        "get", "list", "watch", "create", "update", "patch", "delete",
                    ],
                    &[APPS, EXTENSIONS],
                    &["replicasets"],
                ),
                core(&["get", "list", "watch", "update"], &["pods"]),
                events(),
            ],
        ),
        (
            "disruption-controller",
            vec![
                res(READ, &[EXTENSIONS, APPS], &["deployments"]),
                res(READ, &[APPS, EXTENSIONS], &["replicasets"]),
                core(READ, &["replicationcontrollers"]),
                res(READ, &["policy"], &["poddisruptionbudgets"]),
                res(READ, &[APPS], &["statefulsets"]),
                res(&["update"], &["policy"], &["poddisruptionbudgets/status"]),
                core(&["patch", "update"], &["pods/status"]),
                res(&["get"], &["*"], &["*/scale"]),
                events(),
            ],
        ),
        (
            "endpoint-controller",
            vec![
                core(READ, &["services", "pods"]),
                core(
                    &["get", "list", "watch", "create", "update", "delete"],
                    &["endpoints"],
                ),
                core(&["create"], &["endpoints/restricted"]),
                events(),
            ],
        ),
        (
            "endpointslice-controller",
            vec![
                core(READ, &["services", "pods", "nodes"]),
                // Owner references with blockOwnerDeletion need the owner's finalizers.
                core(&["update"], &["services/finalizers"]),
                res(
                    &["get", "list", "watch", "create", "update", "delete"],
                    &["discovery.k8s.io"],
                    &["endpointslices"],
                ),
                events(),
            ],
        ),
        (
            "generic-garbage-collector",
            vec![
                res(
                    &["get", "list", "watch", "patch", "update", "delete"],
                    &["*"],
                    &["*"],
                ),
                events(),
            ],
        ),
        (
            "job-controller",
            vec![
                res(
                    &["get", "list", "watch", "update", "patch"],
                    &[BATCH],
                    &["jobs"],
                ),
                res(&["update"], &[BATCH], &["jobs/status"]),
                res(&["update"], &[BATCH], &["jobs/finalizers"]),
                core(&["list", "watch", "create", "delete", "patch"], &["pods"]),
                events(),
            ],
        ),
        (
            "namespace-controller",
            vec![
                core(&["get", "list", "watch", "delete"], &["namespaces"]),
                core(&["update"], &["namespaces/finalize", "namespaces/status"]),
                res(
                    &["get", "list", "watch", "delete", "deletecollection"],
                    &["*"],
                    &["*"],
                ),
            ],
        ),
        (
            "node-controller",
            vec![
                core(
                    &["get", "list", "update", "delete", "patch", "watch"],
                    &["nodes"],
                ),
                core(&["patch", "update"], &["nodes/status"]),
                core(&["patch", "update"], &["pods/status"]),
                core(&["list", "watch", "delete", "get"], &["pods"]),
                events(),
            ],
        ),
        (
            "persistent-volume-binder",
            vec![
                core(
                    &["get", "list", "watch", "update", "create", "delete"],
                    &["persistentvolumes"],
                ),
                core(&["update"], &["persistentvolumes/status"]),
                core(
                    &["get", "list", "watch", "update"],
                    &["persistentvolumeclaims"],
                ),
                core(&["update"], &["persistentvolumeclaims/status"]),
                core(&["list", "watch", "get", "create", "delete"], &["pods"]),
                res(READ, &["storage.k8s.io"], &["storageclasses"]),
                core(&["list", "watch"], &["nodes"]),
                events(),
                core(&["watch"], &["events"]),
            ],
        ),
        (
            "replicaset-controller",
            vec![
                res(
                    &["get", "list", "watch", "update"],
                    &[APPS, EXTENSIONS],
                    &["replicasets"],
                ),
                res(&["update"], &[APPS, EXTENSIONS], &["replicasets/status"]),
                res(
                    &["update"],
                    &[APPS, EXTENSIONS],
                    &["replicasets/finalizers"],
                ),
                core(&["list", "watch", "patch", "create", "delete"], &["pods"]),
                events(),
            ],
        ),
        (
            "replication-controller",
            vec![
                core(
                    &["get", "list", "watch", "update"],
                    &["replicationcontrollers"],
                ),
                core(&["update"], &["replicationcontrollers/status"]),
                core(&["update"], &["replicationcontrollers/finalizers"]),
                core(&["list", "watch", "patch", "create", "delete"], &["pods"]),
                events(),
            ],
        ),
        (
            "resource-claim-controller",
            vec![
                core(&["get", "list", "watch"], &["pods"]),
                core(&["update"], &["pods/finalizers"]),
                res(
                    &["get", "list", "watch", "create", "delete"],
                    &[RESOURCE],
                    &["resourceclaims"],
                ),
                res(
                    &["update", "patch"],
                    &[RESOURCE],
                    &["resourceclaims", "resourceclaims/status"],
                ),
                core(&["update", "patch"], &["pods/status"]),
                events(),
            ],
        ),
        (
            "resourcequota-controller",
            vec![
                res(&["list", "watch"], &["*"], &["*"]),
                core(&["update"], &["resourcequotas/status"]),
                events(),
            ],
        ),
        (
            "root-ca-cert-publisher",
            vec![core(&["create", "update"], &["configmaps"]), events()],
        ),
        (
            "service-account-controller",
            vec![core(&["create"], &["serviceaccounts"]), events()],
        ),
        (
            "statefulset-controller",
            vec![
                core(&["list", "watch"], &["pods"]),
                res(READ, &[APPS], &["statefulsets"]),
                res(&["update"], &[APPS], &["statefulsets/status"]),
                res(&["update"], &[APPS], &["statefulsets/finalizers"]),
                core(&["get", "create", "delete", "update", "patch"], &["pods"]),
                res(
                    &[
                        "get", "list", "watch", "create", "delete", "update", "patch",
                    ],
                    &[APPS],
                    &["controllerrevisions"],
                ),
                core(
                    &["get", "create", "list", "watch"],
                    &["persistentvolumeclaims"],
                ),
                core(&["update", "delete"], &["persistentvolumeclaims"]),
                core(&["update"], &["pods/finalizers"]),
                events(),
            ],
        ),
        (
            "ttl-after-finished-controller",
            vec![
                res(&["get", "list", "watch", "delete"], &[BATCH], &["jobs"]),
                events(),
            ],
        ),
    ]
}

pub fn controller_roles() -> Vec<Value> {
    controllers()
        .into_iter()
        .map(|(name, rules)| cluster_role(&format!("{PREFIX}{name}"), rules))
        .collect()
}

pub fn controller_role_bindings() -> Vec<Value> {
    controllers()
        .into_iter()
        .map(|(name, _)| {
            cluster_role_binding(
                &format!("{PREFIX}{name}"),
                vec![service_account(NAMESPACE, name)],
            )
        })
        .collect()
}
