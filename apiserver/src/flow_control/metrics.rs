//! `apiserver_flowcontrol_*`: upstream's names, labels and buckets (flowcontrol/metrics),
//! registered in the server's one registry (see [`crate::metrics`]).

use std::sync::LazyLock;

use prometheus::core::Collector;
use prometheus::{Gauge, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts};

use super::timing::{Ratioed, TimingRatioVec};

const PL: [&str; 1] = ["priority_level"];
const PL_FS: [&str; 2] = ["priority_level", "flow_schema"];

/// Upstream's request wait and execution buckets (`requestDurationSecondsBuckets`).
const DURATION_BUCKETS: [f64; 13] = [
    0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0,
];
/// Upstream's `queueLengthBuckets`.
const QUEUE_LENGTH_BUCKETS: [f64; 8] = [0.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0];
const WATCH_COUNT_BUCKETS: [f64; 6] = [0.0, 1.0, 10.0, 100.0, 1000.0, 10000.0];
const SEATS_BUCKETS: [f64; 8] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 100.0];
/// Upstream's buckets of the timing ratio histograms (both 0.99 and 1 where saturation shows).
const SEAT_UTILIZATION_BUCKETS: [f64; 13] = [
    0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0,
];
const REQUEST_UTILIZATION_BUCKETS: [f64; 10] =
    [0.0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.25, 0.5, 0.75, 1.0];
const READ_VS_WRITE_BUCKETS: [f64; 15] = [
    0.0, 0.001, 0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0,
];
const DEMAND_BUCKETS: [f64; 12] = [0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.7, 2.0, 2.8, 4.0, 6.0];

pub struct FlowMetrics {
    pub dispatched: IntCounterVec,
    pub rejected: IntCounterVec,
    pub inqueue: IntGaugeVec,
    pub inqueue_seats: IntGaugeVec,
    pub queue_length: HistogramVec,
    pub executing_requests: IntGaugeVec,
    pub executing_seats: IntGaugeVec,
    pub wait: HistogramVec,
    pub execution: HistogramVec,
    pub watch_count: HistogramVec,
    pub epoch_advance: IntCounterVec,
    pub work_estimated_seats: HistogramVec,
    pub no_accommodation: IntCounterVec,
    pub current_r: GaugeVec,
    pub dispatch_r: GaugeVec,
    pub latest_s: GaugeVec,
    pub next_s_bounds: GaugeVec,
    pub next_discounted_s_bounds: GaugeVec,
    pub nominal_limit: GaugeVec,
    pub lower_limit: GaugeVec,
    pub upper_limit: GaugeVec,
    pub current_limit: GaugeVec,
    pub demand_high_watermark: GaugeVec,
    pub demand_average: GaugeVec,
    pub demand_stdev: GaugeVec,
    pub demand_smoothed: GaugeVec,
    pub target_seats: GaugeVec,
    pub seat_fair_frac: Gauge,
    pub seat_utilization: TimingRatioVec,
    pub request_utilization: TimingRatioVec,
    pub read_vs_write: TimingRatioVec,
    pub demand_seats: TimingRatioVec,
}

/// A level's timing ratio histograms, which its queues keep up to date.
pub struct LevelGauges {
    pub waiting: Ratioed,
    pub executing: Ratioed,
    pub seats: Ratioed,
    pub demand: Ratioed,
}

static METRICS: LazyLock<FlowMetrics> = LazyLock::new(FlowMetrics::new);

pub fn metrics() -> &'static FlowMetrics {
    &METRICS
}

fn opts(name: &str, help: &str) -> Opts {
    Opts::new(name, help)
        .namespace("apiserver")
        .subsystem("flowcontrol")
}

fn counter(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    IntCounterVec::new(opts(name, help), labels).expect("valid metric")
}

fn int_gauge(name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    IntGaugeVec::new(opts(name, help), labels).expect("valid metric")
}

fn gauge(name: &str, help: &str, labels: &[&str]) -> GaugeVec {
    GaugeVec::new(opts(name, help), labels).expect("valid metric")
}

fn timing(
    name: &str,
    help: &str,
    constant: &[(&str, &str)],
    labels: &[&str],
    buckets: &[f64],
) -> TimingRatioVec {
    TimingRatioVec::new(name, help, constant, labels, buckets).expect("valid metric")
}

fn histogram(name: &str, help: &str, labels: &[&str], buckets: &[f64]) -> HistogramVec {
    let o = HistogramOpts::new(name, help)
        .namespace("apiserver")
        .subsystem("flowcontrol")
        .buckets(buckets.to_vec());
    HistogramVec::new(o, labels).expect("valid metric")
}

impl FlowMetrics {
    fn new() -> Self {
        Self {
            dispatched: counter("dispatched_requests_total", "Number of requests executed by API Priority and Fairness subsystem", &PL_FS),
            rejected: counter("rejected_requests_total", "Number of requests rejected by API Priority and Fairness subsystem", &["priority_level", "flow_schema", "reason"]),
            inqueue: int_gauge("current_inqueue_requests", "Number of requests currently pending in queues of the API Priority and Fairness subsystem", &PL_FS),
            inqueue_seats: int_gauge("current_inqueue_seats", "Number of seats currently pending in queues of the API Priority and Fairness subsystem", &PL_FS),
            queue_length: histogram("request_queue_length_after_enqueue", "Length of queue in the API Priority and Fairness subsystem, as seen by each request after it is enqueued", &PL_FS, &QUEUE_LENGTH_BUCKETS),
            executing_requests: int_gauge("current_executing_requests", "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem", &PL_FS),
            executing_seats: int_gauge("current_executing_seats", "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem", &PL_FS),
            wait: histogram("request_wait_duration_seconds", "Length of time a request spent waiting in its queue", &["priority_level", "flow_schema", "execute"], &DURATION_BUCKETS),
            execution: histogram("request_execution_seconds", "Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem", &["priority_level", "flow_schema", "type"], &DURATION_BUCKETS),
            watch_count: histogram("watch_count_samples", "count of watchers for mutating requests in API Priority and Fairness", &PL_FS, &WATCH_COUNT_BUCKETS),
            epoch_advance: counter("epoch_advance_total", "Number of times the queueset's progress meter jumped backward", &["priority_level", "success"]),
            work_estimated_seats: histogram("work_estimated_seats", "Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness", &PL_FS, &SEATS_BUCKETS),
            no_accommodation: counter("request_dispatch_no_accommodation_total", "Number of times a dispatch attempt resulted in a non accommodation due to lack of available seats", &PL_FS),
            current_r: gauge("current_r", "R(time of last change)", &PL),
            dispatch_r: gauge("dispatch_r", "R(time of last dispatch)", &PL),
            latest_s: gauge("latest_s", "S(most recently dispatched request)", &PL),
            next_s_bounds: gauge("next_s_bounds", "min and max, over queues, of S(oldest waiting request in queue)", &["priority_level", "bound"]),
            next_discounted_s_bounds: gauge("next_discounted_s_bounds", "min and max, over queues, of S(oldest waiting request in queue) - estimated work in progress", &["priority_level", "bound"]),
            nominal_limit: gauge("nominal_limit_seats", "Nominal number of execution seats configured for each priority level", &PL),
            lower_limit: gauge("lower_limit_seats", "Configured lower bound on number of execution seats available to each priority level", &PL),
            upper_limit: gauge("upper_limit_seats", "Configured upper bound on number of execution seats available to each priority level", &PL),
            current_limit: gauge("current_limit_seats", "current derived number of execution seats available to each priority level", &PL),
            demand_high_watermark: gauge("demand_seats_high_watermark", "High watermark, over last adjustment period, of demand_seats", &PL),
            demand_average: gauge("demand_seats_average", "Time-weighted average, over last adjustment period, of demand_seats", &PL),
            demand_stdev: gauge("demand_seats_stdev", "Time-weighted standard deviation, over last adjustment period, of demand_seats", &PL),
            demand_smoothed: gauge("demand_seats_smoothed", "Smoothed seat demands", &PL),
            target_seats: gauge("target_seats", "Seat allocation targets", &PL),
            seat_fair_frac: Gauge::with_opts(opts("seat_fair_frac", "Fair fraction of server's concurrency to allocate to each priority level that can use it")).expect("valid metric"),
            seat_utilization: timing("priority_level_seat_utilization", "Observations, at the end of every nanosecond, of utilization of seats for any stage of execution (but only initial stage for WATCHes)", &[("phase", "executing")], &PL, &SEAT_UTILIZATION_BUCKETS),
            request_utilization: timing("priority_level_request_utilization", "Observations, at the end of every nanosecond, of number of requests (as a fraction of the relevant limit) waiting or in any stage of execution (but only initial stage for WATCHes)", &[], &["phase", "priority_level"], &REQUEST_UTILIZATION_BUCKETS),
            read_vs_write: timing("read_vs_write_current_requests", "Observations, at the end of every nanosecond, of the number of requests (as a fraction of the relevant limit) waiting or in regular stage of execution", &[], &["phase", "request_kind"], &READ_VS_WRITE_BUCKETS),
            demand_seats: timing("demand_seats", "Observations, at the end of every nanosecond, of (the number of seats each priority level could use) / (nominal number of seats for that level)", &[], &PL, &DEMAND_BUCKETS),
        }
    }

    fn collectors(&self) -> Vec<Box<dyn Collector>> {
        vec![
            Box::new(self.dispatched.clone()),
            Box::new(self.rejected.clone()),
            Box::new(self.inqueue.clone()),
            Box::new(self.inqueue_seats.clone()),
            Box::new(self.queue_length.clone()),
            Box::new(self.executing_requests.clone()),
            Box::new(self.executing_seats.clone()),
            Box::new(self.wait.clone()),
            Box::new(self.execution.clone()),
            Box::new(self.watch_count.clone()),
            Box::new(self.epoch_advance.clone()),
            Box::new(self.work_estimated_seats.clone()),
            Box::new(self.no_accommodation.clone()),
            Box::new(self.current_r.clone()),
            Box::new(self.dispatch_r.clone()),
            Box::new(self.latest_s.clone()),
            Box::new(self.next_s_bounds.clone()),
            Box::new(self.next_discounted_s_bounds.clone()),
            Box::new(self.nominal_limit.clone()),
            Box::new(self.lower_limit.clone()),
            Box::new(self.upper_limit.clone()),
            Box::new(self.current_limit.clone()),
            Box::new(self.demand_high_watermark.clone()),
            Box::new(self.demand_average.clone()),
            Box::new(self.demand_stdev.clone()),
            Box::new(self.demand_smoothed.clone()),
            Box::new(self.target_seats.clone()),
            Box::new(self.seat_fair_frac.clone()),
            Box::new(self.seat_utilization.clone()),
            Box::new(self.request_utilization.clone()),
            Box::new(self.read_vs_write.clone()),
            Box::new(self.demand_seats.clone()),
        ]
    }

    /// A level's own series (one label, the level), dropped with the level.
    pub fn forget_level(&self, level: &str) {
        for gauge in [
            &self.current_r,
            &self.dispatch_r,
            &self.latest_s,
            &self.nominal_limit,
            &self.lower_limit,
            &self.upper_limit,
            &self.current_limit,
            &self.demand_high_watermark,
            &self.demand_average,
            &self.demand_stdev,
            &self.demand_smoothed,
            &self.target_seats,
        ] {
            let _ = gauge.remove_label_values(&[level]);
        }
        self.seat_utilization.remove(&[level]);
        self.demand_seats.remove(&[level]);
        for phase in ["waiting", "executing"] {
            self.request_utilization.remove(&[phase, level]);
        }
        for bounds in [&self.next_s_bounds, &self.next_discounted_s_bounds] {
            for bound in ["min", "max"] {
                let _ = bounds.remove_label_values(&[level, bound]);
            }
        }
    }
}

impl FlowMetrics {
    /// `level`'s timing ratio histograms (upstream starts them at 0 of 1).
    pub fn level_gauges(&self, level: &str) -> LevelGauges {
        LevelGauges {
            waiting: self.request_utilization.with(&["waiting", level], 0.0, 1.0),
            executing: self
                .request_utilization
                .with(&["executing", level], 0.0, 1.0),
            seats: self.seat_utilization.with(&[level], 0.0, 1.0),
            demand: self.demand_seats.with(&[level], 0.0, 1.0),
        }
    }

    /// The server's requests of `kind` (`readOnly` or `mutating`) in `phase` (`waiting` or
    /// `executing`), as a fraction of all the levels' queue places or seats.
    pub fn read_vs_write(&self, phase: &str, kind: &str) -> Ratioed {
        self.read_vs_write.with(&[phase, kind], 0.0, 1.0)
    }
}

/// Upstream's request kinds (`apiserver_request_*`'s): get, list and watch read.
pub fn request_kind(verb: &str) -> &'static str {
    match verb {
        "get" | "list" | "watch" => "readOnly",
        _ => "mutating",
    }
}

/// Adds the families to the server's registry.
pub fn register(registry: &prometheus::Registry) -> prometheus::Result<()> {
    for collector in metrics().collectors() {
        registry.register(collector)?;
    }
    Ok(())
}
