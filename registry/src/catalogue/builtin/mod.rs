//! The built-in resources, as upstream's discovery, registry strategies and storage layout
//! describe them: the workload and networking APIs here, the server's own configuration
//! APIs in `control_plane`.

mod control_plane;
mod placement;

use super::printers;
use super::subresource::READ_WRITE;
use super::{GcPolicy, ResourceInfo, ScaleSubresource, Speaks, SubresourceInfo};
use crate::strategy::StrategyFactory;
use crate::strategy::{self, autoscaling, defaults, networking, rbac, storage, workloads};
use crate::strategy::{EventStrategy, NamespaceStrategy, PodStrategy};

const NAMESPACED: bool = true;
const CLUSTER: bool = false;

const ALL_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A resource with upstream's defaults: every verb, no subresources, background deletion,
/// the default Table columns, and its plural as the storage key segment.
fn resource(group: &str, kind: &str, plural: &str, namespaced: bool) -> ResourceInfo {
    ResourceInfo {
        group: group.to_string(),
        version: "v1".to_string(),
        kind: kind.to_string(),
        list_kind: format!("{kind}List"),
        plural: plural.to_string(),
        singular: kind.to_lowercase(),
        short_names: Vec::new(),
        categories: Vec::new(),
        namespaced,
        verbs: strings(&ALL_VERBS),
        create_only: false,
        computed: false,
        subresources: Vec::new(),
        default_gc_policy: GcPolicy::DeleteDependents,
        columns: printers::default_columns(),
        field_selectors: Vec::new(),
        has_generation: false,
        storage_path: format!("/{plural}"),
        strategy: strategy::generic,
        store_hooks: Vec::new(),
        row_order: None,
    }
}

/// `status` and the `scale` of the built-in replicated workloads; their selector is
/// computed from spec.selector, so no status path carries it.
fn status_and_scale() -> Vec<SubresourceInfo> {
    vec![
        SubresourceInfo::status(),
        SubresourceInfo::scale(ScaleSubresource {
            spec_replicas_path: ".spec.replicas".to_string(),
            status_replicas_path: ".status.replicas".to_string(),
            label_selector_path: None,
        }),
    ]
}

/// The core/v1 kind `kind`, as a subresource speaks it.
const fn core_kind(kind: &'static str, definition: &'static str) -> Speaks {
    Speaks {
        group: "",
        version: "v1",
        kind,
        definition,
    }
}

/// The verbs upstream lists for a connect subresource such as a node's proxy.
const CONNECT_VERBS: &[&str] = &["create", "delete", "get", "patch", "update"];
/// The methods of a proxy subresource (upstream's proxyMethods).
const PROXY_METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
/// The verbs of pods' streaming subresources (attach, exec, portforward), served by GET and
/// POST only (upstream's upgradeableMethods).
const STREAM_VERBS: &[&str] = &["create", "get"];
const STREAM_METHODS: &[&str] = &["GET", "POST"];

/// The built-in resources stored as another group-version than the one served (kube-apiserver
/// 1.35's storage versions, as its discovery's storageVersionHash shows them): HPAs as
/// autoscaling/v2 at autoscaling/v1 too, events.k8s.io Events as core/v1 Events (one storage
/// for both), CustomResourceDefinitions and EndpointSlices as their v1beta1 (upstream still
/// encodes both in v1beta1).
pub(super) fn storage_version(
    group: &str,
    plural: &str,
) -> Option<(&'static str, &'static str, &'static str)> {
    match (group, plural) {
        ("autoscaling", "horizontalpodautoscalers") => {
            Some(("autoscaling", "v2", "HorizontalPodAutoscaler"))
        }
        ("events.k8s.io", "events") => Some(("", "v1", "Event")),
        ("apiextensions.k8s.io", "customresourcedefinitions") => Some((
            "apiextensions.k8s.io",
            "v1beta1",
            "CustomResourceDefinition",
        )),
        ("discovery.k8s.io", "endpointslices") => {
            Some(("discovery.k8s.io", "v1beta1", "EndpointSlice"))
        }
        _ => None,
    }
}

pub(super) fn resources() -> Vec<ResourceInfo> {
    let mut all = core();
    all.extend(apps());
    all.extend(others());
    all.extend(networking());
    all.extend(control_plane::admission());
    all.extend(control_plane::aggregation());
    all.extend(control_plane::flow_control());
    all.extend(control_plane::certificate_requests());
    all.extend(autoscalers());
    all.extend(placement::scheduling());
    all.extend(placement::dynamic_resources());
    all.extend(control_plane::reviews());
    all
}

fn core() -> Vec<ResourceInfo> {
    vec![
        ResourceInfo {
            short_names: strings(&["ns"]),
            // Namespaces are removed through their finalizers; there is no collection delete.
            verbs: strings(&[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ]),
            subresources: vec![
                SubresourceInfo::status(),
                SubresourceInfo::in_place("finalize", &["update"]),
            ],
            columns: printers::namespace_columns(),
            field_selectors: strings(&["status.phase"]),
            strategy: |_, _| Box::new(NamespaceStrategy),
            ..resource("", "Namespace", "namespaces", CLUSTER)
        },
        ResourceInfo {
            short_names: strings(&["po"]),
            categories: strings(&["all"]),
            subresources: vec![
                SubresourceInfo::status(),
                SubresourceInfo::creates(
                    "binding",
                    core_kind("Binding", "io.k8s.api.core.v1.Binding"),
                ),
                SubresourceInfo::creates(
                    "eviction",
                    Speaks {
                        group: "policy",
                        version: "v1",
                        kind: "Eviction",
                        definition: "io.k8s.api.policy.v1.Eviction",
                    },
                ),
                SubresourceInfo::text("log"),
                // Parts of the spec written apart: debugging containers, in-place resize.
                SubresourceInfo::in_place("ephemeralcontainers", READ_WRITE),
                SubresourceInfo::in_place("resize", READ_WRITE),
                // Reached through the pod's node (attach, exec, portforward) or its IP (proxy).
                SubresourceInfo::connect(
                    "attach",
                    core_kind("PodAttachOptions", "io.k8s.api.core.v1.PodAttachOptions"),
                    STREAM_VERBS,
                    STREAM_METHODS,
                ),
                SubresourceInfo::connect(
                    "exec",
                    core_kind("PodExecOptions", "io.k8s.api.core.v1.PodExecOptions"),
                    STREAM_VERBS,
                    STREAM_METHODS,
                ),
                SubresourceInfo::connect(
                    "portforward",
                    core_kind(
                        "PodPortForwardOptions",
                        "io.k8s.api.core.v1.PodPortForwardOptions",
                    ),
                    STREAM_VERBS,
                    STREAM_METHODS,
                ),
                SubresourceInfo::connect(
                    "proxy",
                    core_kind("PodProxyOptions", "io.k8s.api.core.v1.PodProxyOptions"),
                    CONNECT_VERBS,
                    PROXY_METHODS,
                ),
            ],
            columns: printers::pod_columns(),
            field_selectors: strings(&[
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.nominatedNodeName",
            ]),
            has_generation: true,
            strategy: |_, _| Box::new(PodStrategy),
            ..resource("", "Pod", "pods", NAMESPACED)
        },
        ResourceInfo {
            short_names: strings(&["svc"]),
            categories: strings(&["all"]),
            // `proxy`: one of the Service's ready endpoints, reached through the server.
            subresources: vec![
                SubresourceInfo::status(),
                SubresourceInfo::connect(
                    "proxy",
                    core_kind(
                        "ServiceProxyOptions",
                        "io.k8s.api.core.v1.ServiceProxyOptions",
                    ),
                    CONNECT_VERBS,
                    PROXY_METHODS,
                ),
            ],
            columns: printers::service_columns(),
            field_selectors: strings(&["spec.clusterIP", "spec.type"]),
            storage_path: "/services/specs".to_string(),
            strategy: |_, _| Box::new(defaults::ServiceStrategy),
            // Services allocate cluster IPs and node ports around their writes (upstream
            // wraps their generic store with the allocators).
            store_hooks: vec![|registry| registry.service_allocator()],
            ..resource("", "Service", "services", NAMESPACED)
        },
        ResourceInfo {
            short_names: strings(&["ep"]),
            columns: printers::endpoints_columns(),
            storage_path: "/services/endpoints".to_string(),
            strategy: |_, _| Box::new(defaults::CreateOnUpdateStrategy),
            ..resource("", "Endpoints", "endpoints", NAMESPACED)
        },
        ResourceInfo {
            short_names: strings(&["cm"]),
            columns: printers::configmap_columns(),
            ..resource("", "ConfigMap", "configmaps", NAMESPACED)
        },
        ResourceInfo {
            columns: printers::secret_columns(),
            field_selectors: strings(&["type"]),
            strategy: |_, _| Box::new(defaults::SecretStrategy),
            ..resource("", "Secret", "secrets", NAMESPACED)
        },
        ResourceInfo {
            short_names: strings(&["sa"]),
            columns: printers::serviceaccount_columns(),
            subresources: vec![SubresourceInfo::creates(
                "token",
                Speaks {
                    group: "authentication.k8s.io",
                    version: "v1",
                    kind: "TokenRequest",
                    definition: "io.k8s.api.authentication.v1.TokenRequest",
                },
            )],
            strategy: |_, _| Box::new(defaults::ServiceAccountStrategy),
            ..resource("", "ServiceAccount", "serviceaccounts", NAMESPACED)
        },
        ResourceInfo {
            short_names: strings(&["ev"]),
            columns: printers::event_columns(),
            field_selectors: strings(&[
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
            ]),
            strategy: |info, config| Box::new(EventStrategy::new(info, config.event_ttl)),
            ..resource("", "Event", "events", NAMESPACED)
        },
        ResourceInfo {
            short_names: strings(&["no"]),
            // `proxy`: the kubelet's endpoints, reached through the server (`kubelet::proxy`).
            subresources: vec![
                SubresourceInfo::status(),
                SubresourceInfo::connect(
                    "proxy",
                    core_kind("NodeProxyOptions", "io.k8s.api.core.v1.NodeProxyOptions"),
                    CONNECT_VERBS,
                    PROXY_METHODS,
                ),
            ],
            columns: printers::node_columns(),
            field_selectors: strings(&["spec.unschedulable"]),
            storage_path: "/minions".to_string(),
            strategy: |_, _| Box::new(defaults::NodeStrategy),
            ..resource("", "Node", "nodes", CLUSTER)
        },
        ResourceInfo {
            short_names: strings(&["pvc"]),
            subresources: vec![SubresourceInfo::status()],
            columns: printers::pvc_columns(),
            strategy: |_, _| Box::new(defaults::VolumeStrategy),
            ..resource(
                "",
                "PersistentVolumeClaim",
                "persistentvolumeclaims",
                NAMESPACED,
            )
        },
        ResourceInfo {
            short_names: strings(&["pv"]),
            subresources: vec![SubresourceInfo::status()],
            columns: printers::pv_columns(),
            strategy: |_, _| Box::new(defaults::VolumeStrategy),
            ..resource("", "PersistentVolume", "persistentvolumes", CLUSTER)
        },
        ResourceInfo {
            short_names: strings(&["rc"]),
            categories: strings(&["all"]),
            subresources: status_and_scale(),
            // core/v1 keeps orphaning as its default for compatibility with old clients.
            default_gc_policy: GcPolicy::OrphanDependents,
            columns: printers::replicationcontroller_columns(),
            field_selectors: strings(&["status.replicas"]),
            has_generation: true,
            storage_path: "/controllers".to_string(),
            strategy: |_, _| Box::new(workloads::ReplicationControllerStrategy),
            ..resource(
                "",
                "ReplicationController",
                "replicationcontrollers",
                NAMESPACED,
            )
        },
        // The legacy collection: a Binding POSTed here binds the pod it names, as the pods'
        // binding subresource does (the apiserver routes it there); nothing is stored.
        ResourceInfo {
            verbs: strings(&["create"]),
            create_only: true,
            default_gc_policy: GcPolicy::Unsupported,
            storage_path: String::new(),
            ..resource("", "Binding", "bindings", NAMESPACED)
        },
        ResourceInfo {
            short_names: strings(&["cs"]),
            verbs: strings(&["get", "list"]),
            computed: true,
            default_gc_policy: GcPolicy::Unsupported,
            storage_path: String::new(),
            columns: printers::componentstatus_columns(),
            ..resource("", "ComponentStatus", "componentstatuses", CLUSTER)
        },
        ResourceInfo {
            columns: printers::podtemplate_columns(),
            has_generation: true,
            strategy: |_, _| Box::new(workloads::PodTemplateStrategy),
            ..resource("", "PodTemplate", "podtemplates", NAMESPACED)
        },
        ResourceInfo {
            short_names: strings(&["limits"]),
            strategy: |_, _| Box::new(strategy::LimitRangeStrategy),
            ..resource("", "LimitRange", "limitranges", NAMESPACED)
        },
        ResourceInfo {
            short_names: strings(&["quota"]),
            subresources: vec![SubresourceInfo::status()],
            columns: printers::resourcequota_columns(),
            ..resource("", "ResourceQuota", "resourcequotas", NAMESPACED)
        },
    ]
}

fn apps() -> Vec<ResourceInfo> {
    vec![
        ResourceInfo {
            short_names: strings(&["deploy"]),
            categories: strings(&["all"]),
            subresources: status_and_scale(),
            columns: printers::deployment_columns(),
            has_generation: true,
            strategy: |_, _| Box::new(workloads::DeploymentStrategy),
            ..resource("apps", "Deployment", "deployments", NAMESPACED)
        },
        ResourceInfo {
            short_names: strings(&["rs"]),
            categories: strings(&["all"]),
            subresources: status_and_scale(),
            columns: printers::replicaset_columns(),
            field_selectors: strings(&["status.replicas"]),
            has_generation: true,
            strategy: |_, _| Box::new(workloads::ReplicaSetStrategy),
            ..resource("apps", "ReplicaSet", "replicasets", NAMESPACED)
        },
        ResourceInfo {
            short_names: strings(&["sts"]),
            categories: strings(&["all"]),
            subresources: status_and_scale(),
            columns: printers::statefulset_columns(),
            has_generation: true,
            strategy: |_, _| Box::new(workloads::StatefulSetStrategy),
            ..resource("apps", "StatefulSet", "statefulsets", NAMESPACED)
        },
        ResourceInfo {
            short_names: strings(&["ds"]),
            categories: strings(&["all"]),
            subresources: vec![SubresourceInfo::status()],
            columns: printers::daemonset_columns(),
            has_generation: true,
            strategy: |_, _| Box::new(workloads::DaemonSetStrategy),
            ..resource("apps", "DaemonSet", "daemonsets", NAMESPACED)
        },
        ResourceInfo {
            columns: printers::controllerrevision_columns(),
            ..resource(
                "apps",
                "ControllerRevision",
                "controllerrevisions",
                NAMESPACED,
            )
        },
    ]
}

fn others() -> Vec<ResourceInfo> {
    const RBAC: &str = "rbac.authorization.k8s.io";
    const STORAGE: &str = "storage.k8s.io";
    vec![
        ResourceInfo {
            categories: strings(&["all"]),
            subresources: vec![SubresourceInfo::status()],
            columns: printers::job_columns(),
            // A field label, not a path: it selects on status.succeeded.
            field_selectors: strings(&["status.successful"]),
            has_generation: true,
            strategy: |_, _| Box::new(workloads::JobStrategy),
            ..resource("batch", "Job", "jobs", NAMESPACED)
        },
        ResourceInfo {
            short_names: strings(&["cj"]),
            categories: strings(&["all"]),
            subresources: vec![SubresourceInfo::status()],
            columns: printers::cronjob_columns(),
            has_generation: true,
            strategy: |_, _| Box::new(workloads::CronJobStrategy),
            ..resource("batch", "CronJob", "cronjobs", NAMESPACED)
        },
        ResourceInfo {
            columns: printers::endpointslice_columns(),
            ..resource(
                "discovery.k8s.io",
                "EndpointSlice",
                "endpointslices",
                NAMESPACED,
            )
        },
        ResourceInfo {
            short_names: strings(&["sc"]),
            columns: printers::storageclass_columns(),
            strategy: |_, _| Box::new(storage::StorageClassStrategy),
            ..resource(STORAGE, "StorageClass", "storageclasses", CLUSTER)
        },
        ResourceInfo {
            columns: printers::csidriver_columns(),
            strategy: |_, _| Box::new(storage::CSIDriverStrategy),
            ..resource(STORAGE, "CSIDriver", "csidrivers", CLUSTER)
        },
        ResourceInfo {
            columns: printers::csinode_columns(),
            strategy: |_, _| Box::new(storage::CSINodeStrategy),
            ..resource(STORAGE, "CSINode", "csinodes", CLUSTER)
        },
        ResourceInfo {
            columns: printers::csistoragecapacity_columns(),
            strategy: |_, _| Box::new(storage::CSIStorageCapacityStrategy),
            ..resource(
                STORAGE,
                "CSIStorageCapacity",
                "csistoragecapacities",
                NAMESPACED,
            )
        },
        ResourceInfo {
            subresources: vec![SubresourceInfo::status()],
            columns: printers::volumeattachment_columns(),
            strategy: |_, _| Box::new(storage::VolumeAttachmentStrategy),
            ..resource(STORAGE, "VolumeAttachment", "volumeattachments", CLUSTER)
        },
        ResourceInfo {
            short_names: strings(&["vac"]),
            columns: printers::volumeattributesclass_columns(),
            strategy: |_, _| Box::new(storage::VolumeAttributesClassStrategy),
            ..resource(
                STORAGE,
                "VolumeAttributesClass",
                "volumeattributesclasses",
                CLUSTER,
            )
        },
        ResourceInfo {
            columns: printers::lease_columns(),
            strategy: |_, _| Box::new(defaults::CreateOnUpdateStrategy),
            ..resource("coordination.k8s.io", "Lease", "leases", NAMESPACED)
        },
        ResourceInfo {
            // Upstream serves this group from the core event storage, short name included.
            short_names: strings(&["ev"]),
            columns: printers::event_columns(),
            field_selectors: strings(&[
                "regarding.kind",
                "regarding.namespace",
                "regarding.name",
                "regarding.uid",
                "regarding.apiVersion",
                "regarding.resourceVersion",
                "regarding.fieldPath",
                "reason",
                "reportingController",
                "type",
            ]),
            // Upstream serves both event APIs from one storage (`/events`, the default path),
            // kept in the core shape; the strategy converts (`strategy::EventsV1`).
            strategy: |info, config| Box::new(EventStrategy::new(info, config.event_ttl)),
            ..resource("events.k8s.io", "Event", "events", NAMESPACED)
        },
        ResourceInfo {
            short_names: strings(&["pdb"]),
            subresources: vec![SubresourceInfo::status()],
            columns: printers::pdb_columns(),
            has_generation: true,
            strategy: |_, _| Box::new(workloads::PodDisruptionBudgetStrategy),
            ..resource(
                "policy",
                "PodDisruptionBudget",
                "poddisruptionbudgets",
                NAMESPACED,
            )
        },
        ResourceInfo {
            strategy: |_, _| Box::new(rbac::RoleStrategy::role()),
            ..resource(RBAC, "Role", "roles", NAMESPACED)
        },
        ResourceInfo {
            columns: printers::rolebinding_columns(),
            strategy: |_, _| Box::new(rbac::BindingStrategy::role_binding()),
            ..resource(RBAC, "RoleBinding", "rolebindings", NAMESPACED)
        },
        ResourceInfo {
            strategy: |_, _| Box::new(rbac::RoleStrategy::cluster_role()),
            ..resource(RBAC, "ClusterRole", "clusterroles", CLUSTER)
        },
        ResourceInfo {
            columns: printers::clusterrolebinding_columns(),
            strategy: |_, _| Box::new(rbac::BindingStrategy::cluster_role_binding()),
            ..resource(RBAC, "ClusterRoleBinding", "clusterrolebindings", CLUSTER)
        },
        ResourceInfo {
            short_names: strings(&["crd", "crds"]),
            categories: strings(&["api-extensions"]),
            subresources: vec![SubresourceInfo::status()],
            has_generation: true,
            // The extensions server keys by group as well as resource.
            storage_path: "/apiextensions.k8s.io/customresourcedefinitions".to_string(),
            ..resource(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                "customresourcedefinitions",
                CLUSTER,
            )
        },
    ]
}

fn networking() -> Vec<ResourceInfo> {
    const NETWORKING: &str = "networking.k8s.io";
    vec![
        ResourceInfo {
            short_names: strings(&["ing"]),
            subresources: vec![SubresourceInfo::status()],
            columns: printers::ingress_columns(),
            has_generation: true,
            // Upstream's key segment is singular.
            storage_path: "/ingress".to_string(),
            strategy: |_, _| Box::new(networking::IngressStrategy),
            ..resource(NETWORKING, "Ingress", "ingresses", NAMESPACED)
        },
        ResourceInfo {
            columns: printers::ingressclass_columns(),
            strategy: |_, _| Box::new(networking::IngressClassStrategy),
            ..resource(NETWORKING, "IngressClass", "ingressclasses", CLUSTER)
        },
        ResourceInfo {
            short_names: strings(&["netpol"]),
            columns: printers::networkpolicy_columns(),
            has_generation: true,
            strategy: |_, _| Box::new(networking::NetworkPolicyStrategy),
            ..resource(NETWORKING, "NetworkPolicy", "networkpolicies", NAMESPACED)
        },
        ResourceInfo {
            subresources: vec![SubresourceInfo::status()],
            columns: printers::servicecidr_columns(),
            strategy: |_, _| Box::new(networking::ServiceCIDRStrategy),
            ..resource(NETWORKING, "ServiceCIDR", "servicecidrs", CLUSTER)
        },
        ResourceInfo {
            short_names: strings(&["ip"]),
            columns: printers::ipaddress_columns(),
            strategy: |_, _| Box::new(networking::IPAddressStrategy),
            ..resource(NETWORKING, "IPAddress", "ipaddresses", CLUSTER)
        },
    ]
}

/// HorizontalPodAutoscalers: autoscaling/v2 and autoscaling/v1 over one storage in the v2
/// shape (upstream's storage version), v1 converted on every way in and out.
fn autoscalers() -> Vec<ResourceInfo> {
    let hpa = |version: &str, strategy: StrategyFactory| ResourceInfo {
        version: version.to_string(),
        short_names: strings(&["hpa"]),
        categories: strings(&["all"]),
        subresources: vec![SubresourceInfo::status()],
        columns: printers::hpa_columns(),
        strategy,
        ..resource(
            "autoscaling",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            NAMESPACED,
        )
    };
    vec![
        hpa("v2", |_, _| {
            Box::new(autoscaling::HorizontalPodAutoscalerStrategy { v1: false })
        }),
        hpa("v1", |_, _| {
            Box::new(autoscaling::HorizontalPodAutoscalerStrategy { v1: true })
        }),
    ]
}
