//! The built-in catalogue: names, scopes, verbs, storage paths and categories as upstream's.

mod columns;

use std::collections::HashSet;

use serde_json::json;

use super::{Catalogue, Cell, GcPolicy, Verb};

pub(super) fn lookup(group: &str, plural: &str) -> std::sync::Arc<super::ResourceInfo> {
    Catalogue::builtin()
        .lookup(group, "v1", plural)
        .unwrap_or_else(|| panic!("{group}/{plural} is not served"))
}

#[test]
fn every_builtin_is_served_with_upstream_names_and_scope() {
    // (group, plural, kind, short names, namespaced)
    let expected: &[(&str, &str, &str, &[&str], bool)] = &[
        ("", "namespaces", "Namespace", &["ns"], false),
        ("", "pods", "Pod", &["po"], true),
        ("", "services", "Service", &["svc"], true),
        ("", "endpoints", "Endpoints", &["ep"], true),
        ("", "configmaps", "ConfigMap", &["cm"], true),
        ("", "secrets", "Secret", &[], true),
        ("", "serviceaccounts", "ServiceAccount", &["sa"], true),
        ("", "events", "Event", &["ev"], true),
        ("", "nodes", "Node", &["no"], false),
        (
            "",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            &["pvc"],
            true,
        ),
        ("", "persistentvolumes", "PersistentVolume", &["pv"], false),
        (
            "",
            "replicationcontrollers",
            "ReplicationController",
            &["rc"],
            true,
        ),
        ("", "limitranges", "LimitRange", &["limits"], true),
        ("", "resourcequotas", "ResourceQuota", &["quota"], true),
        ("", "podtemplates", "PodTemplate", &[], true),
        ("", "bindings", "Binding", &[], true),
        ("", "componentstatuses", "ComponentStatus", &["cs"], false),
        ("apps", "deployments", "Deployment", &["deploy"], true),
        ("apps", "replicasets", "ReplicaSet", &["rs"], true),
        ("apps", "statefulsets", "StatefulSet", &["sts"], true),
        ("apps", "daemonsets", "DaemonSet", &["ds"], true),
        (
            "apps",
            "controllerrevisions",
            "ControllerRevision",
            &[],
            true,
        ),
        ("batch", "jobs", "Job", &[], true),
        ("batch", "cronjobs", "CronJob", &["cj"], true),
        ("coordination.k8s.io", "leases", "Lease", &[], true),
        (
            "storage.k8s.io",
            "storageclasses",
            "StorageClass",
            &["sc"],
            false,
        ),
        (
            "discovery.k8s.io",
            "endpointslices",
            "EndpointSlice",
            &[],
            true,
        ),
        ("events.k8s.io", "events", "Event", &["ev"], true),
        (
            "policy",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            &["pdb"],
            true,
        ),
        ("rbac.authorization.k8s.io", "roles", "Role", &[], true),
        (
            "rbac.authorization.k8s.io",
            "rolebindings",
            "RoleBinding",
            &[],
            true,
        ),
        (
            "rbac.authorization.k8s.io",
            "clusterroles",
            "ClusterRole",
            &[],
            false,
        ),
        (
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            "ClusterRoleBinding",
            &[],
            false,
        ),
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            &["crd", "crds"],
            false,
        ),
        ("storage.k8s.io", "csidrivers", "CSIDriver", &[], false),
        ("storage.k8s.io", "csinodes", "CSINode", &[], false),
        (
            "storage.k8s.io",
            "csistoragecapacities",
            "CSIStorageCapacity",
            &[],
            true,
        ),
        (
            "storage.k8s.io",
            "volumeattachments",
            "VolumeAttachment",
            &[],
            false,
        ),
        (
            "storage.k8s.io",
            "volumeattributesclasses",
            "VolumeAttributesClass",
            &["vac"],
            false,
        ),
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
            &[],
            false,
        ),
        (
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            &[],
            false,
        ),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
            "ValidatingAdmissionPolicy",
            &[],
            false,
        ),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicybindings",
            "ValidatingAdmissionPolicyBinding",
            &[],
            false,
        ),
        (
            "apiregistration.k8s.io",
            "apiservices",
            "APIService",
            &[],
            false,
        ),
        (
            "autoscaling",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            &["hpa"],
            true,
        ),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            "CertificateSigningRequest",
            &["csr"],
            false,
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            "flowschemas",
            "FlowSchema",
            &[],
            false,
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
            "PriorityLevelConfiguration",
            &[],
            false,
        ),
        ("networking.k8s.io", "ingresses", "Ingress", &["ing"], true),
        (
            "networking.k8s.io",
            "ingressclasses",
            "IngressClass",
            &[],
            false,
        ),
        (
            "networking.k8s.io",
            "networkpolicies",
            "NetworkPolicy",
            &["netpol"],
            true,
        ),
        (
            "networking.k8s.io",
            "servicecidrs",
            "ServiceCIDR",
            &[],
            false,
        ),
        (
            "networking.k8s.io",
            "ipaddresses",
            "IPAddress",
            &["ip"],
            false,
        ),
        (
            "scheduling.k8s.io",
            "priorityclasses",
            "PriorityClass",
            &["pc"],
            false,
        ),
        ("node.k8s.io", "runtimeclasses", "RuntimeClass", &[], false),
        (
            "resource.k8s.io",
            "deviceclasses",
            "DeviceClass",
            &[],
            false,
        ),
        (
            "resource.k8s.io",
            "resourceclaims",
            "ResourceClaim",
            &[],
            true,
        ),
        (
            "resource.k8s.io",
            "resourceclaimtemplates",
            "ResourceClaimTemplate",
            &[],
            true,
        ),
        (
            "resource.k8s.io",
            "resourceslices",
            "ResourceSlice",
            &[],
            false,
        ),
        (
            "authentication.k8s.io",
            "selfsubjectreviews",
            "SelfSubjectReview",
            &[],
            false,
        ),
        (
            "authentication.k8s.io",
            "tokenreviews",
            "TokenReview",
            &[],
            false,
        ),
        (
            "authorization.k8s.io",
            "localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            &[],
            true,
        ),
        (
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            &[],
            false,
        ),
        (
            "authorization.k8s.io",
            "selfsubjectrulesreviews",
            "SelfSubjectRulesReview",
            &[],
            false,
        ),
        (
            "authorization.k8s.io",
            "subjectaccessreviews",
            "SubjectAccessReview",
            &[],
            false,
        ),
    ];
    let catalogue = Catalogue::builtin();
    // HorizontalPodAutoscalers are served in autoscaling/v2 too, looked at below.
    assert_eq!(catalogue.all().len(), expected.len() + 1);
    let v2 = catalogue
        .lookup("autoscaling", "v2", "horizontalpodautoscalers")
        .expect("autoscaling/v2");
    assert_eq!(
        v2.storage_path,
        lookup("autoscaling", "horizontalpodautoscalers").storage_path
    );
    for (group, plural, kind, short, namespaced) in expected {
        let r = lookup(group, plural);
        assert_eq!(r.kind, *kind, "{plural}");
        assert_eq!(r.list_kind, format!("{kind}List"));
        assert_eq!(r.singular, kind.to_lowercase());
        assert_eq!(r.short_names, *short, "{group}/{plural}");
        assert_eq!(r.namespaced, *namespaced, "{group}/{plural}");
        assert_eq!(
            r.api_version(),
            if group.is_empty() {
                "v1".to_string()
            } else {
                format!("{group}/v1")
            }
        );
    }
}

#[test]
fn no_resource_is_listed_twice() {
    let all = Catalogue::builtin().all();
    let mut seen = HashSet::new();
    for r in all.iter() {
        assert!(
            seen.insert((&r.group, &r.version, &r.plural)),
            "{}/{}",
            r.group,
            r.plural
        );
    }
}

#[test]
fn all_category_holds_the_workloads() {
    let all = Catalogue::builtin().all();
    let mut in_all: Vec<&str> = all
        .iter()
        .filter(|r| r.categories.iter().any(|c| c == "all"))
        .map(|r| r.plural.as_str())
        .collect();
    in_all.sort_unstable();
    assert_eq!(
        in_all,
        [
            "cronjobs",
            "daemonsets",
            "deployments",
            // autoscaling/v2 and autoscaling/v1.
            "horizontalpodautoscalers",
            "horizontalpodautoscalers",
            "jobs",
            "pods",
            "replicasets",
            "replicationcontrollers",
            "services",
            "statefulsets",
        ]
    );
}

#[test]
fn subresources_verbs_and_policies() {
    let ns = lookup("", "namespaces");
    assert!(ns.has_subresource("status") && ns.has_subresource("finalize"));
    assert!(!ns.has_verb(Verb::DeleteCollection));
    let pods = lookup("", "pods");
    assert!(pods.has_subresource("status") && !pods.has_subresource("scale"));
    assert!(pods.has_verb(Verb::DeleteCollection) && pods.has_verb(Verb::Watch));
    for (group, plural) in [
        ("", "replicationcontrollers"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
    ] {
        let r = lookup(group, plural);
        let scale = r.scale().expect("scale");
        assert_eq!(scale.spec_replicas_path, ".spec.replicas");
        assert!(r.has_subresource("status"), "{plural}");
    }
    assert!(!lookup("apps", "daemonsets").has_subresource("scale"));
    assert!(!lookup("", "configmaps").has_subresource("status"));
    assert_eq!(
        lookup("", "replicationcontrollers").default_gc_policy,
        GcPolicy::OrphanDependents
    );
    assert!(Catalogue::builtin()
        .all()
        .iter()
        .filter(|r| r.plural != "replicationcontrollers" && !r.create_only && !r.computed)
        .all(|r| r.default_gc_policy == GcPolicy::DeleteDependents));
    // Nothing stored, nothing collected.
    assert!(Catalogue::builtin()
        .all()
        .iter()
        .filter(|r| r.create_only)
        .all(|r| r.default_gc_policy == GcPolicy::Unsupported && r.verbs == ["create"]));
}

#[test]
fn storage_paths_follow_upstream_prefixes() {
    let paths = [
        ("", "services", "/services/specs"),
        ("", "endpoints", "/services/endpoints"),
        ("", "nodes", "/minions"),
        ("", "replicationcontrollers", "/controllers"),
        ("", "events", "/events"),
        // One storage for both event APIs, as upstream.
        ("events.k8s.io", "events", "/events"),
        ("apps", "deployments", "/deployments"),
        ("networking.k8s.io", "ingresses", "/ingress"),
        ("networking.k8s.io", "networkpolicies", "/networkpolicies"),
        (
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
            "/prioritylevelconfigurations",
        ),
        ("", "podtemplates", "/podtemplates"),
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "/apiextensions.k8s.io/customresourcedefinitions",
        ),
    ];
    for (group, plural, path) in paths {
        assert_eq!(lookup(group, plural).storage_path, path, "{group}/{plural}");
    }
}

#[test]
fn generation_tracking_and_field_selectors() {
    for (group, plural) in [
        ("", "pods"),
        ("apps", "deployments"),
        ("batch", "cronjobs"),
        ("policy", "poddisruptionbudgets"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
    ] {
        assert!(lookup(group, plural).has_generation, "{plural}");
    }
    for (group, plural) in [
        ("", "configmaps"),
        ("", "secrets"),
        ("", "namespaces"),
        ("", "services"),
    ] {
        assert!(!lookup(group, plural).has_generation, "{plural}");
    }
    assert!(lookup("", "pods")
        .field_selectors
        .iter()
        .any(|f| f == "spec.nodeName"));
    assert_eq!(lookup("", "secrets").field_selectors, ["type"]);
    assert_eq!(lookup("", "nodes").field_selectors, ["spec.unschedulable"]);
    assert!(lookup("events.k8s.io", "events")
        .field_selectors
        .iter()
        .any(|f| f == "regarding.name"));
}

#[test]
fn every_resource_has_a_name_column_and_a_time_column() {
    for r in Catalogue::builtin().all().iter() {
        // Storage classes print their name with upstream's " (default)" mark.
        let name = r.columns.iter().find(|c| match r.plural.as_str() {
            "storageclasses" => matches!(c.cell, Cell::Printer(_)) && c.format == "name",
            _ => matches!(c.cell, Cell::Name),
        });
        let name = name.unwrap_or_else(|| panic!("{} has no Name column", r.plural));
        assert_eq!((name.name.as_str(), name.format.as_str()), ("Name", "name"));
        let has_age = r
            .columns
            .iter()
            .any(|c| matches!(c.cell, Cell::Age) && c.kind == "string");
        let created_at = r
            .columns
            .iter()
            .any(|c| c.name == "Created At" && c.kind == "date");
        // Events print Last Seen instead; default-printed kinds print Created At.
        match r.plural.as_str() {
            "events" => assert!(!has_age && r.columns[0].name == "Last Seen"),
            "roles" | "clusterroles" | "limitranges" | "customresourcedefinitions" => {
                assert!(created_at && r.columns.len() == 2, "{}", r.plural)
            }
            // Upstream prints pod templates and component statuses without a time.
            "podtemplates" | "componentstatuses" => assert!(!has_age && !created_at),
            // The reviews are never listed; they keep the default columns.
            _ if r.create_only => assert!(created_at && r.columns.len() == 2, "{}", r.plural),
            _ => assert!(has_age, "{} has no Age column", r.plural),
        }
        for c in r.columns.iter() {
            assert!(c.priority == 0 || c.priority == 1);
            assert!(!c.description.is_empty(), "{} {}", r.plural, c.name);
        }
    }
}

#[test]
fn printers_survive_hostile_objects() {
    let odd = [
        json!(null),
        json!(42),
        json!({"spec": [], "status": "x", "metadata": {"creationTimestamp": 5}}),
        json!({"spec": {"replicas": "3", "template": {"spec": {"containers": {}}}, "ports": [null]},
               "status": {"conditions": {}, "loadBalancer": {"ingress": [7]}},
               "subsets": [{"addresses": [{}], "ports": [{"port": "x"}]}]}),
    ];
    for r in Catalogue::builtin().all().iter() {
        for c in r.columns.iter() {
            if let Cell::Printer(f) = c.cell {
                for obj in &odd {
                    let v = f(obj);
                    assert!(
                        v.is_string() || v.is_i64() || (v.is_boolean() && c.kind == "boolean"),
                        "{} {} gave {v}",
                        r.plural,
                        c.name
                    );
                }
            }
        }
    }
}
