//! Events with the real kubectl: one written in the core/v1 shape shows in `kubectl get
//! events`, in `kubectl events` and in `kubectl describe` of the object it is about, and it
//! expires after `--event-ttl`.

mod support;

use std::time::Duration;

use support::{start_with_args, Kubectl, Server};
use test_support::{wait_until, EtcdServer};

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers: [{name: c, image: nginx}]
"#;

fn event(uid: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: Event
metadata: {{name: web.started, namespace: default}}
involvedObject: {{kind: Pod, name: web, namespace: default, uid: "{uid}", apiVersion: v1}}
reason: PulledImage
message: pulled the image for the e2e test
type: Normal
source: {{component: kubelet, host: node-1}}
firstTimestamp: "2024-01-01T00:00:00Z"
lastTimestamp: "2024-01-01T00:00:00Z"
count: 1
"#
    )
}

#[test]
fn kubectl_shows_core_events_in_both_apis_until_they_expire() {
    let s = start_with_args(None, None, &["--event-ttl=8s"]);
    shows_and_expires(&s);
}

#[test]
fn kubectl_shows_core_events_in_both_apis_until_they_expire_on_etcd() {
    let etcd = EtcdServer::start_blocking();
    let endpoint = etcd.endpoint();
    let s = start_with_args(Some(etcd), Some(endpoint), &["--event-ttl=8s"]);
    shows_and_expires(&s);
}

fn shows_and_expires(s: &Server) {
    s.with_manifest("create", POD);
    let uid = s.json(&["get", "pod", "web", "-n", "default"])["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!uid.is_empty());
    assert!(s
        .with_manifest("create", &event(&uid))
        .contains("event/web.started created"));

    let listed = s.kubectl(&["get", "events", "-n", "default"]);
    assert!(
        listed.contains("PulledImage") && listed.contains("pod/web"),
        "{listed}"
    );
    // `kubectl events` and the events.k8s.io/v1 API see the same event.
    let events = s.kubectl(&["events", "-n", "default", "--for", "pod/web"]);
    assert!(
        events.contains("PulledImage") && events.contains("pulled the image"),
        "{events}"
    );
    let v1 = s.json(&[
        "get",
        "events.v1.events.k8s.io",
        "web.started",
        "-n",
        "default",
    ]);
    assert_eq!(v1["regarding"]["uid"], uid.as_str());
    assert_eq!(v1["note"], "pulled the image for the e2e test");
    // describe selects the pod's events by involvedObject name, namespace and uid.
    let described = s.kubectl(&["describe", "pod", "web", "-n", "default"]);
    let section = described.split("Events:").nth(1).unwrap_or_default();
    assert!(
        section.contains("PulledImage") && section.contains("pulled the image"),
        "{described}"
    );

    wait_until("the event expired", Duration::from_secs(30), || {
        !s.kubectl(&["get", "events", "-n", "default"])
            .contains("PulledImage")
    });
    // The pod does not expire.
    assert_eq!(
        s.json(&["get", "pod", "web", "-n", "default"])["metadata"]["uid"],
        uid.as_str()
    );
}
