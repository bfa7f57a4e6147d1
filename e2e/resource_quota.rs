//! ResourceQuota through the real binary and kubectl, on both backends: the quota controller
//! fills `status.hard` and `status.used`, the admission plugin charges creates and refuses
//! what passes a hard limit in upstream's words, a deleted object's share comes back
//! (replenishment), a dry run is checked but not charged, and LimitRanger's defaults run
//! before the quota's "must specify" rule, as upstream orders the plugins.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{output_text, start, start_on_etcd, Kubectl, Server};

fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn used(s: &Server, ns: &str, quota: &str) -> Value {
    s.json(&["get", "resourcequota", quota, "-n", ns])["status"]["used"].clone()
}

fn wait_used(s: &Server, ns: &str, quota: &str, expected: Value) {
    let mut last = Value::Null;
    eventually(&format!("{quota}'s usage {expected}"), || {
        last = used(s, ns, quota);
        last == expected
    });
    let _ = last;
}

fn refused(s: &Server, args: &[&str]) -> String {
    let out = s.kubectl_raw(args);
    let said = output_text(&out);
    assert!(!out.status.success(), "{args:?} should be refused: {said}");
    said
}

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: NAME, namespace: compute}
spec:
  containers:
  - name: NAME
    image: nginx
    RESOURCES
"#;

fn pod(name: &str, resources: &str) -> String {
    POD.replace("NAME", name).replace("RESOURCES", resources)
}

fn object_counts(s: &Server) {
    s.kubectl(&["create", "namespace", "team"]);
    s.kubectl(&[
        "create",
        "quota",
        "objects",
        "-n",
        "team",
        "--hard=count/deployments.apps=1,services=2",
    ]);
    // The controller fills the status: hard from spec, used counted.
    wait_used(
        s,
        "team",
        "objects",
        json!({"count/deployments.apps": "0", "services": "0"}),
    );
    let quota = s.json(&["get", "quota", "objects", "-n", "team"]);
    assert_eq!(quota["status"]["hard"], quota["spec"]["hard"], "{quota}");

    s.kubectl(&["create", "deployment", "a", "--image=nginx", "-n", "team"]);
    wait_used(
        s,
        "team",
        "objects",
        json!({"count/deployments.apps": "1", "services": "0"}),
    );
    let said = refused(
        s,
        &["create", "deployment", "b", "--image=nginx", "-n", "team"],
    );
    assert!(
        said.contains(r#"deployments.apps "b" is forbidden: exceeded quota: objects, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1"#),
        "{said}"
    );
    // A dry run is checked too.
    let said = refused(
        s,
        &[
            "create",
            "deployment",
            "b",
            "--image=nginx",
            "-n",
            "team",
            "--dry-run=server",
        ],
    );
    assert!(said.contains("exceeded quota: objects"), "{said}");

    // The deleted deployment's share comes back.
    s.kubectl(&["delete", "deployment", "a", "-n", "team"]);
    wait_used(
        s,
        "team",
        "objects",
        json!({"count/deployments.apps": "0", "services": "0"}),
    );
    // A dry run that fits is not charged.
    s.kubectl(&[
        "create",
        "deployment",
        "c",
        "--image=nginx",
        "-n",
        "team",
        "--dry-run=server",
    ]);
    assert_eq!(used(s, "team", "objects")["count/deployments.apps"], "0");
    s.kubectl(&["create", "deployment", "b", "--image=nginx", "-n", "team"]);

    // A service that becomes a load balancer is charged the difference.
    s.kubectl(&[
        "patch",
        "quota",
        "objects",
        "-n",
        "team",
        "--type=merge",
        "-p",
        r#"{"spec":{"hard":{"services.loadbalancers":"0"}}}"#,
    ]);
    wait_used(
        s,
        "team",
        "objects",
        json!({"count/deployments.apps": "1", "services": "0", "services.loadbalancers": "0"}),
    );
    s.kubectl(&[
        "create",
        "service",
        "clusterip",
        "web",
        "--tcp=80",
        "-n",
        "team",
    ]);
    let said = refused(
        s,
        &[
            "patch",
            "service",
            "web",
            "-n",
            "team",
            "-p",
            r#"{"spec":{"type":"LoadBalancer"}}"#,
        ],
    );
    assert!(
        said.contains(r#"services "web" is forbidden: exceeded quota: objects, requested: services.loadbalancers=1, used: services.loadbalancers=0, limited: services.loadbalancers=0"#),
        "{said}"
    );
}

fn compute(s: &Server) {
    s.kubectl(&["create", "namespace", "compute"]);
    s.kubectl(&[
        "create",
        "quota",
        "compute",
        "-n",
        "compute",
        "--hard=pods=2,requests.cpu=1,limits.cpu=2",
    ]);
    wait_used(
        s,
        "compute",
        "compute",
        json!({"limits.cpu": "0", "pods": "0", "requests.cpu": "0"}),
    );

    let out = s.manifest_output(&["create", "-f", "-"], &pod("bare", ""));
    let said = output_text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(r#"pods "bare" is forbidden: failed quota: compute: must specify limits.cpu for: bare; requests.cpu for: bare"#),
        "{said}"
    );

    let sized = "resources: {requests: {cpu: 600m}, limits: {cpu: '1'}}";
    s.with_manifest("create", &pod("first", sized));
    assert_eq!(
        used(s, "compute", "compute"),
        json!({"limits.cpu": "1", "pods": "1", "requests.cpu": "600m"})
    );
    let out = s.manifest_output(&["create", "-f", "-"], &pod("second", sized));
    let said = output_text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(r#"pods "second" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"#),
        "{said}"
    );

    // LimitRanger runs first: its defaults satisfy the quota's rule.
    s.with_manifest(
        "create",
        r#"
apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: compute}
spec:
  limits:
  - type: Container
    default: {cpu: 200m}
    defaultRequest: {cpu: 100m}
"#,
    );
    s.with_manifest("create", &pod("defaulted", ""));
    assert_eq!(
        used(s, "compute", "compute"),
        json!({"limits.cpu": "1200m", "pods": "2", "requests.cpu": "700m"})
    );

    // A deleted pod gives its share back.
    s.kubectl(&[
        "delete",
        "pod",
        "first",
        "-n",
        "compute",
        "--grace-period=0",
        "--force",
    ]);
    wait_used(
        s,
        "compute",
        "compute",
        json!({"limits.cpu": "200m", "pods": "1", "requests.cpu": "100m"}),
    );
}

#[test]
fn quotas_count_and_refuse() {
    let s = start();
    object_counts(&s);
    compute(&s);
}

#[test]
fn quotas_count_and_refuse_on_etcd() {
    let s = start_on_etcd();
    object_counts(&s);
    compute(&s);
}
