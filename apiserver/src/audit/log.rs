//! The log backend (upstream's `--audit-log-path`): one event per line, appended to a file
//! (`-`: standard out). Upstream's default mode writes in the request; here a writer thread
//! does, so that no request waits on the disk (one waits only when 10,000 events are queued),
//! and finishes the events (decoding the bodies kept for them) off the request's path.

use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Mutex;
use std::thread::JoinHandle;

use super::event::{Body, Event};
use super::rotate::{RotatingFile, Rotation};

/// upstream's default buffer of the log backend.
const BUFFER: usize = 10_000;

/// An event on its way to the log, with the bodies it is to be finished from.
#[derive(Debug)]
pub struct Entry {
    pub event: Event,
    pub request: Option<Body>,
    pub response: Option<Body>,
    pub patch: bool,
    pub omit_managed_fields: bool,
}

impl Entry {
    fn finish(self) -> Event {
        let mut event = self.event;
        if let Some(body) = &self.request {
            event.log_request(body, self.patch, self.omit_managed_fields);
        }
        if let Some(body) = &self.response {
            event.log_response(body, self.omit_managed_fields);
        }
        event
    }
}

enum Message {
    Entry(Box<Entry>),
    Stop,
}

/// Where the filter sends events.
#[derive(Clone, Debug)]
pub struct Sink(SyncSender<Message>);

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Message::Entry(_) => "Entry",
            Message::Stop => "Stop",
        })
    }
}

impl Sink {
    /// Queues `entry` for the writer. Called on the runtime's threads, so it never waits: a
    /// full queue (the disk far behind) drops the event with an error, as upstream's batching
    /// backend does, rather than stalling every request on the worker. A closed channel
    /// means the server is stopping: late events are dropped.
    pub fn send(&self, entry: Entry) {
        if let Err(TrySendError::Full(_)) = self.0.try_send(Message::Entry(Box::new(entry))) {
            tracing::error!("audit event dropped: the audit log's queue is full");
        }
    }
}

/// The writer thread.
#[derive(Debug)]
pub struct Backend {
    sink: Sink,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl Backend {
    /// Opens the file at `path` (see [`RotatingFile::open`]), or standard out for `-`.
    pub fn open(path: &Path, rotation: Rotation) -> io::Result<Backend> {
        let out: Box<dyn Write + Send> = if path == Path::new("-") {
            Box::new(io::stdout())
        } else {
            Box::new(RotatingFile::open(path, rotation)?)
        };
        let (tx, rx) = mpsc::sync_channel(BUFFER);
        let name = path.display().to_string();
        let writer = std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || write_events(rx, BufWriter::new(out), &name))?;
        Ok(Backend {
            sink: Sink(tx),
            writer: Mutex::new(Some(writer)),
        })
    }

    pub fn sink(&self) -> Sink {
        self.sink.clone()
    }

    /// Writes what is queued, flushes and ends the writer.
    pub async fn stop(&self) {
        let _ = self.sink.0.send(Message::Stop);
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(writer) = writer {
            let _ = tokio::task::spawn_blocking(move || writer.join()).await;
        }
    }
}

/// Writes events as they come, flushing whenever the queue runs empty.
fn write_events(rx: Receiver<Message>, out: BufWriter<Box<dyn Write + Send>>, name: &str) {
    let mut log = Log {
        out,
        name,
        failing: false,
    };
    while let Ok(message) = rx.recv() {
        let mut next = Some(message);
        while let Some(message) = next.take() {
            match message {
                Message::Entry(entry) => log.write(*entry),
                Message::Stop => {
                    log.flush();
                    return;
                }
            }
            next = rx.try_recv().ok();
        }
        log.flush();
    }
    log.flush();
}

struct Log<'a> {
    out: BufWriter<Box<dyn Write + Send>>,
    name: &'a str,
    /// Only the first failure of a run of them is reported.
    failing: bool,
}

impl Log<'_> {
    fn write(&mut self, entry: Entry) {
        // One write per line: a rotation never splits one.
        let written = match entry.finish().to_line() {
            Ok(mut line) => {
                line.push('\n');
                self.out.write_all(line.as_bytes())
            }
            Err(e) => Err(io::Error::other(e)),
        };
        self.report(written);
    }

    fn flush(&mut self) {
        let flushed = self.out.flush();
        self.report(flushed);
    }

    fn report(&mut self, result: io::Result<()>) {
        match result {
            Err(e) if !self.failing => {
                self.failing = true;
                tracing::error!(log = self.name, error = %e, "could not write audit events");
            }
            Ok(()) if self.failing => {
                self.failing = false;
                tracing::info!(log = self.name, "writing audit events again");
            }
            _ => {}
        }
    }
}
