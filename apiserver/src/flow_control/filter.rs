//! The priority-and-fairness filter (upstream's filters/priority-and-fairness.go): after
//! impersonation and before authorization, as upstream's handler chain runs it. Exempt
//! requests run at once; the rest wait for their seats, at most a quarter of their deadline,
//! and hold them until their answer is written out, a watch only while it initialises.
//! Long-running requests other than watches (exec, logs, proxy) are not limited.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, HttpBody as _};
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;
use registry::auth::UserInfo;
use registry::Verb;

use super::classify::Action;
use super::metrics::metrics;
use super::queueset::{Described, Rejection, Start, Ticket};
use super::width::{self, ListQuery};
use super::{Classified, FlowControl, Level};
use crate::api::attributes::{self, Requested};

pub const FLOW_SCHEMA_UID: &str = "x-kubernetes-pf-flowschema-uid";
pub const PRIORITY_LEVEL_UID: &str = "x-kubernetes-pf-prioritylevel-uid";
/// A request without a deadline (a watch) waits at most this long.
const DEFAULT_WAIT_LIMIT: Duration = Duration::from_secs(15);
const MAX_WAIT_LIMIT: Duration = Duration::from_secs(60);

pub async fn filter(
    State(flow_control): State<Arc<FlowControl>>,
    mut request: Request,
    next: Next,
) -> Response {
    let requested = attributes::ensure(&mut request).clone();
    let watch = matches!(&requested, Requested::Resource(info) if info.verb == Some(Verb::Watch));
    if requested.long_running() && !watch {
        return next.run(request).await;
    }
    let user = request
        .extensions()
        .get::<UserInfo>()
        .cloned()
        .unwrap_or_else(UserInfo::anonymous);
    let action = action(&requested, request.method().as_str());
    let Some(classified) = flow_control.classify(&user, &action) else {
        return next.run(request).await;
    };
    let labels = [
        classified.level.name.clone(),
        classified.schema.name.clone(),
    ];
    let labels = [labels[0].as_str(), labels[1].as_str()];
    let query = ListQuery::parse(request.uri().query());
    let (resource_key, max_seats) = match &requested {
        Requested::Resource(info) => (
            crate::metrics::resource_name(&info.group, &info.resource),
            classified.level.lock().seats.max_seats,
        ),
        Requested::NonResource { .. } => (String::new(), 0),
    };
    let work = width::estimate(
        &flow_control.estimator,
        action.verb(),
        &query,
        flow_control.stored(&resource_key),
        flow_control.watchers(&resource_key),
        max_seats,
    );
    metrics()
        .work_estimated_seats
        .with_label_values(&labels)
        .observe(f64::from(work.max_seats()));
    let described = describe(&requested, &user, &classified, request.uri().path());
    let wait_limit = wait_limit(&flow_control, &query_timeout(request.uri().query()), watch);
    let arrived = Instant::now();
    let ticket = match admit(&classified, work, described, wait_limit, &labels).await {
        Ok(ticket) => ticket,
        Err(rejection) => {
            crate::limits::discard_body(request).await;
            return reject(&flow_control, &classified, rejection, &labels);
        }
    };
    metrics()
        .wait
        .with_label_values(&[labels[0], labels[1], "true"])
        .observe(arrived.elapsed().as_secs_f64());
    metrics().dispatched.with_label_values(&labels).inc();
    let watching = match &requested {
        Requested::Resource(_) if watch => Some(flow_control.watching(&resource_key)),
        _ => None,
    };
    let executing = Executing::new(classified.level.clone(), ticket, &labels, watch);
    let mut response = next.run(request).await;
    note(&mut response, &classified);
    // A watch has initialised once its answer starts: it gives its seats back and streams on
    // (counted among the resource's watchers until it ends).
    if watch {
        drop(executing);
        return hold_until_written(response, watching);
    }
    if response.body().size_hint().exact().is_some() {
        return response;
    }
    // A streamed answer (a large list) is still the request's work.
    hold_until_written(response, Some(executing))
}

/// Keeps `held` until the body is written out (or dropped).
fn hold_until_written<T: Send + 'static>(response: Response, held: Option<T>) -> Response {
    let Some(held) = held else { return response };
    response.map(|body| {
        Body::from_stream(body.into_data_stream().map(move |chunk| {
            let _ = &held;
            chunk
        }))
    })
}

/// Waits in the queue for the request's seats.
async fn admit(
    classified: &Classified,
    work: width::WorkEstimate,
    described: Described,
    wait_limit: Duration,
    labels: &[&str; 2],
) -> Result<Ticket, Rejection> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let id = {
        let mut state = classified.level.lock();
        let now = Instant::now();
        match state
            .queues
            .start(now, classified.hash, work, described, tx)
        {
            Start::Dispatched(ticket) => return Ok(ticket),
            Start::Rejected(rejection, _) => return Err(rejection),
            Start::Queued(id) => {
                state.dispatch(now);
                id
            }
        }
    };
    let inqueue = metrics().inqueue.with_label_values(labels);
    inqueue.inc();
    // Leaves the queue if the client goes away while waiting.
    let mut waiting = Waiting {
        level: classified.level.clone(),
        id: Some(id),
        rx,
    };
    let result = tokio::time::timeout(wait_limit, &mut waiting.rx).await;
    inqueue.dec();
    waiting.id = None;
    match result {
        Ok(Ok(ticket)) => Ok(ticket),
        Ok(Err(_)) => Err(Rejection::Cancelled),
        Err(_) => {
            let mut state = classified.level.lock();
            if state.queues.cancel(Instant::now(), id).is_some() {
                return Err(Rejection::TimeOut);
            }
            drop(state);
            // Dispatched just as the wait ran out: the ticket is already sent.
            waiting.rx.try_recv().map_err(|_| Rejection::TimeOut)
        }
    }
}

struct Waiting {
    level: Arc<Level>,
    id: Option<u64>,
    rx: tokio::sync::oneshot::Receiver<Ticket>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let now = Instant::now();
        let mut state = self.level.lock();
        if state.queues.cancel(now, id).is_none() {
            // Dispatched, but nobody is left to run it: its seats go back.
            if let Ok(mut ticket) = self.rx.try_recv() {
                state.queues.finish(now, &mut ticket);
                state.dispatch(now);
            }
        }
    }
}

/// A dispatched request's seats and gauges, given back when dropped; final seats are kept
/// for the estimate's additional latency.
struct Executing {
    level: Arc<Level>,
    ticket: Option<Ticket>,
    labels: [String; 2],
    watch: bool,
}

impl Executing {
    fn new(level: Arc<Level>, ticket: Ticket, labels: &[&str; 2], watch: bool) -> Self {
        let m = metrics();
        m.executing_requests.with_label_values(labels).inc();
        m.executing_seats
            .with_label_values(labels)
            .add(i64::from(ticket.work().max_seats()));
        Self {
            level,
            ticket: Some(ticket),
            labels: [labels[0].to_string(), labels[1].to_string()],
            watch,
        }
    }
}

impl Drop for Executing {
    fn drop(&mut self) {
        let Some(mut ticket) = self.ticket.take() else {
            return;
        };
        let labels = [self.labels[0].as_str(), self.labels[1].as_str()];
        let m = metrics();
        m.executing_requests.with_label_values(&labels).dec();
        m.executing_seats
            .with_label_values(&labels)
            .sub(i64::from(ticket.work().max_seats()));
        let kind = if self.watch { "watch" } else { "regular" };
        m.execution
            .with_label_values(&[labels[0], labels[1], kind])
            .observe(ticket.dispatched.elapsed().as_secs_f64());
        let now = Instant::now();
        let mut state = self.level.lock();
        let holds = state.queues.end_execution(now, &mut ticket);
        state.dispatch(now);
        drop(state);
        if holds {
            let level = self.level.clone();
            let latency = ticket.work().additional_latency;
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(async move {
                        tokio::time::sleep(latency).await;
                        let now = Instant::now();
                        let mut state = level.lock();
                        state.queues.finish(now, &mut ticket);
                        state.dispatch(now);
                    });
                }
                Err(_) => {
                    let mut state = level.lock();
                    state.queues.finish(now, &mut ticket);
                    state.dispatch(now);
                }
            }
        }
    }
}

fn reject(
    flow_control: &FlowControl,
    classified: &Classified,
    rejection: Rejection,
    labels: &[&str; 2],
) -> Response {
    let m = metrics();
    m.rejected
        .with_label_values(&[labels[0], labels[1], rejection.reason()])
        .inc();
    m.wait
        .with_label_values(&[labels[0], labels[1], "false"])
        .observe(0.0);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    flow_control.dropped.record(&classified.level.name, now);
    let retry_after = flow_control.dropped.retry_after(&classified.level.name);
    let mut refused = crate::limits::too_many_requests(u64::try_from(retry_after).unwrap_or(1));
    note(&mut refused, classified);
    refused
}

/// Upstream's headers naming the schema and level that classified the request.
fn note(response: &mut Response, classified: &Classified) {
    let level_uid = classified.level.lock().spec.uid.clone();
    for (name, value) in [
        (FLOW_SCHEMA_UID, classified.schema.uid.as_str()),
        (PRIORITY_LEVEL_UID, level_uid.as_str()),
    ] {
        if let Ok(value) = HeaderValue::from_str(value) {
            response
                .headers_mut()
                .insert(HeaderName::from_static(name), value);
        }
    }
}

/// The request as the FlowSchemas' rules see it.
pub fn action(requested: &Requested, method: &str) -> Action {
    match requested {
        Requested::Resource(info) => Action::Resource {
            verb: info
                .verb
                .map(|v| v.as_str().to_string())
                .unwrap_or_else(|| method.to_ascii_lowercase()),
            group: info.group.clone(),
            resource: match &info.subresource {
                Some(sub) => format!("{}/{sub}", info.resource),
                None => info.resource.clone(),
            },
            namespace: info.namespace.clone().unwrap_or_default(),
        },
        Requested::NonResource { verb, path } => Action::NonResource {
            verb: verb.clone(),
            path: path.clone(),
        },
    }
}

fn describe(
    requested: &Requested,
    user: &UserInfo,
    classified: &Classified,
    path: &str,
) -> Described {
    let mut described = Described {
        flow_schema: classified.schema.name.clone(),
        distinguisher: classified.distinguisher.clone(),
        user: user.name.clone(),
        path: path.to_string(),
        ..Described::default()
    };
    match requested {
        Requested::Resource(info) => {
            described.verb = info
                .verb
                .map(|v| v.as_str().to_string())
                .unwrap_or_default();
            described.namespace = info.namespace.clone().unwrap_or_default();
            described.name = info.name.clone().unwrap_or_default();
            described.api_version = match info.group.as_str() {
                "" => info.version.clone(),
                group => format!("{group}/{}", info.version),
            };
            described.resource = info.resource.clone();
            described.subresource = info.subresource.clone().unwrap_or_default();
        }
        Requested::NonResource { verb, .. } => described.verb = verb.clone(),
    }
    described
}

fn query_timeout(query: Option<&str>) -> Option<Duration> {
    query?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key == "timeout")
            .then(|| crate::options::parse_duration(value).ok())
            .flatten()
    })
}

/// A quarter of the request's deadline (the server's timeout, or its own shorter one), at
/// most a minute; requests without one (watches) wait the default.
fn wait_limit(flow_control: &FlowControl, asked: &Option<Duration>, watch: bool) -> Duration {
    let deadline = match (
        flow_control.request_timeout(),
        asked.filter(|t| !t.is_zero()),
    ) {
        _ if watch => None,
        (Some(server), Some(asked)) => Some(server.min(asked)),
        (server, asked) => server.or(asked),
    };
    deadline
        .map(|d| d / 4)
        .unwrap_or(DEFAULT_WAIT_LIMIT)
        .min(MAX_WAIT_LIMIT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A level of one seat and one queue of one, for user `t`.
    fn tiny() -> (Arc<FlowControl>, Classified) {
        // 6 server seats: the tiny level's one share against catch-all's five gives it one.
        let flow_control = FlowControl::new(6, None);
        let level = json!({"metadata": {"name": "tiny", "uid": "u"}, "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 1, "lendablePercent": 0, "borrowingLimitPercent": 0,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 1}}}}});
        let schema = json!({"metadata": {"name": "tiny"}, "spec": {
            "priorityLevelConfiguration": {"name": "tiny"}, "matchingPrecedence": 10,
            "rules": [{"subjects": [{"kind": "User", "user": {"name": "t"}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}]}]}});
        flow_control.reload(&[schema], &[level]);
        let user = UserInfo {
            name: "t".into(),
            ..Default::default()
        };
        let action = Action::Resource {
            verb: "get".into(),
            group: String::new(),
            resource: "pods".into(),
            namespace: "d".into(),
        };
        let classified = flow_control.classify(&user, &action).expect("classified");
        assert_eq!(classified.level.name, "tiny");
        assert_eq!(classified.level.lock().current_limit, 1);
        (flow_control, classified)
    }

    const LABELS: [&str; 2] = ["tiny", "tiny"];

    async fn admit_one(classified: &Classified, wait: Duration) -> Result<Ticket, Rejection> {
        let work = width::WorkEstimate::seats(1);
        admit(classified, work, Described::default(), wait, &LABELS).await
    }

    #[tokio::test]
    async fn a_full_queue_and_a_long_wait_are_refused() {
        let (_fc, classified) = tiny();
        let classified = Arc::new(classified);
        let mut first = admit_one(&classified, Duration::from_secs(5))
            .await
            .expect("runs at once");
        // The second waits in the one queue; a third finds it full.
        let waiting = {
            let c = classified.clone();
            tokio::spawn(async move { admit_one(&c, Duration::from_secs(5)).await })
        };
        while classified.level.lock().queues.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        assert!(matches!(
            admit_one(&classified, Duration::from_secs(5)).await,
            Err(Rejection::QueueFull)
        ));
        // The first ends: the second gets the seat.
        {
            let mut state = classified.level.lock();
            state.queues.finish(Instant::now(), &mut first);
            state.dispatch(Instant::now());
        }
        let mut second = waiting.await.expect("task").expect("dispatched");
        // A request that waits past its limit is refused and leaves the queue.
        assert!(matches!(
            admit_one(&classified, Duration::from_millis(30)).await,
            Err(Rejection::TimeOut)
        ));
        assert_eq!(classified.level.lock().queues.waiting(), 0);
        // A waiter whose client goes away leaves the queue too.
        let gone = {
            let c = classified.clone();
            tokio::spawn(async move { admit_one(&c, Duration::from_secs(5)).await })
        };
        while classified.level.lock().queues.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        gone.abort();
        let _ = gone.await;
        assert_eq!(classified.level.lock().queues.waiting(), 0);
        let mut state = classified.level.lock();
        state.queues.finish(Instant::now(), &mut second);
        assert!(state.queues.is_idle());
    }

    #[test]
    fn wait_limits_are_a_quarter_of_the_deadline() {
        let fc = FlowControl::new(600, Some(Duration::from_secs(60)));
        assert_eq!(wait_limit(&fc, &None, false), Duration::from_secs(15));
        assert_eq!(
            wait_limit(&fc, &Some(Duration::from_secs(8)), false),
            Duration::from_secs(2)
        );
        assert_eq!(wait_limit(&fc, &None, true), DEFAULT_WAIT_LIMIT);
        let fc = FlowControl::new(600, Some(Duration::from_secs(600)));
        assert_eq!(wait_limit(&fc, &None, false), MAX_WAIT_LIMIT);
    }
}
