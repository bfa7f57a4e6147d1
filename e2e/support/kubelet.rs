//! A stand-in for the kubelet in e2e tests: a thread marking the default namespace's pods
//! Running and Ready over HTTP (PUT .../pods/NAME/status), as a kubelet would report them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::Server;

const PODS: &str = "/api/v1/namespaces/default/pods";

/// The items of a list that are not being deleted.
pub fn live(list: Value) -> Vec<Value> {
    let mut items = list["items"].as_array().cloned().unwrap_or_default();
    items.retain(|p| p["metadata"]["deletionTimestamp"].is_null());
    items
}

/// Marks pods Running and Ready until dropped, as a kubelet would report them.
pub struct Kubelet {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Kubelet {
    pub fn start(s: &Server) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, port) = (stop.clone(), s.port);
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let list = Server::send(port, "GET", PODS, &[], b"");
                if list.status != 200 {
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
                for mut pod in live(list.json()) {
                    if pod["status"]["phase"] == "Running" {
                        continue;
                    }
                    let name = pod["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    pod["status"] = json!({
                        "phase": "Running",
                        "conditions": [{"type": "Ready", "status": "True",
                                        "lastTransitionTime": registry_now()}],
                    });
                    // A pod deleted meanwhile answers 404 or 409: the next round sees it.
                    let body = serde_json::to_vec(&pod).unwrap_or_default();
                    let path = format!("{PODS}/{name}/status");
                    let json = [("Content-Type", "application/json")];
                    let _ = Server::send(port, "PUT", &path, &json, &body);
                }
                std::thread::sleep(Duration::from_millis(100));
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

fn registry_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
