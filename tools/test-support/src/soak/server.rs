//! The server under soak: the real binary with simulated nodes on a fresh data dir or a fresh
//! etcd, its warnings and errors kept from its log, and what it holds read from /proc and
//! /metrics.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::https::Redial;
use crate::server::{proc_status, proc_status_field, ApiServer, Launch};
use crate::BackendKind;

/// How long the server keeps events.
const EVENT_TTL: &str = "1m";

/// Log lines kept word for word per level; the rest are counted.
const KEPT_LINES: usize = 10;

/// How long one of the soak's plain requests may wait for the server.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The server's log lines at WARN and ERROR: counted, the first few kept.
#[derive(Default, Clone)]
pub struct LogLines {
    pub warnings: u64,
    pub errors: u64,
    pub first_warnings: Vec<String>,
    pub first_errors: Vec<String>,
}

impl LogLines {
    fn add(&mut self, line: String) {
        let (count, kept) = if line.contains("ERROR") {
            (&mut self.errors, &mut self.first_errors)
        } else if line.contains("WARN") {
            (&mut self.warnings, &mut self.first_warnings)
        } else {
            return;
        };
        *count += 1;
        if kept.len() < KEPT_LINES {
            kept.push(line);
        }
    }
}

pub struct Server {
    pub api: ApiServer,
    log: Arc<Mutex<LogLines>>,
}

impl Server {
    /// Starts `bin` on `backend` with `nodes` simulated nodes and waits until it is ready.
    pub fn start(bin: &Path, backend: BackendKind, nodes: usize) -> Self {
        let log = Arc::new(Mutex::new(LogLines::default()));
        let kept = log.clone();
        let api = Launch::new(bin)
            .backend(backend)
            .args(["--nodes", &nodes.to_string()])
            // Events live an hour by default; at this churn about 14,000 are written an
            // hour, so their memory would climb for the whole first hour, leak or none. A
            // short TTL makes their number steady within the warm-up, and their expiry part
            // of the churn.
            .args(["--event-ttl", EVENT_TTL])
            // Warnings and errors only: what the soak reports of the server's own view.
            .log_level("warn")
            .on_log_line(move |line| kept.lock().unwrap_or_else(|p| p.into_inner()).add(line))
            .start();
        Self { api, log }
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

/// Reads what the server holds; an error says what could not be read.
pub fn sample(pid: u32, metrics: &mut Redial, at: f64) -> Result<Sample, String> {
    let status = proc_status(pid).map_err(|e| format!("/proc/{pid}/status: {e}"))?;
    let anon = proc_status_field(&status, "RssAnon:").ok_or("no RssAnon")?;
    let threads = proc_status_field(&status, "Threads:").ok_or("no Threads")?;
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
