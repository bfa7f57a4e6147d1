//! Starting the real binary on the embedded store, and a plain HTTP/1.1 client for it.

#![allow(dead_code)]

/// A real aggregated API server (the sample `wardle` group) behind the front proxy.
pub mod aggregated_server;
/// Server-side apply requests.
pub mod apply;
/// A kept-alive HTTPS client with a bearer token.
mod kubectl;
mod kubelet;
/// Reading managedFields (server-side apply) as kubectl shows them.
pub mod managed;
/// Token users and curl on the secure port.
pub mod secure;
/// A real HTTPS server for admission webhooks.
pub mod webhook_server;

#[allow(unused_imports)]
pub use kubectl::Kubectl;
#[allow(unused_imports)]
pub use kubelet::{live, Kubelet, PODS};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use test_support::{free_port, EtcdServer};

pub struct Server {
    /// Kept for the server's lifetime when it runs on etcd.
    pub etcd: Option<EtcdServer>,
    pub child: Child,
    /// The loopback plain-HTTP port (trusted, no authentication): what `request` uses.
    pub port: u16,
    /// The HTTPS port; the written kubeconfig (and so kubectl) uses it, verifying the
    /// server against the generated CA with the admin client certificate.
    pub secure_port: u16,
    /// The kubeconfig the server wrote.
    pub kubeconfig: PathBuf,
    pub dir: tempfile::TempDir,
    /// The log line that said the server is serving (carries `startup_ms=`).
    pub serving_line: String,
    /// Every line the server logged so far (across restarts).
    pub logs: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// The binary's arguments, to start it again on the same port and data.
    command_line: Vec<String>,
    /// A command the binary and kubectl run under (`ip netns exec NS`); empty for none.
    pub wrapper: Vec<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server on the embedded store.
pub fn start() -> Server {
    start_with(None)
}

/// The server on a real etcd (started here, stopped with the server).
pub fn start_on_etcd() -> Server {
    start_with(Some(EtcdServer::start_blocking()))
}

fn start_with(etcd: Option<EtcdServer>) -> Server {
    let endpoint = etcd.as_ref().map(|e| e.endpoint());
    start_with_args(etcd, endpoint, &[])
}

/// The server on the embedded store with extra flags.
pub fn start_embedded_with(args: &[&str]) -> Server {
    start_with_args(None, None, args)
}

/// The server on a real etcd with extra flags.
pub fn start_on_etcd_with(args: &[&str]) -> Server {
    let etcd = EtcdServer::start_blocking();
    let endpoint = etcd.endpoint();
    start_with_args(Some(etcd), Some(endpoint), args)
}

/// For tests that play the kubelet (and the scheduler) themselves: no node, no scheduler.
pub const NO_NODES: [&str; 3] = ["--nodes", "0", "--scheduler=false"];

/// Short leader leases, so that a restarted server or a survivor does not wait 15 s for its
/// predecessor's lease.
pub const FAST_ELECTION: [&str; 3] = [
    "--leader-elect-lease-duration=2s",
    "--leader-elect-renew-deadline=1500ms",
    "--leader-elect-retry-period=200ms",
];

/// A server with extra flags; on `etcd_endpoint` when given (several servers may share one
/// etcd, the first keeping it alive in `etcd`).
pub fn start_with_args(
    etcd: Option<EtcdServer>,
    etcd_endpoint: Option<String>,
    args: &[&str],
) -> Server {
    start_wrapped(&[], etcd, etcd_endpoint, args)
}

/// A server run under `wrapper` (as `ip netns exec NS`), which kubectl then runs under too.
pub fn start_wrapped(
    wrapper: &[&str],
    etcd: Option<EtcdServer>,
    etcd_endpoint: Option<String>,
    args: &[&str],
) -> Server {
    let dir = tempfile::tempdir().expect("temp dir");
    start_in(dir, wrapper, etcd, etcd_endpoint, args)
}

/// The server on the embedded store in `dir`, whose `data` the caller may have prepared (a
/// small filesystem mounted there, say).
pub fn start_embedded_in(dir: tempfile::TempDir, args: &[&str]) -> Server {
    start_in(dir, &[], None, None, args)
}

fn start_in(
    dir: tempfile::TempDir,
    wrapper: &[&str],
    etcd: Option<EtcdServer>,
    etcd_endpoint: Option<String>,
    args: &[&str],
) -> Server {
    let wrapper: Vec<String> = wrapper.iter().map(|w| w.to_string()).collect();
    let kubeconfig = dir.path().join("kubeconfig");
    // Free ports of our own unless the caller names them (a port given twice is refused).
    let given = |flag: &str| {
        let with_eq = format!("{flag}=");
        args.iter().enumerate().find_map(|(i, a)| {
            if *a == flag {
                args.get(i + 1).and_then(|v| v.parse::<u16>().ok())
            } else {
                a.strip_prefix(with_eq.as_str())
                    .and_then(|v| v.parse().ok())
            }
        })
    };
    // A port found free may be taken before the server binds it (another test, an etcd):
    // the start is tried again on new ports then.
    let mut attempt = 0;
    let (port, secure_port, command_line, child, serving_line, logs) = loop {
        attempt += 1;
        let mut command_line: Vec<String> = Vec::new();
        let port = given("--port").unwrap_or_else(|| {
            let port = free_port();
            command_line.extend(["--port".into(), port.to_string()]);
            port
        });
        let secure_port = given("--secure-port").unwrap_or_else(|| {
            let secure = std::iter::repeat_with(free_port)
                .find(|p| *p != port)
                .expect("a second free port");
            command_line.extend(["--secure-port".into(), secure.to_string()]);
            secure
        });
        command_line.push("--data-dir".into());
        command_line.push(dir.path().join("data").display().to_string());
        command_line.push("--write-kubeconfig".into());
        command_line.push(kubeconfig.display().to_string());
        command_line.extend(etcd_endpoint.iter().map(|e| format!("--etcd-servers={e}")));
        command_line.extend(args.iter().map(|a| a.to_string()));
        let logs = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        match spawn(&wrapper, &command_line, &logs) {
            Ok((child, serving_line)) => {
                break (port, secure_port, command_line, child, serving_line, logs)
            }
            Err(said) if attempt < 3 && said.contains("in use") => continue,
            Err(said) => panic!("apiserver did not serve: {said}"),
        }
    };
    Server {
        etcd,
        child,
        port,
        secure_port,
        kubeconfig,
        dir,
        serving_line,
        logs,
        command_line,
        wrapper,
    }
}

/// `program` run under `wrapper` (or alone when it is empty).
pub fn wrapped(wrapper: &[String], program: &str) -> Command {
    match wrapper.split_first() {
        Some((first, rest)) => {
            let mut command = Command::new(first);
            command.args(rest).arg(program);
            command
        }
        None => Command::new(program),
    }
}

/// Runs the binary with `args`, its log lines appended to `logs`; returns once it serves.
fn spawn(
    wrapper: &[String],
    args: &[String],
    logs: &std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) -> Result<(Child, String), String> {
    let mut child = wrapped(wrapper, env!("CARGO_BIN_EXE_apiserver"))
        .args(args)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start apiserver");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    let kept = logs.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // The start's own line (text or JSON), not any line that mentions serving.
            let serving = line.contains(": serving") || line.contains("\"serving\"");
            if serving && line.contains("startup_ms") {
                let _ = tx.send(line.clone());
            }
            if let Ok(mut logs) = kept.lock() {
                logs.push(line);
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(serving_line) => Ok((child, serving_line)),
        // It exited, or hangs: what it said instead.
        Err(why) => {
            let _ = child.kill();
            let _ = child.wait();
            let said = logs.lock().map(|l| l.join("\n")).unwrap_or_default();
            Err(format!("{why}: {said}"))
        }
    }
}

pub struct Response {
    pub status: u16,
    pub headers: String,
    pub body: String,
}

impl Response {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

impl Server {
    /// One request on a fresh connection; reads the whole response (chunked bodies joined).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        Self::send(self.port, method, path, headers, body)
    }

    /// One request to the server on `port`, from any thread.
    pub fn send(
        port: u16,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        // A server that is down (restarting) answers status 0, so pollers can go on.
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
            return Response {
                status: 0,
                headers: String::new(),
                body: String::new(),
            };
        };
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).expect("send head");
        // A server may answer (413) before reading a large body; a failed write is fine then.
        let _ = stream.write_all(body);
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw.as_str(), ""));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            dechunk(body)
        } else {
            body.to_string()
        };
        Response {
            status,
            headers: head.to_string(),
            body,
        }
    }

    /// The server's data directory (`<data-dir>/pki` holds its generated certificates).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// How many logged lines contain `needle`.
    pub fn logged(&self, needle: &str) -> usize {
        self.logs
            .lock()
            .map(|l| l.iter().filter(|line| line.contains(needle)).count())
            .unwrap_or(0)
    }

    /// Stops the server as SIGTERM does (graceful: a leader releases its lease).
    pub fn terminate(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }

    /// Kills the server as a crash would (SIGKILL: no lease released, nothing flushed on the
    /// way out) and starts it again on the same port, data dir and storage.
    pub fn crash_and_restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (child, serving_line) = spawn(&self.wrapper, &self.command_line, &self.logs)
            .unwrap_or_else(|said| panic!("apiserver did not serve again: {said}"));
        self.child = child;
        self.serving_line = serving_line;
    }

    pub fn get(&self, path: &str) -> Response {
        self.request("GET", path, &[], b"")
    }

    pub fn send_json(&self, method: &str, path: &str, body: &serde_json::Value) -> Response {
        let bytes = serde_json::to_vec(body).expect("json");
        self.request(
            method,
            path,
            &[("Content-Type", "application/json")],
            &bytes,
        )
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest.get(n + 2..).unwrap_or_default();
    }
    out
}

/// stdout then stderr of a finished process, as text.
pub fn output_text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs the binary with `args` and a data dir under `dir`, which must refuse to start before
/// it sets anything up (the data dir is never made); returns what it printed.
pub fn refused_start(dir: &std::path::Path, args: &[&str]) -> String {
    let data = dir.join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_apiserver"))
        .args(args)
        .arg("--data-dir")
        .arg(&data)
        .env("NO_COLOR", "1")
        .output()
        .expect("run apiserver");
    let said = output_text(&out);
    assert!(!out.status.success(), "started with {args:?}: {said}");
    assert!(!data.exists(), "set up before refusing: {said}");
    said
}
