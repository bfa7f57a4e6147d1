//! Upstream's bootstrap ClusterRoles and ClusterRoleBindings (bootstrappolicy/policy.go), with
//! the default feature gates.

use serde_json::Value;

use super::objects::{
    aggregated_cluster_role, cluster_role, cluster_role_binding, group, labelled_cluster_role,
    service_account, user,
};
use super::rule::{core, events, named, res, urls, PolicyRule, READ, READ_WRITE, WRITE};
use super::{AGGREGATE_TO_ADMIN, AGGREGATE_TO_EDIT, AGGREGATE_TO_VIEW};

const APPS: &str = "apps";
const AUTHENTICATION: &str = "authentication.k8s.io";
const AUTHORIZATION: &str = "authorization.k8s.io";
const AUTOSCALING: &str = "autoscaling";
const BATCH: &str = "batch";
const CERTIFICATES: &str = "certificates.k8s.io";
const COORDINATION: &str = "coordination.k8s.io";
const DISCOVERY: &str = "discovery.k8s.io";
const EXTENSIONS: &str = "extensions";
const NETWORKING: &str = "networking.k8s.io";
const POLICY: &str = "policy";
const RBAC: &str = "rbac.authorization.k8s.io";
const RESOURCE: &str = "resource.k8s.io";
const STORAGE: &str = "storage.k8s.io";

/// Who may approve CSRs for one signer.
fn approver(name: &str, signer: &str) -> Value {
    cluster_role(
        name,
        vec![named(
            res(&["approve"], &[CERTIFICATES], &["signers"]),
            &[signer],
        )],
    )
}

/// A component's leader election: create any lease, keep its own.
fn leader_lease(name: &str) -> [PolicyRule; 2] {
    [
        res(&["create"], &[COORDINATION], &["leases"]),
        named(
            res(&["get", "update"], &[COORDINATION], &["leases"]),
            &[name],
        ),
    ]
}

fn node_rules() -> Vec<PolicyRule> {
    vec![
        res(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
        res(
            &["create"],
            &[AUTHORIZATION],
            &["subjectaccessreviews", "localsubjectaccessreviews"],
        ),
        core(READ, &["services"]),
        core(&["create", "get", "list", "watch"], &["nodes"]),
        core(&["update", "patch"], &["nodes/status"]),
        core(&["update", "patch"], &["nodes"]),
        core(&["create", "update", "patch"], &["events"]),
        core(READ, &["pods"]),
        core(&["create", "delete"], &["pods"]),
        core(&["update", "patch"], &["pods/status"]),
        core(&["create"], &["pods/eviction"]),
        core(READ, &["secrets", "configmaps"]),
        core(&["get"], &["persistentvolumeclaims", "persistentvolumes"]),
        core(&["get"], &["endpoints"]),
        res(
            &["create", "get", "list", "watch"],
            &[CERTIFICATES],
            &["certificatesigningrequests"],
        ),
        res(
            &["get", "create", "update", "patch", "delete"],
            &[COORDINATION],
            &["leases"],
        ),
        res(&["get"], &[STORAGE], &["volumeattachments"]),
        core(&["create"], &["serviceaccounts/token"]),
        core(
            &["get", "update", "patch"],
            &["persistentvolumeclaims/status"],
        ),
        res(READ, &[STORAGE], &["csidrivers"]),
        res(
            &["get", "create", "update", "patch", "delete"],
            &[STORAGE],
            &["csinodes"],
        ),
        res(READ, &["node.k8s.io"], &["runtimeclasses"]),
        // Dynamic resource allocation: the claims of its pods, and its own devices published.
        res(&["get"], &[RESOURCE], &["resourceclaims"]),
        res(READ_WRITE, &[RESOURCE], &["resourceslices"]),
    ]
}

fn aggregate_to_edit() -> Vec<PolicyRule> {
    vec![
        core(
            READ,
            &[
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
                "secrets",
                "services/proxy",
            ],
        ),
        core(&["impersonate"], &["serviceaccounts"]),
        core(
            WRITE,
            &[
                "pods",
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
            ],
        ),
        core(&["create"], &["pods/eviction"]),
        core(
            WRITE,
            &[
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
                "events",
            ],
        ),
        core(&["create"], &["serviceaccounts/token"]),
        res(
            WRITE,
            &[APPS],
            &[
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "replicasets",
                "replicasets/scale",
            ],
        ),
        res(WRITE, &[AUTOSCALING], &["horizontalpodautoscalers"]),
        res(WRITE, &[BATCH], &["jobs", "cronjobs"]),
        res(
            WRITE,
            &[EXTENSIONS],
            &[
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "ingresses",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        res(WRITE, &[POLICY], &["poddisruptionbudgets"]),
        res(WRITE, &[NETWORKING], &["networkpolicies", "ingresses"]),
        res(READ_WRITE, &[COORDINATION], &["leases"]),
        res(
            WRITE,
            &[RESOURCE],
            &["resourceclaims", "resourceclaimtemplates"],
        ),
    ]
}

fn aggregate_to_view() -> Vec<PolicyRule> {
    vec![
        core(
            READ,
            &[
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ],
        ),
        core(
            READ,
            &[
                "limitranges",
                "resourcequotas",
                "bindings",
                "events",
                "pods/status",
                "resourcequotas/status",
                "namespaces/status",
                "replicationcontrollers/status",
                "pods/log",
            ],
        ),
        // Reading namespaces in a namespace means reading that one: a hint of one's access.
        core(READ, &["namespaces"]),
        res(READ, &[DISCOVERY], &["endpointslices"]),
        res(
            READ,
            &[APPS],
            &[
                "controllerrevisions",
                "statefulsets",
                "statefulsets/status",
                "statefulsets/scale",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/status",
                "deployments/scale",
                "replicasets",
                "replicasets/status",
                "replicasets/scale",
            ],
        ),
        res(
            READ,
            &[AUTOSCALING],
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        res(
            READ,
            &[BATCH],
            &["jobs", "jobs/status", "cronjobs", "cronjobs/status"],
        ),
        res(
            READ,
            &[EXTENSIONS],
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        res(
            READ,
            &[POLICY],
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        res(
            READ,
            &[NETWORKING],
            &["ingresses", "ingresses/status", "networkpolicies"],
        ),
        res(
            READ,
            &[RESOURCE],
            &[
                "resourceclaims",
                "resourceclaims/status",
                "resourceclaimtemplates",
            ],
        ),
    ]
}

fn kube_scheduler() -> Vec<PolicyRule> {
    let mut rules = vec![events()];
    rules.extend(leader_lease("kube-scheduler"));
    rules.extend([
        core(READ, &["nodes"]),
        core(&["get", "list", "watch", "delete"], &["pods"]),
        core(&["create"], &["pods/binding", "bindings"]),
        core(&["patch", "update"], &["pods/status"]),
        core(READ, &["replicationcontrollers", "services"]),
        res(READ, &[APPS, EXTENSIONS], &["replicasets"]),
        res(READ, &[APPS], &["statefulsets"]),
        res(READ, &[POLICY], &["poddisruptionbudgets"]),
        core(READ, &["persistentvolumeclaims", "persistentvolumes"]),
        res(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
        res(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
        res(READ, &[STORAGE], &["csinodes"]),
        core(READ, &["namespaces"]),
        res(READ, &[STORAGE], &["csidrivers"]),
        res(READ, &[STORAGE], &["csistoragecapacities"]),
        // Dynamic resource allocation: claims allocated from published devices.
        res(READ, &[RESOURCE], &["resourceclaims", "deviceclasses"]),
        res(
            &["get", "list", "watch", "update", "patch"],
            &[RESOURCE],
            &["resourceclaims/status"],
        ),
        core(
            &["get", "list", "watch", "update", "patch"],
            &["pods/finalizers"],
        ),
        res(READ, &[RESOURCE], &["resourceslices"]),
    ]);
    rules
}

fn kube_controller_manager() -> Vec<PolicyRule> {
    let mut rules = vec![events()];
    rules.extend(leader_lease("kube-controller-manager"));
    rules.extend([
        core(&["create"], &["secrets", "serviceaccounts"]),
        core(&["delete"], &["secrets"]),
        core(
            &["get"],
            &["namespaces", "secrets", "serviceaccounts", "configmaps"],
        ),
        core(&["update"], &["secrets", "serviceaccounts"]),
        res(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
        res(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
        res(&["list", "watch"], &["*"], &["*"]),
        core(&["create"], &["serviceaccounts/token"]),
    ]);
    rules
}

pub fn cluster_roles() -> Vec<Value> {
    vec![
        // The root role: anything at all.
        cluster_role(
            "cluster-admin",
            vec![res(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
        ),
        // Enough to find out whether the server is ready and which APIs it serves.
        cluster_role(
            "system:discovery",
            vec![urls(
                &["get"],
                &[
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/version",
                    "/version/",
                    "/openapi",
                    "/openapi/*",
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                ],
            )],
        ),
        cluster_role(
            "system:monitoring",
            vec![urls(
                &["get"],
                &[
                    "/metrics",
                    "/metrics/slis",
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/livez/*",
                    "/readyz/*",
                    "/healthz/*",
                ],
            )],
        ),
        // What any user may learn of themselves.
        cluster_role(
            "system:basic-user",
            vec![
                res(
                    &["create"],
                    &[AUTHORIZATION],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                res(&["create"], &[AUTHENTICATION], &["selfsubjectreviews"]),
            ],
        ),
        // Insensitive cluster information, for anyone, even unauthenticated.
        cluster_role(
            "system:public-info-viewer",
            vec![urls(
                &["get"],
                &["/livez", "/readyz", "/healthz", "/version", "/version/"],
            )],
        ),
        aggregated_cluster_role("admin", &[], AGGREGATE_TO_ADMIN),
        aggregated_cluster_role("edit", &[(AGGREGATE_TO_ADMIN, "true")], AGGREGATE_TO_EDIT),
        aggregated_cluster_role("view", &[(AGGREGATE_TO_EDIT, "true")], AGGREGATE_TO_VIEW),
        // What admin has beyond edit: granting permissions within a namespace.
        labelled_cluster_role(
            "system:aggregate-to-admin",
            &[(AGGREGATE_TO_ADMIN, "true")],
            vec![
                res(
                    &["create"],
                    &[AUTHORIZATION],
                    &["localsubjectaccessreviews"],
                ),
                res(READ_WRITE, &[RBAC], &["roles", "rolebindings"]),
            ],
        ),
        labelled_cluster_role(
            "system:aggregate-to-edit",
            &[(AGGREGATE_TO_EDIT, "true")],
            aggregate_to_edit(),
        ),
        labelled_cluster_role(
            "system:aggregate-to-view",
            &[(AGGREGATE_TO_VIEW, "true")],
            aggregate_to_view(),
        ),
        cluster_role(
            "system:heapster",
            vec![
                core(READ, &["events", "pods", "nodes", "namespaces"]),
                res(READ, &[EXTENSIONS], &["deployments"]),
            ],
        ),
        cluster_role("system:node", node_rules()),
        cluster_role(
            "system:node-problem-detector",
            vec![
                core(&["get"], &["nodes"]),
                core(&["patch"], &["nodes/status"]),
                events(),
            ],
        ),
        cluster_role(
            "system:kubelet-api-admin",
            vec![
                core(READ, &["nodes"]),
                core(&["proxy"], &["nodes"]),
                core(
                    &["*"],
                    &["nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log"],
                ),
            ],
        ),
        cluster_role(
            "system:node-bootstrapper",
            vec![res(
                &["create", "get", "list", "watch"],
                &[CERTIFICATES],
                &["certificatesigningrequests"],
            )],
        ),
        cluster_role(
            "system:auth-delegator",
            vec![
                res(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
                res(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
            ],
        ),
        cluster_role(
            "system:kube-aggregator",
            vec![core(READ, &["services", "endpoints"])],
        ),
        cluster_role("system:kube-controller-manager", kube_controller_manager()),
        cluster_role(
            "system:kube-dns",
            vec![core(&["list", "watch"], &["endpoints", "services"])],
        ),
        cluster_role(
            "system:persistent-volume-provisioner",
            vec![
                core(
                    &["get", "list", "watch", "create", "delete"],
                    &["persistentvolumes"],
                ),
                core(
                    &["get", "list", "watch", "update"],
                    &["persistentvolumeclaims"],
                ),
                res(READ, &[STORAGE], &["storageclasses"]),
                core(&["watch"], &["events"]),
                events(),
            ],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            vec![res(
                &["create"],
                &[CERTIFICATES],
                &["certificatesigningrequests/nodeclient"],
            )],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            vec![res(
                &["create"],
                &[CERTIFICATES],
                &["certificatesigningrequests/selfnodeclient"],
            )],
        ),
        approver(
            "system:certificates.k8s.io:kube-apiserver-client-approver",
            "kubernetes.io/kube-apiserver-client",
        ),
        approver(
            "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
            "kubernetes.io/kube-apiserver-client-kubelet",
        ),
        approver(
            "system:certificates.k8s.io:kubelet-serving-approver",
            "kubernetes.io/kubelet-serving",
        ),
        approver(
            "system:certificates.k8s.io:legacy-unknown-approver",
            "kubernetes.io/legacy-unknown",
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            vec![urls(
                &["get"],
                &["/.well-known/openid-configuration", "/openid/v1/jwks"],
            )],
        ),
        cluster_role(
            "system:node-proxier",
            vec![
                core(&["list", "watch"], &["services", "endpoints"]),
                core(READ, &["nodes"]),
                events(),
                res(&["list", "watch"], &[DISCOVERY], &["endpointslices"]),
            ],
        ),
        cluster_role("system:kube-scheduler", kube_scheduler()),
        cluster_role(
            "system:volume-scheduler",
            vec![
                core(
                    &["get", "list", "watch", "update", "patch"],
                    &["persistentvolumes"],
                ),
                res(READ, &[STORAGE], &["storageclasses"]),
                core(
                    &["get", "list", "watch", "update", "patch"],
                    &["persistentvolumeclaims"],
                ),
            ],
        ),
    ]
}

pub fn cluster_role_bindings() -> Vec<Value> {
    vec![
        cluster_role_binding("cluster-admin", vec![group("system:masters")]),
        cluster_role_binding("system:monitoring", vec![group("system:monitoring")]),
        cluster_role_binding("system:discovery", vec![group("system:authenticated")]),
        cluster_role_binding("system:basic-user", vec![group("system:authenticated")]),
        cluster_role_binding(
            "system:public-info-viewer",
            vec![
                group("system:authenticated"),
                group("system:unauthenticated"),
            ],
        ),
        cluster_role_binding("system:node-proxier", vec![user("system:kube-proxy")]),
        cluster_role_binding(
            "system:kube-controller-manager",
            vec![user("system:kube-controller-manager")],
        ),
        cluster_role_binding(
            "system:kube-dns",
            vec![service_account("kube-system", "kube-dns")],
        ),
        cluster_role_binding("system:kube-scheduler", vec![user("system:kube-scheduler")]),
        cluster_role_binding(
            "system:volume-scheduler",
            vec![user("system:kube-scheduler")],
        ),
        cluster_role_binding(
            "system:service-account-issuer-discovery",
            vec![group("system:serviceaccounts")],
        ),
        // Kept with no subjects: nodes are authorized by the Node authorizer instead.
        cluster_role_binding("system:node", vec![]),
    ]
}
