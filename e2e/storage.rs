//! Storage through the real binary and the real kubectl, on the embedded store and on etcd:
//! the default StorageClass `standard` is there from the start, a StatefulSet with a
//! volumeClaimTemplate runs (its claims provisioned and bound by the simulated provisioner,
//! its pods scheduled only once they are), and a deleted claim takes its volume with it.

mod support;

use std::time::Duration;

use support::{start_with_args, Kubectl, Server};
use test_support::{wait_until, EtcdServer};

const LONG: Duration = Duration::from_secs(60);
const NODE_SIDE: [&str; 3] = ["--nodes", "2", "--scheduler"];

const STATEFULSET: &str = r#"
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: postgres
        volumeMounts: [{name: data, mountPath: /var/lib/postgresql}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
"#;

fn storage(s: &Server) {
    let classes = s.kubectl(&["get", "storageclass"]);
    assert!(classes.contains("standard (default)"), "{classes}");
    assert!(classes.contains("sim.kube.io/hostpath"), "{classes}");
    assert!(
        classes.contains("Delete") && classes.contains("Immediate"),
        "{classes}"
    );

    s.with_manifest("apply", STATEFULSET);
    let out = s.kubectl(&["rollout", "status", "statefulset/db", "--timeout=60s"]);
    assert!(
        out.contains("2 pods ready") || out.contains("complete"),
        "{out}"
    );
    let sts = s.json(&["get", "statefulset", "db"]);
    assert_eq!(sts["status"]["readyReplicas"], 2, "{sts}");

    for ordinal in 0..2 {
        let name = format!("data-db-{ordinal}");
        let claim = s.json(&["get", "pvc", &name]);
        assert_eq!(claim["status"]["phase"], "Bound", "{claim}");
        assert_eq!(claim["spec"]["storageClassName"], "standard", "{claim}");
        let volume_name = claim["spec"]["volumeName"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let uid = claim["metadata"]["uid"].as_str().unwrap_or_default();
        assert_eq!(volume_name, format!("pvc-{uid}"));
        let volume = s.json(&["get", "pv", &volume_name]);
        assert_eq!(volume["status"]["phase"], "Bound", "{volume}");
        assert_eq!(
            volume["spec"]["claimRef"]["name"],
            name.as_str(),
            "{volume}"
        );
        assert_eq!(volume["spec"]["capacity"]["storage"], "1Gi", "{volume}");
    }
    let listed = s.kubectl(&["get", "pvc"]);
    assert!(
        listed.contains("Bound") && listed.contains("standard"),
        "{listed}"
    );
    let described = s.kubectl(&["describe", "pvc", "data-db-0"]);
    assert!(described.contains("ProvisioningSucceeded"), "{described}");

    // The StatefulSet goes first (its claims stay, as upstream's Retain default keeps them);
    // then a claim deleted takes its Delete-policy volume with it.
    let volume = s.json(&["get", "pvc", "data-db-1"])["spec"]["volumeName"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    s.kubectl(&[
        "delete",
        "statefulset",
        "db",
        "--wait=true",
        "--timeout=60s",
    ]);
    s.kubectl(&["delete", "pvc", "data-db-1", "--timeout=60s"]);
    wait_until("the claim's volume deleted", LONG, || {
        !s.kubectl_raw(&["get", "pv", &volume]).status.success()
    });
    let left = s.kubectl(&["get", "pv"]);
    assert!(
        left.contains("data-db-0") && !left.contains("data-db-1"),
        "{left}"
    );
}

#[test]
fn statefulset_volumes_on_embedded() {
    storage(&start_with_args(None, None, &NODE_SIDE));
}

#[test]
fn statefulset_volumes_on_etcd() {
    let etcd = EtcdServer::start_blocking();
    let endpoint = etcd.endpoint();
    storage(&start_with_args(Some(etcd), Some(endpoint), &NODE_SIDE));
}

const CSI_KINDS: &str = r#"
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: csi.example.com}
spec:
  tokenRequests: [{audience: vault}]
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: attach-1}
spec:
  attacher: csi.example.com
  nodeName: node-1
  source: {persistentVolumeName: pv-1}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata: {name: gold}
driverName: csi.example.com
parameters: {iops: "3000"}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: fast-zone-a}
storageClassName: fast
capacity: 100Gi
nodeTopology: {matchLabels: {zone: a}}
"#;

/// The CSI kinds through kubectl: upstream's defaults, columns and immutability.
fn csi_kinds(s: &Server) {
    s.with_manifest("apply", CSI_KINDS);
    let driver = s.json(&["get", "csidriver", "csi.example.com"]);
    assert_eq!(driver["spec"]["attachRequired"], true, "{driver}");
    assert_eq!(
        driver["spec"]["volumeLifecycleModes"],
        serde_json::json!(["Persistent"]),
        "{driver}"
    );
    let drivers = s.kubectl(&["get", "csidrivers"]);
    for cell in ["ATTACHREQUIRED", "TOKENREQUESTS", "vault", "Persistent"] {
        assert!(drivers.contains(cell), "{cell}: {drivers}");
    }
    let attachments = s.kubectl(&["get", "volumeattachments"]);
    assert!(
        attachments.contains("pv-1") && attachments.contains("node-1"),
        "{attachments}"
    );
    let moved = s.kubectl_raw(&[
        "patch",
        "volumeattachment",
        "attach-1",
        "--type=merge",
        "-p",
        r#"{"spec":{"nodeName":"node-2"}}"#,
    ]);
    let err = String::from_utf8_lossy(&moved.stderr);
    assert!(
        !moved.status.success() && err.contains("spec: Invalid value"),
        "{err}"
    );
    assert!(err.contains("field is immutable"), "{err}");
    // The attacher reports through the status subresource.
    s.kubectl(&[
        "patch",
        "volumeattachment",
        "attach-1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"attached":true}}"#,
    ]);
    assert!(s
        .kubectl(&["get", "volumeattachment", "attach-1"])
        .contains("true"));
    assert!(s.kubectl(&["get", "vac"]).contains("csi.example.com"));
    let changed = s.kubectl_raw(&[
        "patch",
        "vac",
        "gold",
        "--type=merge",
        "-p",
        r#"{"parameters":{"iops":"9000"}}"#,
    ]);
    let err = String::from_utf8_lossy(&changed.stderr);
    assert!(
        err.contains("parameters: Forbidden: updates to parameters are forbidden."),
        "{err}"
    );
    assert!(s
        .kubectl(&["get", "csistoragecapacities"])
        .contains("100Gi"));
}

#[test]
fn csi_kinds_on_embedded() {
    csi_kinds(&support::start());
}

#[test]
fn csi_kinds_on_etcd() {
    csi_kinds(&support::start_on_etcd());
}

/// StorageObjectInUseProtection: claims and volumes carry their protection finalizers; a claim
/// a scheduled pod uses stays Terminating until the pod goes, and an unbound volume goes at
/// once.
fn protection(s: &Server) {
    s.with_manifest(
        "apply",
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: kept}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n",
    );
    let claim = s.json(&["get", "pvc", "kept"]);
    assert_eq!(
        claim["metadata"]["finalizers"],
        serde_json::json!(["kubernetes.io/pvc-protection"])
    );
    s.with_manifest(
        "apply",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: user}\nspec:\n  containers: [{name: c, image: nginx, volumeMounts: [{name: d, mountPath: /d}]}]\n  volumes: [{name: d, persistentVolumeClaim: {claimName: kept}}]\n",
    );
    wait_until("the pod scheduled", LONG, || {
        !s.kubectl(&["get", "pod", "user", "-o", "jsonpath={.spec.nodeName}"])
            .is_empty()
    });
    s.kubectl(&["delete", "pvc", "kept", "--wait=false"]);
    std::thread::sleep(Duration::from_millis(500));
    let terminating = s.kubectl(&["get", "pvc", "kept"]);
    assert!(terminating.contains("Terminating"), "{terminating}");
    s.kubectl(&["delete", "pod", "user", "--grace-period=0", "--force"]);
    wait_until("the claim released", LONG, || {
        !s.kubectl_raw(&["get", "pvc", "kept"]).status.success()
    });

    s.with_manifest(
        "apply",
        "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: spare}\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  storageClassName: manual\n  hostPath: {path: /tmp/spare}\n",
    );
    let volume = s.json(&["get", "pv", "spare"]);
    assert_eq!(
        volume["metadata"]["finalizers"],
        serde_json::json!(["kubernetes.io/pv-protection"])
    );
    s.kubectl(&["delete", "pv", "spare", "--timeout=30s"]);
}

#[test]
fn protection_on_embedded() {
    let s = start_with_args(None, None, &NODE_SIDE);
    protection(&s);
}
