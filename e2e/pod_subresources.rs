//! Pods' `ephemeralcontainers` and `resize` subresources through the real binary and kubectl,
//! on both backends: `kubectl debug` adds a debugging container (and nothing else of the pod
//! changes), an existing one may not be changed, a change of anything else through the
//! subresource is dropped; `kubectl patch --subresource resize` changes a container's
//! resources in place, and a resize may not change the pod's QoS class.

mod support;

use serde_json::json;
use support::{output_text, start, start_on_etcd, Kubectl, Server};

const POD: &str = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
  "spec": {"containers": [{"name": "web", "image": "nginx",
    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}}]}}"#;

fn subresources(s: &Server) {
    s.with_manifest("create", POD);
    let out = s.kubectl_raw(&["debug", "web", "-c", "dbg", "--image=busybox"]);
    assert!(out.status.success(), "{}", output_text(&out));
    let pod = s.json(&["get", "pod", "web"]);
    assert_eq!(
        pod["spec"]["ephemeralContainers"][0]["name"], "dbg",
        "{pod}"
    );
    assert_eq!(pod["spec"]["ephemeralContainers"][0]["image"], "busybox");

    // Through the subresource only ephemeral containers change, and only by additions.
    let changed = json!({"spec": {"ephemeralContainers": [{"name": "dbg", "image": "alpine"}]}});
    let out = s.kubectl_raw(&[
        "patch",
        "pod",
        "web",
        "--subresource",
        "ephemeralcontainers",
        "--type=merge",
        "-p",
        &changed.to_string(),
    ]);
    let said = output_text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(r#"existing ephemeral containers \"dbg\" may not be changed"#)
            || said.contains(r#"existing ephemeral containers "dbg" may not be changed"#),
        "{said}"
    );

    // In-place resize: requests change, the QoS class may not.
    let resize = json!({"spec": {"containers": [{"name": "web",
        "resources": {"requests": {"cpu": "200m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}}],
        "activeDeadlineSeconds": 5}});
    s.kubectl(&[
        "patch",
        "pod",
        "web",
        "--subresource",
        "resize",
        "--type=strategic",
        "-p",
        &resize.to_string(),
    ]);
    let pod = s.json(&["get", "pod", "web"]);
    assert_eq!(
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"], "200m",
        "{pod}"
    );
    assert!(pod["spec"].get("activeDeadlineSeconds").is_none(), "{pod}");
    let best_effort = json!({"spec": {"containers": [{"name": "web", "resources": null}]}});
    let out = s.kubectl_raw(&[
        "patch",
        "pod",
        "web",
        "--subresource",
        "resize",
        "--type=strategic",
        "-p",
        &best_effort.to_string(),
    ]);
    let said = output_text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("Pod QOS Class may not change as a result of resizing"),
        "{said}"
    );
}

#[test]
fn ephemeral_containers_and_resize() {
    subresources(&start());
}

#[test]
fn ephemeral_containers_and_resize_on_etcd() {
    subresources(&start_on_etcd());
}
