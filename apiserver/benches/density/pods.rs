//! The pod watch of the measurement client, as clusterloader2's PodStartupLatency keeps it: one
//! watch on the bench's pods (label `group=density`), and for each pod the moments this watch
//! first saw it, first saw it bound to a node and first saw it Running, on our own clock. The
//! pod's `creationTimestamp` (whole seconds) is kept too, for the SLI's other reading.
//!
//! The client shares two cores with the server, so the reader stays cheap: it decodes the
//! chunked stream itself, and each event into a struct of the five fields it needs (serde
//! skips the rest without building it).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Deserialize;

/// The label every pod of the bench carries, and the watch selects on.
pub const GROUP_LABEL: &str = "group=density";

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    object: Pod,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Meta {
    name: String,
    namespace: String,
    resource_version: String,
    creation_timestamp: Option<String>,
    deletion_timestamp: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Spec {
    node_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Status {
    phase: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Pod {
    metadata: Meta,
    spec: Spec,
    status: Status,
}

/// What the watch saw of one pod.
pub struct Seen {
    pub first: Instant,
    /// `creationTimestamp` in seconds since the epoch.
    pub created: Option<i64>,
    pub scheduled: Option<Instant>,
    pub running: Option<Instant>,
    /// When the watch saw it Running, in seconds since the epoch (beside `created`).
    pub running_wall: Option<f64>,
    pub terminating: bool,
    pub gone: bool,
}

impl Seen {
    /// Running and not being deleted: what a Deployment's replicas count.
    pub fn live_running(&self) -> bool {
        self.running.is_some() && !self.terminating && !self.gone
    }
}

#[derive(Default)]
pub struct State {
    pub pods: HashMap<String, Seen>,
    pub events: u64,
    /// Events that did not parse as a pod (the watch's ERROR events among them).
    pub unparsed: u64,
    /// How often the watch was opened again (it ended, or said 410 Gone).
    pub reopened: u64,
    pub last_error: Option<String>,
}

/// How many of the pods are where, at one moment.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub seen: usize,
    pub unscheduled: usize,
    pub scheduled_not_running: usize,
    pub running: usize,
    pub terminating: usize,
}

impl State {
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for p in self.pods.values().filter(|p| !p.gone) {
            c.seen += 1;
            if p.terminating {
                c.terminating += 1;
            } else if p.running.is_some() {
                c.running += 1;
            } else if p.scheduled.is_some() {
                c.scheduled_not_running += 1;
            } else {
                c.unscheduled += 1;
            }
        }
        c
    }

    fn apply(&mut self, kind: &str, pod: Pod, at: Instant, wall: f64) {
        let key = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
        let seen = self.pods.entry(key).or_insert_with(|| Seen {
            first: at,
            created: pod
                .metadata
                .creation_timestamp
                .as_deref()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.timestamp()),
            scheduled: None,
            running: None,
            running_wall: None,
            terminating: false,
            gone: false,
        });
        if pod.spec.node_name.is_some_and(|n| !n.is_empty()) && seen.scheduled.is_none() {
            seen.scheduled = Some(at);
        }
        if pod.status.phase.as_deref() == Some("Running") && seen.running.is_none() {
            seen.running = Some(at);
            seen.running_wall = Some(wall);
        }
        seen.terminating |= pod.metadata.deletion_timestamp.is_some();
        seen.gone |= kind == "DELETED";
    }
}

/// The watch, on a thread of its own until dropped.
pub struct PodWatch {
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PodWatch {
    pub fn start(port: u16) -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (state, stop) = (state.clone(), stop.clone());
            std::thread::spawn(move || watch_loop(port, &state, &stop))
        };
        Self {
            state,
            stop,
            thread: Some(thread),
        }
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain counters: still worth reading.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for PodWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Opens the watch again whenever it ends, from the last resourceVersion seen (or afresh after
/// a 410, which lists the pods again as ADDED: their first sightings are kept).
fn watch_loop(port: u16, state: &Mutex<State>, stop: &AtomicBool) {
    let mut version = String::new();
    while !stop.load(Ordering::Relaxed) {
        let outcome = watch_once(port, &mut version, state, stop);
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = outcome {
            s.last_error = Some(e);
        }
        if stop.load(Ordering::Relaxed) {
            return;
        }
        s.reopened += 1;
        drop(s);
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn watch_once(
    port: u16,
    version: &mut String,
    state: &Mutex<State>,
    stop: &AtomicBool,
) -> Result<(), String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .map_err(|e| e.to_string())?;
    let from = if version.is_empty() {
        String::new()
    } else {
        format!("&resourceVersion={version}")
    };
    let head = format!(
        "GET /api/v1/pods?watch=1&labelSelector={}&timeoutSeconds=7200{from} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n",
        GROUP_LABEL.replace('=', "%3D")
    );
    stream
        .write_all(head.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut decoder = Chunked::default();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let n = match stream.read(&mut buf) {
            Ok(0) => return Err("the watch ended".into()),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(e) => return Err(e.to_string()),
        };
        let lines = decoder.feed(&buf[..n])?;
        if lines.is_empty() {
            continue;
        }
        let at = Instant::now();
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        for line in lines {
            s.events += 1;
            match serde_json::from_slice::<Event>(&line) {
                Ok(event) if event.kind != "ERROR" && event.kind != "BOOKMARK" => {
                    version.clone_from(&event.object.metadata.resource_version);
                    s.apply(&event.kind, event.object, at, wall);
                }
                Ok(event) if event.kind == "BOOKMARK" => {
                    version.clone_from(&event.object.metadata.resource_version);
                }
                _ => {
                    s.unparsed += 1;
                    // An ERROR (410 Gone): start afresh.
                    version.clear();
                    return Err(String::from_utf8_lossy(&line).chars().take(300).collect());
                }
            }
        }
        if decoder.ended {
            return Ok(());
        }
    }
}

/// The watch response: its head, then chunks, each holding part of a line of JSON.
#[derive(Default)]
struct Chunked {
    raw: Vec<u8>,
    body: Vec<u8>,
    head_done: bool,
    ended: bool,
}

impl Chunked {
    /// Takes bytes off the socket; the complete lines they finish.
    fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        self.raw.extend_from_slice(bytes);
        if !self.head_done {
            let Some(end) = find(&self.raw, b"\r\n\r\n") else {
                return Ok(Vec::new());
            };
            let head = String::from_utf8_lossy(&self.raw[..end]).into_owned();
            if !head.starts_with("HTTP/1.1 200") {
                return Err(format!(
                    "watch refused: {}",
                    head.lines().next().unwrap_or("")
                ));
            }
            if !head
                .to_ascii_lowercase()
                .contains("transfer-encoding: chunked")
            {
                return Err("the watch is not chunked".into());
            }
            self.raw.drain(..end + 4);
            self.head_done = true;
        }
        while let Some(eol) = find(&self.raw, b"\r\n") {
            let size_text = String::from_utf8_lossy(&self.raw[..eol]);
            let size_text = size_text.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|e| format!("chunk size {size_text:?}: {e}"))?;
            if size == 0 {
                self.ended = true;
                break;
            }
            if self.raw.len() < eol + 2 + size + 2 {
                break;
            }
            self.body
                .extend_from_slice(&self.raw[eol + 2..eol + 2 + size]);
            self.raw.drain(..eol + 2 + size + 2);
        }
        let mut lines = Vec::new();
        while let Some(nl) = self.body.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.body.drain(..=nl).collect();
            if line.len() > 1 {
                lines.push(line);
            }
        }
        Ok(lines)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Pod startup latency of the pods first seen at or after `since`, as clusterloader2 reports
/// it (all from the watch, our clock), and from `creationTimestamp`.
pub struct Startup {
    /// First seen → seen Running (upstream's `pod_startup`).
    pub watch: Vec<Duration>,
    /// `creationTimestamp` → seen Running: the timestamp is whole seconds, so each value may be
    /// up to 1 s longer than the truth.
    pub created: Vec<Duration>,
    pub create_to_schedule: Vec<Duration>,
    pub schedule_to_run: Vec<Duration>,
    /// Pods first seen then but not (yet) Running.
    pub not_running: usize,
}

pub fn startup(state: &State, since: Instant) -> Startup {
    let mut s = Startup {
        watch: Vec::new(),
        created: Vec::new(),
        create_to_schedule: Vec::new(),
        schedule_to_run: Vec::new(),
        not_running: 0,
    };
    for p in state.pods.values().filter(|p| p.first >= since) {
        let Some(running) = p.running else {
            if !p.gone && !p.terminating {
                s.not_running += 1;
            }
            continue;
        };
        s.watch.push(running - p.first);
        if let (Some(created), Some(wall)) = (p.created, p.running_wall) {
            s.created
                .push(Duration::from_secs_f64((wall - created as f64).max(0.0)));
        }
        if let Some(scheduled) = p.scheduled {
            s.create_to_schedule.push(scheduled - p.first);
            s.schedule_to_run
                .push(running.saturating_duration_since(scheduled));
        }
    }
    for v in [
        &mut s.watch,
        &mut s.created,
        &mut s.create_to_schedule,
        &mut s.schedule_to_run,
    ] {
        v.sort();
    }
    s
}
