//! The kubelet's CNI plugin (seed 001) with a fake plugin script: a plugin whose ADD fails
//! with a CNI error leaves the pod Pending with FailedCreatePodSandBox events carrying the
//! plugin's message, tried again and again; once the plugin succeeds the pod runs with the
//! IP of its result, in a network namespace of its own that DEL and removal clean up.
//! Creating namespaces needs root: without it the test says so and passes.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use kubelet::network::NetworkPluginSettings;
use registry::options::{DeleteOptions, ListOptions};
use serde_json::{json, Value};
use support::{config, start, Harness, NS};

const PLUGIN_MSG: &str = "failed to allocate for range 0: no IP addresses available in range set";

/// Writes the plugin `name` into `bin`, replacing it whole (a rename, so a run in progress
/// keeps the old file).
fn install(bin: &Path, name: &str, body: &str) {
    let tmp = bin.join(format!(".{name}.new"));
    std::fs::write(&tmp, format!("#!/bin/sh\n{body}\n")).expect("write plugin");
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::rename(&tmp, bin.join(name)).expect("install plugin");
}

/// Logs every call as `COMMAND netns-present CNI_NETNS CNI_ARGS` to `calls`.
fn logging(calls: &Path) -> String {
    format!(
        r#"conf=$(cat)
present=no; [ -e "$CNI_NETNS" ] && present=yes
echo "$CNI_COMMAND $present $CNI_NETNS $CNI_ARGS" >> {}"#,
        calls.display()
    )
}

fn failing(calls: &Path) -> String {
    format!(
        r#"{}
if [ "$CNI_COMMAND" = ADD ]; then
  echo '{{"cniVersion": "1.0.0", "code": 11, "msg": "{PLUGIN_MSG}", "details": "range 10.244.0.0/24"}}'
  exit 1
fi"#,
        logging(calls)
    )
}

fn succeeding(calls: &Path) -> String {
    format!(
        r#"{}
if [ "$CNI_COMMAND" = ADD ]; then
  echo '{{"cniVersion": "1.0.0", "interfaces": [{{"name": "eth0", "sandbox": "'"$CNI_NETNS"'"}}], "ips": [{{"address": "10.244.0.77/24", "interface": 0}}]}}'
fi"#,
        logging(calls)
    )
}

fn calls(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

async fn pod(h: &Harness) -> Option<Value> {
    support::get(h, "web").await
}

async fn wait_for<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn sandbox_events(h: &Harness) -> Vec<Value> {
    let events = h
        .store("", "events")
        .list(Some(NS), &ListOptions::default())
        .await
        .expect("list events");
    events["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e["involvedObject"]["name"] == "web" && e["reason"] == "FailedCreatePodSandBox")
        .collect()
}

async fn failed_add_is_retried_then_the_pod_runs(h: &Harness) {
    if let Err(why) = kubelet::network::cni::netns::can_create() {
        eprintln!("skipped: {why}");
        return;
    }
    let conf = tempfile::tempdir().expect("conf dir");
    let bin = tempfile::tempdir().expect("bin dir");
    let netns = tempfile::tempdir().expect("netns dir");
    let log = bin.path().join("calls.log");
    std::fs::write(
        conf.path().join("10-fake.conflist"),
        r#"{"cniVersion": "1.0.0", "name": "fake-net", "plugins": [{"type": "fakecni"}]}"#,
    )
    .expect("write conf");
    install(
        bin.path(),
        "loopback",
        r#"cat >/dev/null; [ "$CNI_COMMAND" = ADD ] && echo '{"cniVersion": "0.3.1", "interfaces": [{"name": "lo"}]}'; exit 0"#,
    );
    install(bin.path(), "fakecni", &failing(&log));
    let mut cfg = config(1);
    cfg.network = NetworkPluginSettings {
        conf_dir: conf.path().to_path_buf(),
        bin_dirs: vec![bin.path().to_path_buf()],
        netns_dir: netns.path().to_path_buf(),
    };
    let _stop = start(h, cfg);
    support::create(h, "web", json!({})).await;

    // Failures: Warning events with the plugin's message, and more than one attempt.
    let events = wait_for("FailedCreatePodSandBox events", async || {
        let adds = calls(&log).iter().filter(|c| c.starts_with("ADD")).count();
        let events = sandbox_events(h).await;
        (adds >= 3 && !events.is_empty()).then_some(events)
    })
    .await;
    let event = &events[0];
    assert_eq!(event["type"], "Warning");
    let message = event["message"].as_str().unwrap_or_default();
    assert!(message.contains(PLUGIN_MSG), "{message}");
    assert!(message.contains("range 10.244.0.0/24"), "{message}");
    assert!(message.contains(r#"type="fakecni""#), "{message}");
    let log_lines = calls(&log);
    let add = log_lines
        .iter()
        .find(|c| c.starts_with("ADD"))
        .expect("an ADD");
    assert!(
        add.starts_with("ADD yes "),
        "the namespace exists during ADD: {add}"
    );
    for arg in [
        "IgnoreUnknown=1",
        "K8S_POD_NAMESPACE=default",
        "K8S_POD_NAME=web",
        "K8S_POD_INFRA_CONTAINER_ID=",
        "K8S_POD_UID=",
    ] {
        assert!(add.contains(arg), "{arg} in {add}");
    }
    // Each failed ADD is cleaned up with a DEL, as the runtime does.
    assert!(
        log_lines.iter().any(|c| c.starts_with("DEL")),
        "{log_lines:?}"
    );
    let pending = pod(h).await.expect("the pod is not lost");
    assert_eq!(pending["status"]["phase"], "Pending");
    assert!(pending["status"]["podIP"].is_null());

    // The plugin works now: the next attempt runs the pod with the result's IP.
    install(bin.path(), "fakecni", &succeeding(&log));
    let running = wait_for("the pod to run", async || {
        pod(h).await.filter(|p| p["status"]["phase"] == "Running")
    })
    .await;
    assert_eq!(running["status"]["podIP"], "10.244.0.77");
    let pinned: Vec<_> = std::fs::read_dir(netns.path())
        .expect("netns dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(pinned.len(), 1, "{pinned:?}");
    assert!(pinned[0].starts_with("cni-"), "{pinned:?}");

    // Deletion: DEL with the pod's namespace, which is gone afterwards.
    h.store("", "pods")
        .delete(Some(NS), "web", DeleteOptions::default())
        .await
        .expect("delete");
    wait_for("the pod to be gone", async || {
        pod(h).await.is_none().then_some(())
    })
    .await;
    let last = calls(&log).last().cloned().unwrap_or_default();
    assert!(last.starts_with("DEL yes "), "{last}");
    assert!(last.contains(&pinned[0]), "{last}");
    wait_for("the namespace to be removed", async || {
        std::fs::read_dir(netns.path())
            .ok()?
            .next()
            .is_none()
            .then_some(())
    })
    .await;
}

test_support::both_backends!(crate::support::Harness; failed_add_is_retried_then_the_pod_runs);
