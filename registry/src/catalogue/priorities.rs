//! The priorities kube-apiserver registers its built-in group-versions with (its aggregator's
//! apiVersionPriorities): discovery orders groups by them, and the local APIServices carry
//! them.

/// A group's priority; custom resources' groups are registered at 1000, below all of them.
pub fn group_priority(group: &str) -> u32 {
    match group {
        "" => 18000,
        "apiregistration.k8s.io" | "apps" => 17800,
        "events.k8s.io" => 17750,
        "authentication.k8s.io" => 17700,
        "authorization.k8s.io" => 17600,
        "autoscaling" => 17500,
        "batch" => 17400,
        "certificates.k8s.io" => 17300,
        "networking.k8s.io" => 17200,
        "policy" => 17100,
        "rbac.authorization.k8s.io" => 17000,
        "storage.k8s.io" => 16800,
        "admissionregistration.k8s.io" | "apiextensions.k8s.io" => 16700,
        "scheduling.k8s.io" => 16600,
        "coordination.k8s.io" => 16500,
        "node.k8s.io" => 16300,
        // resource.k8s.io shares discovery.k8s.io's priority upstream; the name breaks the tie.
        "discovery.k8s.io" | "resource.k8s.io" => 16200,
        "flowcontrol.apiserver.k8s.io" => 16100,
        "internal.apiserver.k8s.io" => 16000,
        "storagemigration.k8s.io" => 15800,
        _ => 1000,
    }
}

/// A built-in version's priority within its group.
pub fn version_priority(group: &str, version: &str) -> u32 {
    match (group, version) {
        ("", "v1") => 1,
        ("autoscaling", "v2") => 30,
        ("flowcontrol.apiserver.k8s.io", "v1") => 21,
        _ => 15,
    }
}
