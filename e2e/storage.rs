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
