//! A walk over every resource the server serves, as discovery lists it: each writable kind is
//! created, patched with a strategic merge patch and a JSON merge patch, and read back as a
//! Table, so that no kind's registration can drift from the others' (a kind missing its
//! patch metadata answers 415 to kubectl's strategic merge patches). A kind served without a
//! sample here fails the walk: add one.

mod support;

use serde_json::{json, Value};
use support::{start, Kubectl, Server};

const NS: &str = "walk";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// A minimal valid object of each writable built-in kind, by (group, kind).
fn sample(group: &str, kind: &str) -> Option<Value> {
    let labels = json!({"app": "walk"});
    let template = json!({
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    });
    let job_template = json!({"metadata": {"labels": labels}, "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}});
    let selector = json!({"matchLabels": labels});
    let spec = match (group, kind) {
        ("", "Namespace") => json!({}),
        ("", "Pod") => json!({"spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
        ("", "Service") => json!({"spec": {"ports": [{"port": 80}]}}),
        ("", "Endpoints") => json!({"subsets": []}),
        ("", "ConfigMap") => json!({"data": {"a": "b"}}),
        ("", "Secret") => json!({"stringData": {"a": "b"}}),
        ("", "ServiceAccount") => json!({}),
        ("", "Event") => json!({
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": NS},
            "reason": "Walk", "message": "walked", "type": "Normal"
        }),
        ("", "Node") => json!({}),
        ("", "PersistentVolume") => json!({"spec": {
            "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/walk"}
        }}),
        ("", "PersistentVolumeClaim") => json!({"spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}
        }}),
        ("", "ReplicationController") => {
            json!({"spec": {"replicas": 0, "selector": labels, "template": template}})
        }
        ("", "LimitRange") => {
            json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}}]}})
        }
        ("", "ResourceQuota") => json!({"spec": {"hard": {"pods": "10"}}}),
        ("", "PodTemplate") => json!({"template": template}),
        ("apps", "Deployment" | "ReplicaSet") => {
            json!({"spec": {"replicas": 0, "selector": selector, "template": template}})
        }
        ("apps", "StatefulSet") => json!({"spec": {
            "replicas": 0, "serviceName": "walk", "selector": selector, "template": template
        }}),
        ("apps", "DaemonSet") => json!({"spec": {"selector": selector, "template": template}}),
        ("apps", "ControllerRevision") => json!({"revision": 1, "data": {}}),
        ("batch", "Job") => json!({"spec": {"suspend": true, "template": job_template}}),
        ("batch", "CronJob") => json!({"spec": {
            "schedule": "*/5 * * * *", "suspend": true,
            "jobTemplate": {"spec": {"template": job_template}}
        }}),
        ("discovery.k8s.io", "EndpointSlice") => json!({"addressType": "IPv4", "endpoints": []}),
        ("storage.k8s.io", "StorageClass") => json!({"provisioner": "example.com/walk"}),
        ("storage.k8s.io", "CSIDriver") => json!({"spec": {}}),
        ("storage.k8s.io", "CSINode") => json!({"spec": {"drivers": [
            {"name": "csi.walk.example.com", "nodeID": "walk-node"}
        ]}}),
        ("storage.k8s.io", "CSIStorageCapacity") => {
            json!({"storageClassName": "standard", "capacity": "10Gi"})
        }
        ("storage.k8s.io", "VolumeAttachment") => json!({"spec": {
            "attacher": "csi.walk.example.com", "nodeName": "walk-node",
            "source": {"persistentVolumeName": "walk-pv"}
        }}),
        ("storage.k8s.io", "VolumeAttributesClass") => {
            json!({"driverName": "csi.walk.example.com", "parameters": {"iops": "100"}})
        }
        ("coordination.k8s.io", "Lease") => json!({"spec": {"holderIdentity": "walk"}}),
        ("events.k8s.io", "Event") => json!({
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "walk.example.com/c",
            "reportingInstance": "walk-1", "action": "Walk", "reason": "Walk", "type": "Normal",
            "regarding": {"kind": "Pod", "name": "p", "namespace": NS}
        }),
        ("policy", "PodDisruptionBudget") => {
            json!({"spec": {"minAvailable": 1, "selector": selector}})
        }
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => json!({"rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
        ]}),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => json!({
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "walker"}]
        }),
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => json!({"webhooks": [{
            "name": "walk.webhooks.example.com", "admissionReviewVersions": ["v1"],
            "sideEffects": "None", "clientConfig": {"url": "https://walk.example.com/hook"}
        }]}),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => json!({"spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"],
                "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicas <= 5"}]
        }}),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => json!({"spec": {
            "policyName": "walk-admissionregistration", "validationActions": ["Deny"]
        }}),
        ("apiregistration.k8s.io", "APIService") => json!({"spec": {
            "group": "walk.example.com", "version": "v1alpha1",
            "service": {"namespace": NS, "name": "walk"},
            "groupPriorityMinimum": 100, "versionPriority": 100, "insecureSkipTLSVerify": true
        }}),
        ("networking.k8s.io", "Ingress") => json!({"spec": {"defaultBackend": {
            "service": {"name": "walk", "port": {"number": 80}}
        }}}),
        ("networking.k8s.io", "IngressClass") => {
            json!({"spec": {"controller": "walk.example.com/ingress"}})
        }
        ("networking.k8s.io", "ServiceCIDR") => json!({"spec": {"cidrs": ["10.200.0.0/24"]}}),
        ("networking.k8s.io", "IPAddress") => json!({"spec": {"parentRef": {
            "group": "", "resource": "services", "namespace": NS, "name": "walk"
        }}}),
        ("networking.k8s.io", "NetworkPolicy") => json!({"spec": {"podSelector": selector}}),
        ("scheduling.k8s.io", "PriorityClass") => json!({"value": 100}),
        ("autoscaling", "HorizontalPodAutoscaler") => json!({"spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "walk"},
            "maxReplicas": 3
        }}),
        // A P-256 request for CN=walk, made once with openssl.
        ("certificates.k8s.io", "CertificateSigningRequest") => json!({"spec": {
            "request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIS01IRUNBUUF3RHpFTk1Bc0dBMVVFQXd3RWQyRnNhekJaTUJNR0J5cUdTTTQ5QWdFR0NDcUdTTTQ5QXdFSApBMElBQks0OTFlWHVMMXFsTUdBQ3owcTV3S0hPaGR0MzY4NFY5WDBBMFpTOWxpdEJIWVFzb2pvUFZSMjlXZmM2Cm0wYXhjdlVoZm9McUd2bEF2Q2UrTWZ3MjdkS2dBREFLQmdncWhrak9QUVFEQWdOSkFEQkdBaUVBOGlKaGNKZGwKWlNJcUJzN2dnK0IrYVlMcWdHMjZrMEwrTEtuZzMySDdaVVlDSVFEZ21QTTJESXl6b2s5aC8rWlpUSW5oaE1xOQplN0hWcldZeE1iWVFZRTJqUGc9PQotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K",
            "signerName": "walk.example.com/signer", "usages": ["client auth"]
        }}),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => json!({"spec": {
            "type": "Limited",
            "limited": {"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}
        }}),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => json!({"spec": {
            "priorityLevelConfiguration": {"name": "walk-flowcontrol"},
            "matchingPrecedence": 500,
            "rules": [{"subjects": [{"kind": "Group", "group": {"name": "walkers"}}],
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/walk"]}]}]
        }}),
        ("node.k8s.io", "RuntimeClass") => json!({"handler": "runc"}),
        ("resource.k8s.io", "DeviceClass") => json!({"spec": {"selectors": [
            {"cel": {"expression": "device.driver == \"walk.example.com\""}}
        ]}}),
        ("resource.k8s.io", "ResourceClaim") => json!({"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "walk-resource"}}
        ]}}}),
        ("resource.k8s.io", "ResourceClaimTemplate") => json!({"spec": {"spec": {"devices": {
            "requests": [{"name": "gpu", "exactly": {"deviceClassName": "walk-resource"}}]
        }}}}),
        ("resource.k8s.io", "ResourceSlice") => json!({"spec": {
            "driver": "walk.example.com", "pool": {"name": "walk", "resourceSliceCount": 1},
            "allNodes": true, "devices": [{"name": "dev-0"}]
        }}),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => json!({"spec": {
            "group": "walk.example.com", "scope": "Namespaced",
            "names": {"plural": "walkers", "singular": "walker", "kind": "Walker", "listKind": "WalkerList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }}),
        _ => return None,
    };
    Some(spec)
}

/// The name each sample gets: one per group, since kinds of two groups may share storage
/// (core and events.k8s.io Events); a CRD's name is fixed by its group and plural.
fn name_of(group: &str, kind: &str) -> String {
    match kind {
        "CustomResourceDefinition" => "walkers.walk.example.com".into(),
        // An APIService is named for the group-version it registers.
        "APIService" => "v1alpha1.walk.example.com".into(),
        // An IPAddress is named by its address.
        "IPAddress" => "10.200.0.10".into(),
        _ => format!(
            "walk-{}",
            group
                .split('.')
                .next()
                .filter(|g| !g.is_empty())
                .unwrap_or("core")
        ),
    }
}

/// (group, version, resource as discovery lists it) of every served group-version.
fn served(s: &Server) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    let mut group_versions = vec![("".to_string(), "v1".to_string(), "/api/v1".to_string())];
    for group in s.get("/apis").json()["groups"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        for v in group["versions"].as_array().cloned().unwrap_or_default() {
            let (name, version) = (
                group["name"].as_str().unwrap_or_default(),
                v["version"].as_str().unwrap_or_default(),
            );
            group_versions.push((
                name.into(),
                version.into(),
                format!("/apis/{name}/{version}"),
            ));
        }
    }
    for (group, version, path) in group_versions {
        for resource in s.get(&path).json()["resources"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            out.push((group.clone(), version.clone(), resource));
        }
    }
    out
}

fn verbs(resource: &Value) -> Vec<&str> {
    resource["verbs"]
        .as_array()
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[test]
fn every_served_kind_patches_both_ways_and_prints_as_a_table() {
    let s = start();
    assert_eq!(
        s.send_json(
            "POST",
            "/api/v1/namespaces",
            &json!({"metadata": {"name": NS}})
        )
        .status,
        201
    );
    let mut walked = Vec::new();
    for (group, version, resource) in served(&s) {
        let plural = resource["name"].as_str().unwrap_or_default();
        let kind = resource["kind"].as_str().unwrap_or_default();
        let verbs = verbs(&resource);
        // Subresources and kinds one only creates (reviews) have no object to patch.
        if plural.contains('/') || !["create", "get", "patch"].iter().all(|v| verbs.contains(v)) {
            continue;
        }
        let Some(mut body) = sample(&group, kind) else {
            panic!(
                "{group}/{version} {kind} is served but has no sample in e2e/catalogue.rs: add one"
            );
        };
        // Versions of a group share the storage: each gets its own object.
        let name = match version.as_str() {
            "v1" => name_of(&group, kind),
            other => format!("{}-{other}", name_of(&group, kind)),
        };
        let api_version = if group.is_empty() {
            version.clone()
        } else {
            format!("{group}/{version}")
        };
        body["apiVersion"] = json!(api_version);
        body["kind"] = json!(kind);
        body["metadata"] = json!({"name": &name});
        let base = match (
            group.as_str(),
            resource["namespaced"].as_bool().unwrap_or(false),
        ) {
            ("", true) => format!("/api/v1/namespaces/{NS}/{plural}"),
            ("", false) => format!("/api/v1/{plural}"),
            (g, true) => format!("/apis/{g}/{version}/namespaces/{NS}/{plural}"),
            (g, false) => format!("/apis/{g}/{version}/{plural}"),
        };
        let created = s.send_json("POST", &base, &body);
        assert_eq!(
            created.status, 201,
            "create {api_version} {kind}: {}",
            created.body
        );
        let object = format!("{base}/{name}");

        let strategic = s.request(
            "PATCH",
            &object,
            &[("Content-Type", "application/strategic-merge-patch+json")],
            br#"{"metadata":{"labels":{"walked":"strategic"},"finalizers":["walk.example.com/keep"]}}"#,
        );
        assert_eq!(
            strategic.status, 200,
            "strategic merge patch of {kind}: {}",
            strategic.body
        );
        let patched = strategic.json();
        assert_eq!(
            patched["metadata"]["labels"]["walked"], "strategic",
            "{kind}"
        );
        let merge = s.request(
            "PATCH",
            &object,
            &[("Content-Type", "application/merge-patch+json")],
            br#"{"metadata":{"annotations":{"walked":"merge"},"finalizers":null}}"#,
        );
        assert_eq!(merge.status, 200, "merge patch of {kind}: {}", merge.body);
        let merged = merge.json();
        assert_eq!(
            merged["metadata"]["annotations"]["walked"], "merge",
            "{kind}"
        );
        assert_eq!(
            merged["metadata"]["labels"]["walked"], "strategic",
            "{kind}"
        );

        let table = s.request("GET", &object, &[("Accept", TABLE)], b"").json();
        assert_eq!(table["kind"], "Table", "{kind}: {table}");
        let columns = table["columnDefinitions"]
            .as_array()
            .map(Vec::len)
            .unwrap_or(0);
        assert!(columns > 0, "{kind}: {table}");
        let rows = table["rows"].as_array().cloned().unwrap_or_default();
        assert_eq!(rows.len(), 1, "{kind}: {table}");
        assert_eq!(
            rows[0]["cells"].as_array().map(Vec::len),
            Some(columns),
            "{kind}: {table}"
        );
        walked.push(format!("{api_version} {kind}"));
    }
    // The kinds every server has: the walk reached them all.
    for must in [
        "v1 Pod",
        "v1 Service",
        "storage.k8s.io/v1 StorageClass",
        "discovery.k8s.io/v1 EndpointSlice",
        "apps/v1 Deployment",
        "rbac.authorization.k8s.io/v1 ClusterRole",
    ] {
        assert!(
            walked.iter().any(|w| w == must),
            "{must} not walked: {walked:?}"
        );
    }
}

/// `kubectl patch` sends strategic merge patches: the two kinds whose patch metadata was once
/// missing (answered 415) take them, with a list merged by its key on the EndpointSlice.
fn kubectl_patches(s: &Server) {
    s.kubectl(&[
        "patch",
        "storageclass",
        "standard",
        "-p",
        r#"{"metadata":{"labels":{"a":"b"}}}"#,
    ]);
    let class = s.json(&["get", "storageclass", "standard"]);
    assert_eq!(class["metadata"]["labels"]["a"], "b", "{class}");
    assert_eq!(class["provisioner"], "sim.kube.io/hostpath", "{class}");

    s.with_manifest(
        "apply",
        r#"{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-1", "namespace": "default"},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
            "endpoints": [{"addresses": ["10.1.0.1"]}]}"#,
    );
    s.kubectl(&[
        "patch",
        "endpointslice",
        "web-1",
        "-p",
        r#"{"metadata":{"labels":{"a":"b"}}}"#,
    ]);
    let slice = s.json(&["get", "endpointslice", "web-1"]);
    assert_eq!(slice["metadata"]["labels"]["a"], "b", "{slice}");
    assert_eq!(slice["endpoints"][0]["addresses"][0], "10.1.0.1", "{slice}");
}

#[test]
fn kubectl_patches_storageclasses_and_endpointslices_on_embedded() {
    kubectl_patches(&start());
}

#[test]
fn kubectl_patches_storageclasses_and_endpointslices_on_etcd() {
    kubectl_patches(&support::start_on_etcd());
}
