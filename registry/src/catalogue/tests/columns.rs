//! Upstream's Table columns of the built-in resources, as kubectl prints their headers.

use super::lookup;

#[test]
fn column_headers_match_upstream() {
    let headers = |group: &str, plural: &str, wide: bool| -> Vec<String> {
        lookup(group, plural)
            .columns
            .iter()
            .filter(|c| wide || c.priority == 0)
            .map(|c| c.name.to_uppercase())
            .collect()
    };
    assert_eq!(
        headers("", "pods", true),
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED NODE",
            "READINESS GATES"
        ]
    );
    assert_eq!(
        headers("apps", "deployments", true),
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    assert_eq!(
        headers("apps", "replicasets", false),
        ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    );
    assert_eq!(
        headers("apps", "statefulsets", false),
        ["NAME", "READY", "AGE"]
    );
    assert_eq!(
        headers("apps", "daemonsets", false),
        [
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "NODE SELECTOR",
            "AGE"
        ]
    );
    assert_eq!(
        headers("", "services", false),
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]
    );
    assert_eq!(headers("", "configmaps", false), ["NAME", "DATA", "AGE"]);
    assert_eq!(
        headers("", "secrets", false),
        ["NAME", "TYPE", "DATA", "AGE"]
    );
    assert_eq!(headers("", "namespaces", false), ["NAME", "STATUS", "AGE"]);
    assert_eq!(
        headers("", "nodes", false),
        ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    );
    assert_eq!(
        headers("", "events", false),
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    );
    assert_eq!(
        headers("batch", "jobs", false),
        ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    );
    assert_eq!(
        headers("batch", "cronjobs", false),
        [
            "NAME",
            "SCHEDULE",
            "TIMEZONE",
            "SUSPEND",
            "ACTIVE",
            "LAST SCHEDULE",
            "AGE"
        ]
    );
    assert_eq!(
        headers("coordination.k8s.io", "leases", false),
        ["NAME", "HOLDER", "AGE"]
    );
    assert_eq!(
        headers("discovery.k8s.io", "endpointslices", false),
        ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    );
    assert_eq!(
        headers("rbac.authorization.k8s.io", "roles", false),
        ["NAME", "CREATED AT"]
    );
    assert_eq!(
        headers("", "podtemplates", false),
        ["NAME", "CONTAINERS", "IMAGES", "POD LABELS"]
    );
    assert_eq!(
        headers("networking.k8s.io", "ingresses", false),
        ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    );
    assert_eq!(
        headers("networking.k8s.io", "ingressclasses", false),
        ["NAME", "CONTROLLER", "PARAMETERS", "AGE"]
    );
    assert_eq!(
        headers("networking.k8s.io", "networkpolicies", false),
        ["NAME", "POD-SELECTOR", "AGE"]
    );
    assert_eq!(
        headers("certificates.k8s.io", "certificatesigningrequests", false),
        [
            "NAME",
            "AGE",
            "SIGNERNAME",
            "REQUESTOR",
            "REQUESTEDDURATION",
            "CONDITION"
        ]
    );
    assert_eq!(
        headers("flowcontrol.apiserver.k8s.io", "flowschemas", false),
        [
            "NAME",
            "PRIORITYLEVEL",
            "MATCHINGPRECEDENCE",
            "DISTINGUISHERMETHOD",
            "AGE",
            "MISSINGPL"
        ]
    );
    assert_eq!(
        headers(
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
            false
        ),
        [
            "NAME",
            "TYPE",
            "NOMINALCONCURRENCYSHARES",
            "QUEUES",
            "HANDSIZE",
            "QUEUELENGTHLIMIT",
            "AGE"
        ]
    );
    assert_eq!(
        headers("scheduling.k8s.io", "priorityclasses", false),
        ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    );
    assert_eq!(
        headers("node.k8s.io", "runtimeclasses", false),
        ["NAME", "HANDLER", "AGE"]
    );
    assert_eq!(
        headers("storage.k8s.io", "csidrivers", false),
        [
            "NAME",
            "ATTACHREQUIRED",
            "PODINFOONMOUNT",
            "STORAGECAPACITY",
            "TOKENREQUESTS",
            "REQUIRESREPUBLISH",
            "MODES",
            "AGE"
        ]
    );
    assert_eq!(
        headers("storage.k8s.io", "volumeattachments", false),
        ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"]
    );
    assert_eq!(
        headers("storage.k8s.io", "csistoragecapacities", false),
        ["NAME", "STORAGECLASSNAME", "CAPACITY", "AGE"]
    );
    assert_eq!(
        headers("storage.k8s.io", "csinodes", false),
        ["NAME", "DRIVERS", "AGE"]
    );
    assert_eq!(
        headers("storage.k8s.io", "volumeattributesclasses", false),
        ["NAME", "DRIVERNAME", "AGE"]
    );
    assert_eq!(
        headers(
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            false
        ),
        ["NAME", "WEBHOOKS", "AGE"]
    );
    assert_eq!(
        headers(
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
            false
        ),
        ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]
    );
    assert_eq!(
        headers(
            "admissionregistration.k8s.io",
            "validatingadmissionpolicybindings",
            false
        ),
        ["NAME", "POLICYNAME", "PARAMREF", "AGE"]
    );
}
