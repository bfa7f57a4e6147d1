//! client-go's workqueue metrics (`workqueue_*`, labelled by the queue's `name`), as the
//! component-base provider registers them: one process-wide set that every named queue
//! records into. A queue without a name records nothing, as upstream's.
//!
//! The in-progress gauges (`unfinished_work_seconds`, `longest_running_processor_seconds`)
//! are worked out from each live queue's processing start times when the metrics are
//! gathered, where upstream refreshes them every half second.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{LazyLock, Mutex, Weak};

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{
    exponential_buckets, Gauge, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter,
    IntCounterVec, IntGauge, IntGaugeVec, Opts,
};
use tokio::time::Instant;

const SUBSYSTEM: &str = "workqueue";
const LABEL: &str = "name";

struct Families {
    depth: IntGaugeVec,
    adds: IntCounterVec,
    latency: HistogramVec,
    work_duration: HistogramVec,
    unfinished: GaugeVec,
    longest: GaugeVec,
    retries: IntCounterVec,
    /// Queues whose in-progress gauges are refreshed on gathering.
    in_flight: Mutex<Vec<Weak<dyn InFlight>>>,
}

fn opts(name: &str, help: &str) -> Opts {
    Opts::new(name, help).subsystem(SUBSYSTEM)
}

/// Upstream's ExponentialBuckets(10e-9, 10, 10): 10ns to 10s.
fn duration_histogram(name: &str, help: &str) -> HistogramVec {
    let buckets = exponential_buckets(10e-9, 10.0, 10).unwrap_or_default();
    HistogramVec::new(
        HistogramOpts::from(opts(name, help)).buckets(buckets),
        &[LABEL],
    )
    .expect("a valid histogram definition")
}

impl Families {
    fn new() -> Self {
        Self {
            depth: IntGaugeVec::new(opts("depth", "Current depth of workqueue"), &[LABEL])
                .expect("a valid gauge definition"),
            adds: IntCounterVec::new(
                opts("adds_total", "Total number of adds handled by workqueue"),
                &[LABEL],
            )
            .expect("a valid counter definition"),
            latency: duration_histogram(
                "queue_duration_seconds",
                "How long in seconds an item stays in workqueue before being requested.",
            ),
            work_duration: duration_histogram(
                "work_duration_seconds",
                "How long in seconds processing an item from workqueue takes.",
            ),
            unfinished: GaugeVec::new(
                opts(
                    "unfinished_work_seconds",
                    "How many seconds of work has done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
                ),
                &[LABEL],
            )
            .expect("a valid gauge definition"),
            longest: GaugeVec::new(
                opts(
                    "longest_running_processor_seconds",
                    "How many seconds has the longest running processor for workqueue been running.",
                ),
                &[LABEL],
            )
            .expect("a valid gauge definition"),
            retries: IntCounterVec::new(
                opts("retries_total", "Total number of retries handled by workqueue"),
                &[LABEL],
            )
            .expect("a valid counter definition"),
            in_flight: Mutex::new(Vec::new()),
        }
    }

    fn refresh_in_flight(&self) {
        let mut queues = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        queues.retain(|q| match q.upgrade() {
            Some(q) => {
                q.update_in_flight();
                true
            }
            None => false,
        });
    }
}

static FAMILIES: LazyLock<Families> = LazyLock::new(Families::new);

/// The `workqueue_*` families as one collector; gathering it first refreshes the
/// in-progress gauges.
struct WorkqueueCollector {
    descs: Vec<Desc>,
}

impl Collector for WorkqueueCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let f = &*FAMILIES;
        f.refresh_in_flight();
        [
            f.depth.collect(),
            f.adds.collect(),
            f.latency.collect(),
            f.work_duration.collect(),
            f.unfinished.collect(),
            f.longest.collect(),
            f.retries.collect(),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// Registers the `workqueue_*` families with `registry` (once per registry).
pub fn register_metrics(registry: &prometheus::Registry) -> prometheus::Result<()> {
    let f = &*FAMILIES;
    let descs = [
        f.depth.desc(),
        f.adds.desc(),
        f.latency.desc(),
        f.work_duration.desc(),
        f.unfinished.desc(),
        f.longest.desc(),
        f.retries.desc(),
    ]
    .into_iter()
    .flatten()
    .cloned()
    .collect();
    registry.register(Box::new(WorkqueueCollector { descs }))
}

/// A queue whose in-progress gauges can be brought up to date.
pub(super) trait InFlight: Send + Sync {
    fn update_in_flight(&self);
}

/// Keeps `queue`'s in-progress gauges refreshed on gathering while it lives.
pub(super) fn track(queue: Weak<dyn InFlight>) {
    FAMILIES
        .in_flight
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(queue);
}

/// One named queue's metrics (upstream's defaultQueueMetrics), kept under the queue's lock.
pub(super) struct QueueMetrics<T> {
    depth: IntGauge,
    adds: IntCounter,
    latency: Histogram,
    work_duration: Histogram,
    unfinished: Gauge,
    longest: Gauge,
    retries: IntCounter,
    added_at: HashMap<T, Instant>,
    processing_since: HashMap<T, Instant>,
}

impl<T: Clone + Eq + Hash> QueueMetrics<T> {
    /// None for an unnamed queue.
    pub(super) fn new(name: &str) -> Option<Self> {
        if name.is_empty() {
            return None;
        }
        let f = &*FAMILIES;
        Some(Self {
            depth: f.depth.with_label_values(&[name]),
            adds: f.adds.with_label_values(&[name]),
            latency: f.latency.with_label_values(&[name]),
            work_duration: f.work_duration.with_label_values(&[name]),
            unfinished: f.unfinished.with_label_values(&[name]),
            longest: f.longest.with_label_values(&[name]),
            retries: f.retries.with_label_values(&[name]),
            added_at: HashMap::new(),
            processing_since: HashMap::new(),
        })
    }

    /// An item became dirty (queued, or due again once its worker is done).
    pub(super) fn add(&mut self, item: &T) {
        self.adds.inc();
        self.depth.inc();
        self.added_at
            .entry(item.clone())
            .or_insert_with(Instant::now);
    }

    /// An item was handed to a worker.
    pub(super) fn get(&mut self, item: &T) {
        self.depth.dec();
        let now = Instant::now();
        self.processing_since.insert(item.clone(), now);
        if let Some(added) = self.added_at.remove(item) {
            self.latency
                .observe(now.saturating_duration_since(added).as_secs_f64());
        }
    }

    /// A worker finished an item.
    pub(super) fn done(&mut self, item: &T) {
        if let Some(start) = self.processing_since.remove(item) {
            self.work_duration.observe(start.elapsed().as_secs_f64());
        }
    }

    pub(super) fn retry(&self) {
        self.retries.inc();
    }
}

impl<T> QueueMetrics<T> {
    /// The queue stopped with `pending` dirty items it will never hand out (it does not
    /// drain, unlike upstream's): they leave the depth.
    pub(super) fn abandon(&mut self, pending: usize) {
        self.depth.sub(i64::try_from(pending).unwrap_or(i64::MAX));
        self.added_at.clear();
    }

    pub(super) fn update_in_flight(&self) {
        let now = Instant::now();
        let mut total = 0.0;
        let mut oldest = 0.0_f64;
        for start in self.processing_since.values() {
            let secs = now.saturating_duration_since(*start).as_secs_f64();
            total += secs;
            oldest = oldest.max(secs);
        }
        self.unfinished.set(total);
        self.longest.set(oldest);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use prometheus::{Encoder, TextEncoder};

    use super::*;
    use crate::workqueue::{ItemExponentialFailureRateLimiter, Queue, RateLimitingQueue};

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn depth(name: &str) -> i64 {
        FAMILIES.depth.with_label_values(&[name]).get()
    }

    fn adds(name: &str) -> u64 {
        FAMILIES.adds.with_label_values(&[name]).get()
    }

    fn retries(name: &str) -> u64 {
        FAMILIES.retries.with_label_values(&[name]).get()
    }

    /// (count, sum) of one queue's histogram.
    fn observed(vec: &HistogramVec, name: &str) -> (u64, f64) {
        let h = vec.with_label_values(&[name]);
        (h.get_sample_count(), h.get_sample_sum())
    }

    fn exposition() -> String {
        let registry = prometheus::Registry::new();
        register_metrics(&registry).expect("registered");
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&registry.gather(), &mut out)
            .expect("encoded");
        String::from_utf8(out).expect("utf-8")
    }

    #[tokio::test(start_paused = true)]
    async fn depth_and_adds_follow_the_dirty_items() {
        let q = Queue::named("metrics_test_depth");
        q.add("a");
        q.add("b");
        // Already queued: neither an add nor deeper.
        q.add("a");
        assert_eq!(
            (depth("metrics_test_depth"), adds("metrics_test_depth")),
            (2, 2)
        );
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(depth("metrics_test_depth"), 1);
        // Re-added while processing: counted and pending again, handed out after done.
        q.add("a");
        assert_eq!(
            (depth("metrics_test_depth"), adds("metrics_test_depth")),
            (2, 3)
        );
        q.done(&"a");
        assert_eq!(q.get().await, Some("b"));
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(depth("metrics_test_depth"), 0);
        // Items a stopped queue will never hand out leave the depth.
        q.add("c");
        q.add("d");
        assert_eq!(depth("metrics_test_depth"), 2);
        q.shut_down();
        assert_eq!(depth("metrics_test_depth"), 0);
        q.add("e");
        assert_eq!(
            (depth("metrics_test_depth"), adds("metrics_test_depth")),
            (0, 5)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn queue_and_work_durations_are_observed() {
        let name = "metrics_test_durations";
        let q = Queue::named(name);
        q.add(1);
        tokio::time::advance(MS(250)).await;
        assert_eq!(q.get().await, Some(1));
        assert_eq!(observed(&FAMILIES.latency, name), (1, 0.25));
        assert_eq!(observed(&FAMILIES.work_duration, name).0, 0);
        tokio::time::advance(MS(1500)).await;
        // In progress: shown as unfinished work when gathered.
        let text = exposition();
        assert!(
            text.contains(&format!(
                "workqueue_unfinished_work_seconds{{name=\"{name}\"}} 1.5\n"
            )),
            "{text}"
        );
        assert!(text.contains(&format!(
            "workqueue_longest_running_processor_seconds{{name=\"{name}\"}} 1.5\n"
        )));
        q.done(&1);
        assert_eq!(observed(&FAMILIES.work_duration, name), (1, 1.5));
        let text = exposition();
        assert!(text.contains(&format!(
            "workqueue_unfinished_work_seconds{{name=\"{name}\"}} 0\n"
        )));
        // Upstream's buckets: 10ns up to 10s by factors of 10.
        assert!(text.contains(&format!(
            "workqueue_queue_duration_seconds_bucket{{name=\"{name}\",le=\"0.00000001\"}} 0\n"
        )));
        assert!(text.contains(&format!(
            "workqueue_queue_duration_seconds_bucket{{name=\"{name}\",le=\"1\"}} 1\n"
        )));
        assert!(text.contains(&format!(
            "workqueue_work_duration_seconds_bucket{{name=\"{name}\",le=\"10\"}} 1\n"
        )));
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_and_rate_limited_adds_count_as_retries() {
        let name = "metrics_test_retries";
        let q = RateLimitingQueue::new(
            name,
            ItemExponentialFailureRateLimiter::new(MS(10), MS(100)),
        );
        q.add("x");
        assert_eq!(retries(name), 0);
        assert_eq!(q.get().await, Some("x"));
        q.add_rate_limited("x");
        q.add_after("y", MS(5));
        assert_eq!(retries(name), 2);
        q.done(&"x");
        assert_eq!(q.get().await, Some("y"));
        assert_eq!(q.get().await, Some("x"));
        assert_eq!(adds(name), 3);
        q.shut_down();
        q.add_rate_limited("z");
        assert_eq!(retries(name), 2);
    }

    #[tokio::test]
    async fn each_queue_is_labelled_by_its_name_and_unnamed_ones_not_at_all() {
        let deployments = Queue::named("metrics_test_deployment");
        let unnamed = Queue::new();
        deployments.add(1);
        unnamed.add(1);
        let text = exposition();
        for family in [
            "workqueue_depth",
            "workqueue_adds_total",
            "workqueue_retries_total",
            "workqueue_unfinished_work_seconds",
            "workqueue_longest_running_processor_seconds",
            "workqueue_queue_duration_seconds_count",
            "workqueue_work_duration_seconds_count",
        ] {
            assert!(
                text.contains(&format!("{family}{{name=\"metrics_test_deployment\"}}")),
                "{family} missing in\n{text}"
            );
        }
        assert!(!text.contains("name=\"\""), "{text}");
        assert!(text.contains("# TYPE workqueue_depth gauge\n"));
        assert!(text.contains("# TYPE workqueue_adds_total counter\n"));
        assert!(text.contains("# TYPE workqueue_queue_duration_seconds histogram\n"));
    }

    #[test]
    fn a_dropped_queue_leaves_no_depth_behind() {
        let q = Queue::named("metrics_test_dropped");
        q.add(1);
        q.add(2);
        assert_eq!(depth("metrics_test_dropped"), 2);
        drop(q);
        assert_eq!(depth("metrics_test_dropped"), 0);
    }
}
