//! Watch fan-out latency: many watchers on one `Cacher`, one writer doing spaced writes under
//! the cached prefix, latency from the moment each write was sent to each delivery.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use storage::backend::DynBackend;
use storage::{Cacher, CacherConfig, EventKind, Interface, KvStore, WatchOptions};
use tokio::sync::{watch, Barrier};

use crate::config::Config;
use crate::kv::value_of;
use crate::stats::Latency;

pub struct WatchResult {
    pub backend: &'static str,
    watchers: usize,
    events: usize,
    pub expected: usize,
    pub delivered: usize,
    watch_errors: usize,
    stream_errors: usize,
    first_error: Option<String>,
    out_of_order: usize,
    unknown: usize,
    write_errors: usize,
    /// From just before the write was sent to the delivery.
    pub send: Latency,
    /// From the write's acknowledgement to the delivery (0 when delivered before the ack).
    ack: Latency,
}

impl WatchResult {
    pub fn print(&self) {
        println!(
            "watch {:<9} {} watchers x {} writes: delivered {}/{} | send->deliver {} | ack->deliver {}",
            self.backend,
            self.watchers,
            self.events,
            self.delivered,
            self.expected,
            self.send.p50_p99_max(),
            self.ack.p50_p99_max(),
        );
        let problems = self.watch_errors
            + self.stream_errors
            + self.out_of_order
            + self.unknown
            + self.write_errors;
        if problems > 0 || self.delivered < self.expected {
            println!(
                "{:<16}problems: watch() errors {}, stream errors {}, out-of-order {}, unknown revisions {}, write errors {}{}",
                "",
                self.watch_errors,
                self.stream_errors,
                self.out_of_order,
                self.unknown,
                self.write_errors,
                self.first_error
                    .as_ref()
                    .map(|e| format!(", first error: {e}"))
                    .unwrap_or_default(),
            );
        }
    }

    pub fn p99_ok(&self) -> bool {
        self.delivered == self.expected && self.send.p99 <= Duration::from_millis(50)
    }
}

#[derive(Default)]
struct WatcherOutcome {
    deliveries: Vec<(i64, Instant)>,
    watch_error: Option<String>,
    stream_error: Option<String>,
}

pub async fn watch_fanout(name: &'static str, backend: DynBackend, cfg: &Config) -> WatchResult {
    let store = KvStore::new(backend.clone(), "/registry");
    let cacher = Arc::new(Cacher::new(store, "/bench/", CacherConfig::default()));
    let revision = listed_revision(name, &backend, &cacher).await;

    let barrier = Arc::new(Barrier::new(cfg.watchers + 1));
    let finished = Arc::new(AtomicUsize::new(0));
    let (stop_tx, stop_rx) = watch::channel(false);
    let handles: Vec<_> = (0..cfg.watchers)
        .map(|_| {
            tokio::spawn(watcher(
                cacher.clone(),
                revision,
                cfg.watch_events,
                barrier.clone(),
                finished.clone(),
                stop_rx.clone(),
            ))
        })
        .collect();
    barrier.wait().await;

    let value = value_of(cfg.value_size, 7);
    let mut sent: HashMap<i64, (Instant, Instant)> = HashMap::with_capacity(cfg.watch_events);
    let mut write_errors = 0;
    let mut first_error = None;
    let mut ticker = tokio::time::interval(cfg.watch_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for i in 0..cfg.watch_events {
        ticker.tick().await;
        let t = Instant::now();
        match cacher
            .create(&format!("/bench/obj-{i:06}"), value.clone())
            .await
        {
            Ok(kv) => {
                sent.insert(kv.mod_revision, (t, Instant::now()));
            }
            Err(e) => {
                write_errors += 1;
                first_error.get_or_insert_with(|| format!("write: {e}"));
            }
        }
    }
    let expected_per_watcher = cfg.watch_events - write_errors;

    // Watchers that missed an event would otherwise wait for it forever.
    let drain_deadline = Instant::now() + Duration::from_secs(15);
    while finished.load(Ordering::Acquire) < cfg.watchers && Instant::now() < drain_deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _ = stop_tx.send(true);

    let mut send_lat = Vec::with_capacity(cfg.watchers * cfg.watch_events);
    let mut ack_lat = Vec::with_capacity(cfg.watchers * cfg.watch_events);
    let (mut watch_errors, mut stream_errors, mut out_of_order, mut unknown) = (0, 0, 0, 0);
    for h in handles {
        let out = match h.await {
            Ok(out) => out,
            Err(e) => {
                stream_errors += 1;
                first_error.get_or_insert_with(|| format!("watcher task: {e}"));
                continue;
            }
        };
        if let Some(e) = out.watch_error {
            watch_errors += 1;
            first_error.get_or_insert_with(|| format!("watch(): {e}"));
        }
        if let Some(e) = out.stream_error {
            stream_errors += 1;
            first_error.get_or_insert_with(|| format!("stream: {e}"));
        }
        let mut last = i64::MIN;
        for (rev, at) in out.deliveries {
            if rev <= last {
                out_of_order += 1;
            }
            last = rev;
            match sent.get(&rev) {
                Some((send, ack)) => {
                    send_lat.push(at.saturating_duration_since(*send));
                    ack_lat.push(at.saturating_duration_since(*ack));
                }
                None => unknown += 1,
            }
        }
    }
    WatchResult {
        backend: name,
        watchers: cfg.watchers,
        events: cfg.watch_events,
        expected: cfg.watchers * expected_per_watcher,
        delivered: send_lat.len(),
        watch_errors,
        stream_errors,
        first_error,
        out_of_order,
        unknown,
        write_errors,
        send: Latency::of(send_lat),
        ack: Latency::of(ack_lat),
    }
}

/// A revision the cache has listed at or passed: its window starts at the list revision, so
/// watching from an older one would be refused.
async fn listed_revision(name: &str, backend: &DynBackend, cacher: &Cacher) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let current = backend
            .current_revision()
            .await
            .expect("reading the backend's current revision");
        if cacher.revision() >= current {
            return current;
        }
        assert!(
            Instant::now() < deadline,
            "watch cache on {name} did not reach revision {current} within 20s (at {})",
            cacher.revision()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One watcher: records the arrival of each of the `expected` events until it has them all,
/// its stream fails, or it is told to stop.
async fn watcher(
    cacher: Arc<Cacher>,
    revision: i64,
    expected: usize,
    barrier: Arc<Barrier>,
    finished: Arc<AtomicUsize>,
    mut stop: watch::Receiver<bool>,
) -> WatcherOutcome {
    let mut out = WatcherOutcome {
        deliveries: Vec::with_capacity(expected),
        ..Default::default()
    };
    let opts = WatchOptions {
        revision,
        recursive: true,
        ..Default::default()
    };
    let stream = cacher.watch("/bench/", opts).await;
    // Always reach the barrier, or the writer would wait forever.
    barrier.wait().await;
    match stream {
        Err(e) => out.watch_error = Some(e.to_string()),
        Ok(mut stream) => loop {
            tokio::select! {
                item = stream.next() => match item {
                    Some(Ok(ev)) => {
                        let now = Instant::now();
                        if ev.kind != EventKind::Bookmark {
                            out.deliveries.push((ev.revision, now));
                            if out.deliveries.len() >= expected {
                                break;
                            }
                        }
                    }
                    Some(Err(e)) => {
                        out.stream_error = Some(e.to_string());
                        break;
                    }
                    None => {
                        out.stream_error = Some("watch stream ended".into());
                        break;
                    }
                },
                _ = stop.changed() => break,
            }
        },
    }
    finished.fetch_add(1, Ordering::AcqRel);
    out
}
