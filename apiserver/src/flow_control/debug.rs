//! `/debug/api_priority_and_fairness/dump_*` (upstream's apf_controller_debug.go): the
//! levels, their queues and their waiting requests as comma-separated columns aligned as Go's
//! tabwriter aligns them (minimum width 8, padding 1). Behind authorization like any
//! non-resource path.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::FlowControl;

pub fn router(flow_control: Arc<FlowControl>) -> Router {
    Router::new()
        .route(
            "/debug/api_priority_and_fairness/dump_priority_levels",
            get(priority_levels),
        )
        .route("/debug/api_priority_and_fairness/dump_queues", get(queues))
        .route(
            "/debug/api_priority_and_fairness/dump_requests",
            get(requests),
        )
        .with_state(flow_control)
}

fn text(rows: Vec<Vec<String>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        tabulate(&rows),
    )
        .into_response()
}

async fn priority_levels(State(fc): State<Arc<FlowControl>>) -> Response {
    let mut rows = vec![strings(&[
        "PriorityLevelName",
        "ActiveQueues",
        "IsIdle",
        "IsQuiescing",
        "WaitingRequests",
        "ExecutingRequests",
    ])];
    for level in fc.levels() {
        let state = level.lock();
        // The exempt level has no queues: its requests all execute at once.
        let dump = state.queues.dump();
        let active = dump.queues.iter().filter(|q| !q.waiting.is_empty()).count();
        rows.push(vec![
            level.name.clone(),
            active.to_string(),
            state.queues.is_idle().to_string(),
            state.quiescing.to_string(),
            dump.waiting.to_string(),
            dump.executing.to_string(),
        ]);
    }
    text(rows)
}

async fn queues(State(fc): State<Arc<FlowControl>>) -> Response {
    let mut rows = vec![strings(&[
        "PriorityLevelName",
        "Index",
        "PendingRequests",
        "ExecutingRequests",
        "SeatsInUse",
        "NextDispatchR",
        "InitialSeatsSum",
        "MaxSeatsSum",
        "TotalWorkSum",
    ])];
    for level in fc.levels() {
        let state = level.lock();
        for (i, q) in state.queues.dump().queues.iter().enumerate() {
            rows.push(vec![
                level.name.clone(),
                i.to_string(),
                q.waiting.len().to_string(),
                q.executing.to_string(),
                q.seats_in_use.to_string(),
                seat_seconds(q.next_dispatch_r),
                q.initial_seats_sum.to_string(),
                q.max_seats_sum.to_string(),
                seat_seconds(q.total_work_sum),
            ]);
        }
    }
    text(rows)
}

#[derive(serde::Deserialize)]
struct RequestsQuery {
    #[serde(rename = "includeRequestDetails")]
    include_request_details: Option<String>,
}

async fn requests(State(fc): State<Arc<FlowControl>>, Query(q): Query<RequestsQuery>) -> Response {
    let details = q.include_request_details.is_some_and(|v| !v.is_empty());
    let mut header = strings(&[
        "PriorityLevelName",
        "FlowSchemaName",
        "QueueIndex",
        "RequestIndexInQueue",
        "FlowDistingsher",
        "ArriveTime",
        "InitialSeats",
        "FinalSeats",
        "AdditionalLatency",
    ]);
    if details {
        header.extend(strings(&[
            "UserName",
            "Verb",
            "APIPath",
            "Namespace",
            "Name",
            "APIVersion",
            "Resource",
            "SubResource",
        ]));
    }
    let mut rows = vec![header];
    let (now, wall) = (Instant::now(), SystemTime::now());
    for level in fc.levels() {
        let state = level.lock();
        for (iq, q) in state.queues.dump().queues.iter().enumerate() {
            for (ir, r) in q.waiting.iter().enumerate() {
                let arrived = wall - now.duration_since(r.arrived);
                let d = &r.described;
                let mut row = vec![
                    level.name.clone(),
                    d.flow_schema.clone(),
                    iq.to_string(),
                    ir.to_string(),
                    d.distinguisher.clone(),
                    rfc3339_nano(arrived),
                    r.work.initial_seats.to_string(),
                    r.work.final_seats.to_string(),
                    go_duration(r.work.additional_latency),
                ];
                if details {
                    row.extend([
                        d.user.clone(),
                        d.verb.clone(),
                        d.path.clone(),
                        d.namespace.clone(),
                        d.name.clone(),
                        d.api_version.clone(),
                        d.resource.clone(),
                        d.subresource.clone(),
                    ]);
                }
                rows.push(row);
            }
        }
    }
    text(rows)
}

/// Go's RFC3339Nano in UTC: nanoseconds without trailing zeros.
fn rfc3339_nano(t: SystemTime) -> String {
    let text = chrono::DateTime::<chrono::Utc>::from(t)
        .format("%Y-%m-%dT%H:%M:%S%.9f")
        .to_string();
    let trimmed = text.trim_end_matches('0').trim_end_matches('.');
    format!("{trimmed}Z")
}

fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| s.to_string()).collect()
}

/// Upstream's SeatSeconds text: 8 decimals and `ss`.
fn seat_seconds(value: f64) -> String {
    format!("{value:.8}ss")
}

/// Go's time.Duration text for the durations the estimates use.
fn go_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    let trim = |v: f64| {
        let s = format!("{v:.9}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    match nanos {
        0 => "0s".into(),
        n if n < 1_000 => format!("{n}ns"),
        n if n < 1_000_000 => format!("{}µs", trim(n as f64 / 1e3)),
        n if n < 1_000_000_000 => format!("{}ms", trim(n as f64 / 1e6)),
        n => format!("{}s", trim(n as f64 / 1e9)),
    }
}

/// Rows joined with `,` and aligned as Go's tabwriter (minwidth 8, padding 1, spaces) aligns
/// `,\t`-separated cells: every cell but a row's last is padded to its column's width.
fn tabulate(rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(row.len().saturating_sub(1)) {
            let width = (cell.chars().count() + 2).max(8);
            if widths.len() <= i {
                widths.push(width);
            } else {
                widths[i] = widths[i].max(width);
            }
        }
    }
    let mut out = String::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if i + 1 < row.len() {
                let padded = format!("{cell},");
                out.push_str(&format!("{padded:<width$}", width = widths[i]));
            } else {
                out.push_str(cell);
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_as_go_tabwriter() {
        let rows = vec![
            strings(&["PriorityLevelName", "Index", "X"]),
            strings(&["a", "12345678", "y"]),
        ];
        assert_eq!(
            tabulate(&rows),
            "PriorityLevelName, Index,    X\na,                 12345678, y\n"
        );
    }

    #[test]
    fn durations_print_as_go() {
        assert_eq!(go_duration(Duration::ZERO), "0s");
        assert_eq!(go_duration(Duration::from_millis(15)), "15ms");
        assert_eq!(go_duration(Duration::from_micros(1500)), "1.5ms");
        assert_eq!(go_duration(Duration::from_millis(2500)), "2.5s");
        assert_eq!(seat_seconds(0.003), "0.00300000ss");
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_500);
        assert_eq!(rfc3339_nano(t), "1970-01-01T00:00:01.5Z");
        assert_eq!(rfc3339_nano(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }
}
