//! The server under soak: the real binary with simulated nodes on a fresh data dir or a fresh
//! etcd, its warnings and errors kept from its log, and what it holds read from /proc and
//! /metrics.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::http::Conn;
use crate::{free_port, BackendKind, EtcdServer};

/// How long the server keeps events.
const EVENT_TTL: &str = "1m";

/// Log lines kept word for word per level; the rest are counted.
const KEPT_LINES: usize = 10;

/// The server's log lines at WARN and ERROR: counted, the first few kept.
#[derive(Default, Clone)]
pub struct LogLines {
    pub warnings: u64,
    pub errors: u64,
    pub first_warnings: Vec<String>,
    pub first_errors: Vec<String>,
}

pub struct Server {
    child: Child,
    pub port: u16,
    log: Arc<Mutex<LogLines>>,
    _dir: tempfile::TempDir,
    _etcd: Option<EtcdServer>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts `bin` on `backend` with `nodes` simulated nodes and waits until it is ready.
    pub fn start(bin: &Path, backend: BackendKind, nodes: usize) -> Self {
        let etcd = match backend {
            BackendKind::Embedded => None,
            BackendKind::Etcd => Some(EtcdServer::start_blocking()),
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let secure_port = std::iter::repeat_with(free_port)
            .find(|p| *p != port)
            .expect("a second free port");
        let mut command = Command::new(bin);
        command
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--port", &port.to_string()])
            .args(["--secure-port", &secure_port.to_string()])
            .args(["--nodes", &nodes.to_string()])
            // Events live an hour by default; at this churn about 14,000 are written an
            // hour, so their memory would climb for the whole first hour, leak or none. A
            // short TTL makes their number steady within the warm-up, and their expiry part
            // of the churn.
            .args(["--event-ttl", EVENT_TTL])
            // Warnings and errors only: what the soak reports of the server's own view.
            .env("RUST_LOG", "warn")
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped());
        if let Some(etcd) = &etcd {
            command.arg(format!("--etcd-servers={}", etcd.endpoint()));
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", bin.display()));
        let log = Arc::new(Mutex::new(LogLines::default()));
        if let Some(stdout) = child.stdout.take() {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
                    let log = &mut *log;
                    let (count, kept) = if line.contains("ERROR") {
                        (&mut log.errors, &mut log.first_errors)
                    } else if line.contains("WARN") {
                        (&mut log.warnings, &mut log.first_warnings)
                    } else {
                        continue;
                    };
                    *count += 1;
                    if kept.len() < KEPT_LINES {
                        kept.push(line);
                    }
                }
            });
        }
        let server = Self {
            child,
            port,
            log,
            _dir: dir,
            _etcd: etcd,
        };
        let since = Instant::now();
        let mut conn = Conn::new(port);
        while !conn
            .send("GET", "/readyz", "text/plain", b"")
            .is_ok_and(|a| a.status == 200)
        {
            assert!(
                since.elapsed() < Duration::from_secs(60),
                "the server was not ready within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log(&self) -> LogLines {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// What the server holds at one moment.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sample {
    /// Seconds since the churn began.
    pub at: f64,
    /// Anonymous memory (`RssAnon`), bytes.
    pub anon: u64,
    /// `tokio_alive_tasks` from /metrics.
    pub tasks: u64,
    pub threads: u64,
    pub fds: u64,
}

/// A field of /proc/<pid>/status (in kB for sizes).
fn status_field(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Reads what the server holds; an error says what could not be read.
pub fn sample(pid: u32, metrics: &mut Conn, at: f64) -> Result<Sample, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("/proc/{pid}/status: {e}"))?;
    let anon = status_field(&status, "RssAnon:").ok_or("no RssAnon")? * 1024;
    let threads = status_field(&status, "Threads:").ok_or("no Threads")?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map_err(|e| format!("/proc/{pid}/fd: {e}"))?
        .count() as u64;
    let answer = metrics.send("GET", "/metrics", "text/plain", b"")?;
    if answer.status != 200 {
        return Err(format!("GET /metrics: {}", answer.status));
    }
    let tasks = answer
        .text()
        .lines()
        .find_map(|l| l.strip_prefix("tokio_alive_tasks "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or("no tokio_alive_tasks in /metrics")?;
    Ok(Sample {
        at,
        anon,
        tasks,
        threads,
        fds,
    })
}
