//! Running one plugin binary (libcni's `invoke.ExecPluginWithResult`): the command and the
//! runtime's arguments as CNI_* environment, the network config on stdin, the result or the
//! error JSON on stdout; a plugin that outlives the timeout is killed.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::result::error_message;

/// The runtime's side of one call (libcni's RuntimeConf and invoke.Args).
pub struct Invocation<'a> {
    pub command: &'static str,
    pub container_id: &'a str,
    pub netns: &'a Path,
    pub ifname: &'a str,
    /// CNI_ARGS: `KEY=value` pairs joined by `;`.
    pub args: &'a str,
    pub bin_dirs: &'a [PathBuf],
}

impl Invocation<'_> {
    fn env(&self) -> Vec<(&'static str, String)> {
        let path = self
            .bin_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(":");
        vec![
            ("CNI_COMMAND", self.command.to_string()),
            ("CNI_CONTAINERID", self.container_id.to_string()),
            ("CNI_NETNS", self.netns.display().to_string()),
            ("CNI_IFNAME", self.ifname.to_string()),
            ("CNI_ARGS", self.args.to_string()),
            ("CNI_PATH", path),
        ]
    }
}

/// Runs `plugin` with `conf` on stdin; its stdout when it exits 0, else the message of its
/// error.
pub async fn exec_plugin(
    plugin: &Path,
    conf: &[u8],
    call: &Invocation<'_>,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let mut child = Command::new(plugin)
        .envs(call.env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("failed to run {}: {e}", plugin.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A plugin may exit without reading its config; its exit status tells what happened.
        let _ = stdin.write_all(conf).await;
    }
    let output = match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => return Err(format!("failed to wait for {}: {e}", plugin.display())),
        Err(_) => {
            return Err(format!(
                "{} did not finish within {}s",
                plugin.display(),
                timeout.as_secs()
            ))
        }
    };
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(error_message(&output.stdout, &output.stderr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, body: &str) -> PathBuf {
        let path = dir.join("fake");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn call<'a>(netns: &'a Path, bin: &'a [PathBuf]) -> Invocation<'a> {
        Invocation {
            command: "ADD",
            container_id: "abc",
            netns,
            ifname: "eth0",
            args: "IgnoreUnknown=1;K8S_POD_NAME=web",
            bin_dirs: bin,
        }
    }

    #[tokio::test]
    async fn passes_the_environment_and_stdin() {
        let dir = tempfile::tempdir().unwrap();
        let plugin = script(
            dir.path(),
            r#"conf=$(cat); printf '%s|%s|%s|%s|%s|%s|%s' "$CNI_COMMAND" "$CNI_CONTAINERID" "$CNI_NETNS" "$CNI_IFNAME" "$CNI_ARGS" "$CNI_PATH" "$conf""#,
        );
        let bins = [PathBuf::from("/a"), PathBuf::from("/b")];
        let out = exec_plugin(
            &plugin,
            b"{\"x\":1}",
            &call(Path::new("/var/run/netns/cni-abc"), &bins),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "ADD|abc|/var/run/netns/cni-abc|eth0|IgnoreUnknown=1;K8S_POD_NAME=web|/a:/b|{\"x\":1}"
        );
    }

    #[tokio::test]
    async fn failures_give_the_error_message() {
        let dir = tempfile::tempdir().unwrap();
        let plugin = script(
            dir.path(),
            r#"echo '{"code": 11, "msg": "no addresses", "details": "range full"}'; exit 1"#,
        );
        let err = exec_plugin(
            &plugin,
            b"{}",
            &call(Path::new("/x"), &[]),
            Duration::from_secs(10),
        )
        .await
        .unwrap_err();
        assert_eq!(err, "no addresses; range full");
        let slow = script(dir.path(), "sleep 30");
        let err = exec_plugin(
            &slow,
            b"{}",
            &call(Path::new("/x"), &[]),
            Duration::from_millis(300),
        )
        .await
        .unwrap_err();
        assert!(err.contains("did not finish"), "{err}");
    }
}
