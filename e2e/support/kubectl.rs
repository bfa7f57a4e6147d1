//! The real kubectl, pointed at a test server by its kubeconfig.

use std::process::{Command, Stdio};

use super::Server;

/// kubectl, pointed at the server by its kubeconfig.
pub trait Kubectl {
    /// kubectl with these arguments, pointed at the server; the caller runs it.
    fn command(&self, args: &[&str]) -> Command;
    fn kubectl(&self, args: &[&str]) -> String;
    fn kubectl_raw(&self, args: &[&str]) -> std::process::Output;
    fn with_manifest(&self, verb: &str, manifest: &str) -> String;
    fn manifest_output(&self, args: &[&str], manifest: &str) -> std::process::Output;
    fn json(&self, args: &[&str]) -> serde_json::Value;
}

impl Kubectl for Server {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = super::wrapped(&self.wrapper, "kubectl");
        command
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.dir.path());
        command
    }

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
        self.command(args)
            .output()
            .expect("run kubectl (is it installed?)")
    }

    /// `kubectl <verb> -f -` with the manifest on stdin.
    fn with_manifest(&self, verb: &str, manifest: &str) -> String {
        let out = self.manifest_output(&[verb, "-f", "-"], manifest);
        assert!(
            out.status.success(),
            "kubectl {verb} -f failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// kubectl with these arguments and the manifest on stdin, whatever the outcome.
    fn manifest_output(&self, args: &[&str], manifest: &str) -> std::process::Output {
        use std::io::Write;
        let mut child = self
            .command(args)
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
        child.wait_with_output().expect("kubectl output")
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.kubectl(&all)).expect("kubectl -o json")
    }
}
