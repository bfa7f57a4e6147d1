//! The real kubectl against the real binary on the embedded store: discovery, Table output,
//! create / get / label / patch / delete, each checked on the state afterwards.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

struct Server {
    child: Child,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Server {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port");
    let kubeconfig = dir.path().join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_apiserver"))
        .args(["--port", &port.to_string()])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--write-kubeconfig")
        .arg(&kubeconfig)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start apiserver");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("serving") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("apiserver serving");
    Server {
        child,
        kubeconfig,
        _dir: dir,
    }
}

impl Server {
    /// Runs kubectl; returns stdout, failing the test with stderr if kubectl fails.
    fn kubectl(&self, args: &[&str]) -> String {
        let out = self.kubectl_raw(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn kubectl_raw(&self, args: &[&str]) -> std::process::Output {
        Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self._dir.path())
            .output()
            .expect("run kubectl (is it installed?)")
    }

    /// `kubectl <verb> -f -` with the manifest on stdin.
    fn with_manifest(&self, verb: &str, manifest: &str) -> String {
        use std::io::Write;
        let mut child = Command::new("kubectl")
            .args([verb, "-f", "-", "--validate=false"])
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self._dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kubectl");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(manifest.as_bytes())
            .expect("write manifest");
        let out = child.wait_with_output().expect("kubectl output");
        assert!(
            out.status.success(),
            "kubectl {verb} -f failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.kubectl(&all)).expect("kubectl -o json")
    }
}

#[test]
fn kubectl_everyday_verbs() {
    let s = start();
    let version = s.kubectl(&["version", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&version).expect("version json");
    assert_eq!(v["serverVersion"]["major"], "1");

    let resources = s.kubectl(&["api-resources"]);
    for needle in ["pods", "deployments", "configmaps", "namespaces", "leases"] {
        assert!(
            resources.contains(needle),
            "{needle} missing in api-resources:\n{resources}"
        );
    }
    assert!(
        resources
            .lines()
            .any(|l| l.starts_with("deployments") && l.contains("deploy") && l.contains("apps/v1")),
        "{resources}"
    );

    // Table output with upstream's columns.
    let namespaces = s.kubectl(&["get", "namespaces"]);
    let header: Vec<&str> = namespaces
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "STATUS", "AGE"]);
    assert!(
        namespaces.contains("kube-system") && namespaces.contains("Active"),
        "{namespaces}"
    );

    // kubectl's typed generators (`create namespace`, `create configmap`) send protobuf, which
    // is not served yet; manifests go as JSON.
    s.with_manifest(
        "create",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n",
    );
    assert_eq!(
        s.json(&["get", "namespace", "demo"])["status"]["phase"],
        "Active"
    );

    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: demo\ndata:\n  color: blue\n";
    assert!(s
        .with_manifest("create", manifest)
        .contains("configmap/settings created"));
    let cm = s.json(&["get", "configmap", "settings", "-n", "demo"]);
    assert_eq!(cm["data"]["color"], "blue");
    let table = s.kubectl(&["get", "cm", "-n", "demo"]);
    assert!(
        table
            .lines()
            .next()
            .is_some_and(|h| h.split_whitespace().collect::<Vec<_>>() == ["NAME", "DATA", "AGE"]),
        "{table}"
    );
    assert!(table.contains("settings"), "{table}");
    assert_eq!(
        s.kubectl(&["get", "cm", "settings", "-n", "demo", "-o", "name"])
            .trim(),
        "configmap/settings"
    );
    assert_eq!(
        s.kubectl(&[
            "get",
            "cm",
            "settings",
            "-n",
            "demo",
            "-o",
            "jsonpath={.data.color}"
        ]),
        "blue"
    );

    s.kubectl(&[
        "label",
        "configmap",
        "settings",
        "-n",
        "demo",
        "tier=backend",
    ]);
    s.kubectl(&[
        "annotate",
        "configmap",
        "settings",
        "-n",
        "demo",
        "owner=team-a",
    ]);
    s.kubectl(&[
        "patch",
        "configmap",
        "settings",
        "-n",
        "demo",
        "--type=merge",
        "-p",
        r#"{"data":{"size":"L"}}"#,
    ]);
    s.kubectl(&[
        "patch",
        "configmap",
        "settings",
        "-n",
        "demo",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/data/color","value":"red"}]"#,
    ]);
    let cm = s.json(&["get", "configmap", "settings", "-n", "demo"]);
    assert_eq!(cm["metadata"]["labels"]["tier"], "backend");
    assert_eq!(cm["metadata"]["annotations"]["owner"], "team-a");
    assert_eq!(cm["data"]["size"], "L");
    assert_eq!(cm["data"]["color"], "red");
    let selected = s.kubectl(&[
        "get",
        "cm",
        "-n",
        "demo",
        "-l",
        "tier=backend",
        "-o",
        "name",
    ]);
    assert_eq!(selected.trim(), "configmap/settings");

    // A missing object is a NotFound kubectl reports as such.
    let missing = s.kubectl_raw(&["get", "configmap", "nope", "-n", "demo"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("configmaps \"nope\" not found"));

    // apply on top: the last-applied annotation is recorded, the change merged.
    let applied = manifest.replace("color: blue", "color: green");
    s.with_manifest("apply", &applied);
    let cm = s.json(&["get", "configmap", "settings", "-n", "demo"]);
    assert_eq!(cm["data"]["color"], "green");
    assert!(
        cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string()
    );

    s.kubectl(&["delete", "configmap", "settings", "-n", "demo"]);
    let gone = s.kubectl_raw(&["get", "configmap", "settings", "-n", "demo"]);
    assert!(!gone.status.success());
}
