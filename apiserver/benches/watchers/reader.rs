//! The bench's watchers: thousands of watch streams read by a few threads, each a
//! single-threaded tokio runtime (epoll) running one small task per stream. A task keeps only
//! the tail of a line cut by a read; its bytes are read into its thread's one scratch buffer,
//! and of each event only the data the writers put at its end is parsed (writer, sequence
//! number, write time), so that the client's cost stays small beside the server's.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Latency histogram buckets: 100 µs each, up to 60 s (later arrivals land in the last).
const BUCKET_MICROS: u64 = 100;
const BUCKETS: usize = 600_000;
/// What one read takes at most.
const SCRATCH: usize = 64 * 1024;
/// Writers the events may come from (their number is the bench's; this bounds it).
pub const MAX_WRITERS: usize = 8;

/// Microseconds since the epoch: writers stamp events with it, readers compare on arrival.
pub fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or_default()
}

/// Delivery latencies in fixed buckets: cheap to record, merged once at the end.
pub struct Histogram {
    counts: Vec<u32>,
    total: u64,
    max_micros: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    pub fn new() -> Self {
        Self {
            counts: vec![0; BUCKETS],
            total: 0,
            max_micros: 0,
        }
    }

    fn record(&mut self, micros: u64) {
        let bucket = ((micros / BUCKET_MICROS) as usize).min(BUCKETS - 1);
        self.counts[bucket] += 1;
        self.total += 1;
        self.max_micros = self.max_micros.max(micros);
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.max_micros = self.max_micros.max(other.max_micros);
    }

    /// The upper edge of the bucket holding quantile `q` (0..1).
    pub fn quantile(&self, q: f64) -> Duration {
        if self.total == 0 {
            return Duration::ZERO;
        }
        let rank = ((self.total as f64 * q).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (i, c) in self.counts.iter().enumerate() {
            seen += u64::from(*c);
            if seen >= rank {
                return Duration::from_micros((i as u64 + 1) * BUCKET_MICROS);
            }
        }
        Duration::from_micros(self.max_micros)
    }

    pub fn max(&self) -> Duration {
        Duration::from_micros(self.max_micros)
    }

    pub fn total(&self) -> u64 {
        self.total
    }
}

/// What one watcher has seen: per writer, the last sequence number, and what went wrong.
#[derive(Clone, Default)]
pub struct Seen {
    pub last: [u64; MAX_WRITERS],
    /// Sequence numbers skipped over (an event missed in the middle of the stream).
    pub gaps: u64,
    /// Events older than one already seen from the same writer.
    pub out_of_order: u64,
    /// Events that were not a MODIFIED of a bench object (ERROR, ADDED, DELETED).
    pub unexpected: u64,
    /// The stream ended or failed while the bench was running.
    pub ended: bool,
}

/// Shared between the bench and its reader threads.
pub struct Control {
    pub port: u16,
    pub path: String,
    /// Watches whose answer's head (200) has arrived.
    pub established: AtomicUsize,
    /// Events received by all watchers, for the drain at the end.
    pub received: AtomicU64,
    /// Set to end the readers.
    pub stop: AtomicBool,
    /// Watch requests turned away (429) and tried again.
    pub retries: AtomicU64,
    /// Failures to open a watch, the first ones kept for the report.
    pub failures: std::sync::Mutex<Vec<String>>,
}

/// What a reader thread hands back: its watchers' states and its latencies.
pub struct ThreadResult {
    pub seen: Vec<Seen>,
    pub latency: Histogram,
}

struct ThreadState {
    seen: Vec<Seen>,
    latency: Histogram,
    scratch: Vec<u8>,
}

/// Starts a reader thread for `count` watchers; they connect `connect_at_once` at a time.
pub fn spawn(
    control: Arc<Control>,
    count: usize,
    connect_at_once: usize,
) -> std::thread::JoinHandle<ThreadResult> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a reader runtime");
        let state = Rc::new(RefCell::new(ThreadState {
            seen: vec![Seen::default(); count],
            latency: Histogram::new(),
            scratch: vec![0; SCRATCH],
        }));
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async {
            let gate = Rc::new(tokio::sync::Semaphore::new(connect_at_once.max(1)));
            let tasks: Vec<_> = (0..count)
                .map(|i| {
                    let (control, state, gate) = (control.clone(), state.clone(), gate.clone());
                    tokio::task::spawn_local(async move {
                        let stream = {
                            let _permit = gate.acquire().await;
                            open(&control).await
                        };
                        match stream {
                            Ok((stream, rest)) => {
                                control.established.fetch_add(1, Ordering::Relaxed);
                                follow(&control, &state, i, stream, rest).await;
                            }
                            Err(e) => {
                                let mut failures =
                                    control.failures.lock().unwrap_or_else(|p| p.into_inner());
                                if failures.len() < 5 {
                                    failures.push(e);
                                }
                            }
                        }
                        state.borrow_mut().seen[i].ended = true;
                    })
                })
                .collect();
            while !control.stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            for t in tasks {
                t.abort();
            }
        });
        drop(local);
        let state = Rc::try_unwrap(state)
            .ok()
            .expect("reader tasks are gone")
            .into_inner();
        ThreadResult {
            seen: state.seen,
            latency: state.latency,
        }
    })
}

/// Opens one watch; retries while the server says 429 (its in-flight limits while thousands
/// of watches start). The bytes read after the answer's head are returned with the stream.
async fn open(control: &Control) -> Result<(TcpStream, Vec<u8>), String> {
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n",
        control.path
    );
    for _ in 0..600 {
        let mut stream = TcpStream::connect(("127.0.0.1", control.port))
            .await
            .map_err(|e| format!("connect: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut buf = Vec::with_capacity(512);
        let head_end = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break end;
            }
            let mut chunk = [0u8; 512];
            let n = stream
                .read(&mut chunk)
                .await
                .map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err("closed before the answer".into());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let status = head.split_whitespace().nth(1).unwrap_or_default();
        match status {
            "200" => return Ok((stream, buf[head_end + 4..].to_vec())),
            "429" => {
                control.retries.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            _ => return Err(format!("watch answered {head:?}")),
        }
    }
    Err("still 429 after 600 tries".into())
}

/// Reads one watch until it ends or the bench stops.
async fn follow(
    control: &Control,
    state: &RefCell<ThreadState>,
    index: usize,
    stream: TcpStream,
    mut pending: Vec<u8>,
) {
    {
        let mut s = state.borrow_mut();
        let received = take_lines(&mut s, index, &mut pending, &[]);
        control.received.fetch_add(received, Ordering::Relaxed);
    }
    loop {
        if stream.readable().await.is_err() {
            return;
        }
        let mut s = state.borrow_mut();
        let mut scratch = std::mem::take(&mut s.scratch);
        let mut received = 0;
        let mut closed = false;
        loop {
            match stream.try_read(&mut scratch) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Ok(n) => received += take_lines(&mut s, index, &mut pending, &scratch[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    closed = true;
                    break;
                }
            }
        }
        s.scratch = scratch;
        control.received.fetch_add(received, Ordering::Relaxed);
        if closed {
            return;
        }
    }
}

/// Takes the whole lines of `pending` + `bytes` (keeping a cut tail in `pending`); returns
/// how many events they held. The chunked framing needs no parsing: a chunk holds whole
/// events, so its size line and CRLF are lines of their own, which hold no event.
fn take_lines(s: &mut ThreadState, index: usize, pending: &mut Vec<u8>, bytes: &[u8]) -> u64 {
    let now = now_micros();
    let mut events = 0;
    let mut handle = |line: &[u8], s: &mut ThreadState| {
        if line.first() == Some(&b'{') {
            events += 1;
            event(s, index, line, now);
        }
    };
    let mut rest = bytes;
    if !pending.is_empty() {
        let Some(end) = rest.iter().position(|b| *b == b'\n') else {
            pending.extend_from_slice(rest);
            return 0;
        };
        pending.extend_from_slice(&rest[..end]);
        let line = std::mem::take(pending);
        handle(&line, s);
        rest = &rest[end + 1..];
    }
    while let Some(end) = rest.iter().position(|b| *b == b'\n') {
        handle(&rest[..end], s);
        rest = &rest[end + 1..];
    }
    pending.extend_from_slice(rest);
    events
}

/// One event line: `{"type":"MODIFIED","object":{... ,"data":{"seq":"N","ts":"T","w":"W"}}}`.
/// The data map comes last in a ConfigMap and its keys in order, so it is cut from the end.
fn event(s: &mut ThreadState, index: usize, line: &[u8], now: u64) {
    let modified = line.starts_with(br#"{"type":"MODIFIED""#);
    let data = line
        .iter()
        .rposition(|b| *b == b'{')
        .and_then(|start| parse_data(&line[start..]));
    let seen = &mut s.seen[index];
    let (Some((seq, ts, writer)), true) = (data, modified) else {
        seen.unexpected += 1;
        return;
    };
    let last = &mut seen.last[writer];
    if seq <= *last {
        seen.out_of_order += 1;
    } else {
        seen.gaps += seq - *last - 1;
        *last = seq;
    }
    s.latency.record(now.saturating_sub(ts));
}

/// `{"seq":"N","ts":"T","w":"W"}` → (N, T, W).
fn parse_data(data: &[u8]) -> Option<(u64, u64, usize)> {
    let text = std::str::from_utf8(data).ok()?;
    let mut parts = text.split('"');
    let mut field = |name: &str| -> Option<u64> {
        parts.find(|p| *p == name)?;
        parts.next()?;
        parts.next()?.parse().ok()
    };
    let seq = field("seq")?;
    let ts = field("ts")?;
    let writer = field("w")? as usize;
    (writer < MAX_WRITERS).then_some((seq, ts, writer))
}
