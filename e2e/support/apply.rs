//! Server-side apply requests for the e2e tests: `kubectl apply --server-side` and apply
//! PATCHes over plain HTTP, and the Status of a refused one.

use std::process::Output;

use serde_json::Value;

use super::managed::with_managed_fields;
use super::{Kubectl, Response, Server};

pub const APPLY: &str = "application/apply-patch+yaml";

/// `kubectl apply --server-side -f -` with the manifest on stdin, whatever the outcome.
pub fn ssa(s: &Server, manifest: &str, extra: &[&str]) -> Output {
    let mut args = vec!["apply", "--server-side", "-f", "-"];
    args.extend(extra);
    s.manifest_output(&args, manifest)
}

/// [`ssa`] that must succeed; returns stdout.
pub fn ssa_ok(s: &Server, manifest: &str, extra: &[&str]) -> String {
    let out = ssa(s, manifest, extra);
    assert!(
        out.status.success(),
        "kubectl apply --server-side {extra:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// [`ssa`] that must fail; returns stderr.
pub fn ssa_err(s: &Server, manifest: &str, extra: &[&str]) -> String {
    let out = ssa(s, manifest, extra);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "kubectl apply --server-side {extra:?} should have failed: {}{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

/// An apply PATCH over plain HTTP (`query` without the `?`).
pub fn apply_http(s: &Server, path: &str, query: &str, body: &str) -> Response {
    let target = if query.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{query}")
    };
    s.request(
        "PATCH",
        &target,
        &[("Content-Type", APPLY), ("Accept", "application/json")],
        body.as_bytes(),
    )
}

/// The metav1.Status of a failed response, checked to carry `code`.
pub fn failure(r: &Response, code: u16) -> Value {
    assert_eq!(r.status, code, "{}", r.body);
    let status = r.json();
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["status"], "Failure", "{status}");
    assert_eq!(status["code"], code, "{status}");
    status
}

pub fn cm(s: &Server, name: &str) -> Value {
    with_managed_fields(s, &["get", "configmap", name])
}

pub fn rv(obj: &Value) -> String {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub const SETTINGS: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels:
    team: a
data:
  color: blue
  size: L
";
