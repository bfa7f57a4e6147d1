//! A stand-in for the kubelet, for tests that need pods to become ready at a pace they set
//! (the server then runs with `NO_NODES`): a thread that reports the pods of the default
//! namespace Running and Ready over HTTP, as a kubelet writes pod status, each with a pod IP
//! of its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::Server;

pub const PODS: &str = "/api/v1/namespaces/default/pods";

/// The items of a list that are not being deleted.
pub fn live(list: Value) -> Vec<Value> {
    let mut items = list["items"].as_array().cloned().unwrap_or_default();
    items.retain(|p| p["metadata"]["deletionTimestamp"].is_null());
    items
}

/// Marks pods Running and Ready until dropped.
pub struct Kubelet {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Kubelet {
    /// At most one pod is reported ready per `interval`, so that a rollout takes steps a test
    /// can act between. Keeps going across restarts of the server on the same port.
    pub fn paced(s: &Server, interval: Duration) -> Self {
        let port = s.port;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            // Pod IPs handed out so far: each pod gets the next one.
            let mut addresses = 0u32;
            while !flag.load(Ordering::Relaxed) {
                let list = Server::send(port, "GET", PODS, &[], b"");
                if list.status == 200 {
                    if let Some(pod) = not_running(list.json()).into_iter().next() {
                        addresses += 1;
                        report_ready(port, pod, addresses);
                    }
                }
                std::thread::sleep(interval);
            }
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Live pods not reported running yet, oldest first.
fn not_running(list: Value) -> Vec<Value> {
    let mut items = list["items"].as_array().cloned().unwrap_or_default();
    items.retain(|p| {
        p["metadata"]["deletionTimestamp"].is_null() && p["status"]["phase"] != "Running"
    });
    items.sort_by(|a, b| {
        let created = |p: &Value| {
            p["metadata"]["creationTimestamp"]
                .as_str()
                .map(str::to_string)
        };
        created(a).cmp(&created(b))
    });
    items
}

/// The `n`th pod IP, in 10.244.0.0/16.
pub fn pod_ip(n: u32) -> String {
    format!("10.244.{}.{}", n / 250, n % 250 + 2)
}

fn report_ready(port: u16, mut pod: Value, n: u32) {
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let ip = pod_ip(n);
    pod["status"] = json!({
        "phase": "Running",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "hostIP": "127.0.0.1",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
    });
    // A pod deleted meanwhile answers 404 or 409: the next round sees it.
    let body = serde_json::to_vec(&pod).unwrap_or_default();
    let path = format!("{PODS}/{name}/status");
    let json = [("Content-Type", "application/json")];
    let _ = Server::send(port, "PUT", &path, &json, &body);
}
