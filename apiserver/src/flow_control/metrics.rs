//! `apiserver_flowcontrol_*`: upstream's names, labels and buckets (flowcontrol/metrics),
//! registered in the server's one registry (see [`crate::metrics`]).

use std::sync::LazyLock;

use prometheus::{Gauge, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts};

const PL_FS: [&str; 2] = ["priority_level", "flow_schema"];

/// Upstream's request wait and execution buckets.
const QUEUE_BUCKETS: [f64; 13] = [
    0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0,
];
const EXECUTION_BUCKETS: [f64; 12] = [
    0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0,
];

pub struct FlowMetrics {
    pub dispatched: IntCounterVec,
    pub rejected: IntCounterVec,
    pub inqueue: IntGaugeVec,
    pub executing_requests: IntGaugeVec,
    pub executing_seats: IntGaugeVec,
    pub wait: HistogramVec,
    pub execution: HistogramVec,
    pub work_estimated_seats: HistogramVec,
    pub nominal_limit: GaugeVec,
    pub current_limit: GaugeVec,
    pub lower_limit: GaugeVec,
    pub upper_limit: GaugeVec,
    pub concurrency_limit: GaugeVec,
    pub current_r: GaugeVec,
    pub demand_smoothed: GaugeVec,
    pub seat_fair_frac: Gauge,
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

fn gauge(name: &str, help: &str) -> GaugeVec {
    GaugeVec::new(opts(name, help), &["priority_level"]).expect("valid metric")
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
            executing_requests: int_gauge("current_executing_requests", "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem", &PL_FS),
            executing_seats: int_gauge("current_executing_seats", "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem", &PL_FS),
            wait: histogram("request_wait_duration_seconds", "Length of time a request spent waiting in its queue", &["priority_level", "flow_schema", "execute"], &QUEUE_BUCKETS),
            execution: histogram("request_execution_seconds", "Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem", &["priority_level", "flow_schema", "type"], &EXECUTION_BUCKETS),
            work_estimated_seats: histogram("work_estimated_seats", "Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness", &PL_FS, &[1.0, 2.0, 4.0, 10.0]),
            nominal_limit: gauge("nominal_limit_seats", "Nominal number of execution seats configured for each priority level"),
            current_limit: gauge("current_limit_seats", "current derived number of execution seats available to each priority level"),
            lower_limit: gauge("lower_limit_seats", "Configured lower bound on number of execution seats available to each priority level"),
            upper_limit: gauge("upper_limit_seats", "Configured upper bound on number of execution seats available to each priority level"),
            concurrency_limit: gauge("request_concurrency_limit", "Nominal number of execution seats configured for each priority level"),
            current_r: gauge("current_r", "R(time of last change)"),
            demand_smoothed: gauge("demand_seats_smoothed", "Smoothed seat demands"),
            seat_fair_frac: Gauge::with_opts(opts("seat_fair_frac", "Fair fraction of server's concurrency to allocate to each priority level that can use it")).expect("valid metric"),
        }
    }
}

/// Adds the families to the server's registry.
pub fn register(registry: &prometheus::Registry) -> prometheus::Result<()> {
    let m = metrics();
    registry.register(Box::new(m.dispatched.clone()))?;
    registry.register(Box::new(m.rejected.clone()))?;
    registry.register(Box::new(m.inqueue.clone()))?;
    registry.register(Box::new(m.executing_requests.clone()))?;
    registry.register(Box::new(m.executing_seats.clone()))?;
    registry.register(Box::new(m.wait.clone()))?;
    registry.register(Box::new(m.execution.clone()))?;
    registry.register(Box::new(m.work_estimated_seats.clone()))?;
    registry.register(Box::new(m.nominal_limit.clone()))?;
    registry.register(Box::new(m.current_limit.clone()))?;
    registry.register(Box::new(m.lower_limit.clone()))?;
    registry.register(Box::new(m.upper_limit.clone()))?;
    registry.register(Box::new(m.concurrency_limit.clone()))?;
    registry.register(Box::new(m.current_r.clone()))?;
    registry.register(Box::new(m.demand_smoothed.clone()))?;
    registry.register(Box::new(m.seat_fair_frac.clone()))?;
    Ok(())
}
