//! The priority-and-fairness filter (upstream's filters/priority-and-fairness.go): after
//! impersonation and before authorization, as upstream's handler chain runs it. Exempt
//! requests run at once; the rest wait for their seats, at most a quarter of their deadline,
//! and hold them until their answer is written out, a watch only while it initialises (until
//! its initial events have gone out). A request whose client leaves while it waits leaves its
//! queue at once. Long-running requests other than watches (exec, logs, proxy) are not
//! limited.

use std::sync::Arc;
use std::task::Poll;
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
use super::metrics::{metrics, request_kind};
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
    // A service account token is created without an event (upstream's one exemption from
    // the watchers' cost).
    let no_event = matches!(&requested, Requested::Resource(info)
        if info.resource == "serviceaccounts" && info.subresource.as_deref() == Some("token"));
    let watchers = if no_event {
        0
    } else {
        flow_control.watchers(&resource_key)
    };
    if width::is_mutating(action.verb()) && !no_event {
        metrics()
            .watch_count
            .with_label_values(&labels)
            .observe(watchers as f64);
    }
    let work = width::estimate(
        &flow_control.estimator,
        action.verb(),
        &query,
        flow_control.stored(&resource_key),
        watchers,
        max_seats,
    );
    metrics()
        .work_estimated_seats
        .with_label_values(&labels)
        .observe(f64::from(work.max_seats()));
    let described = describe(&requested, &user, &classified, request.uri().path());
    let wait_limit = wait_limit(&flow_control, &query_timeout(request.uri().query()), watch);
    let arrived = Instant::now();
    let ended = request
        .extensions()
        .get::<crate::limits::RequestEnded>()
        .map(|e| e.0.clone())
        .unwrap_or_default();
    let admitted = tokio::select! {
        admitted = admit(&flow_control, &classified, work, described, wait_limit, &labels) => admitted,
        // The request ended while it waited (its client left): dropping the wait takes it out
        // of its queue. Nobody is left to answer.
        () = ended.cancelled() => return Response::default(),
    };
    let ticket = match admitted {
        Ok(ticket) => ticket,
        Err(rejection) => {
            crate::limits::discard_body(request).await;
            return reject(&flow_control, &classified, rejection, &labels, arrived);
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
    let kind = request_kind(action.verb());
    let executing = Executing::new(
        &flow_control,
        &classified.level,
        ticket,
        &labels,
        kind,
        watch,
    );
    let mut response = next.run(request).await;
    note(&mut response, &classified);
    // A watch holds its seats while it initialises: until the events it has at once (its
    // initial state, or its backlog) have been taken by the connection, which is where
    // upstream's watch cache signals initialization. Then it streams on, counted among the
    // resource's watchers until it ends.
    if watch {
        let response = hold_until_initialised(response, executing);
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

/// Keeps `held` until the body has nothing ready to send (its stream would wait), or ends.
fn hold_until_initialised<T: Send + 'static>(response: Response, held: T) -> Response {
    response.map(|body| {
        let mut events = body.into_data_stream();
        let mut held = Some(held);
        Body::from_stream(futures::stream::poll_fn(move |cx| {
            let next = events.poll_next_unpin(cx);
            if !matches!(next, Poll::Ready(Some(_))) {
                held.take();
            }
            next
        }))
    })
}

/// Waits in the queue for the request's seats.
async fn admit(
    flow_control: &Arc<FlowControl>,
    classified: &Classified,
    work: width::WorkEstimate,
    described: Described,
    wait_limit: Duration,
    labels: &[&str; 2],
) -> Result<Ticket, Rejection> {
    let kind = request_kind(&described.verb);
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
            Start::Queued(id, length) => {
                metrics()
                    .queue_length
                    .with_label_values(labels)
                    .observe(length as f64);
                state.dispatch(now);
                id
            }
        }
    };
    // Leaves the queue if the client goes away while waiting.
    let mut waiting = Waiting::new(
        flow_control,
        classified,
        id,
        rx,
        work.max_seats(),
        labels,
        kind,
    );
    let result = tokio::time::timeout(wait_limit, &mut waiting.rx).await;
    waiting.id = None;
    match result {
        Ok(Ok(ticket)) => Ok(ticket),
        // Taken out of its queue without a ticket: as upstream, a wait that ends unserved.
        Ok(Err(_)) => Err(Rejection::TimeOut),
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

/// A queued request: counted in the in-queue gauges while it lives. Dropped while still
/// queued (`id` set: its client went away, so the server dropped the request), it leaves its
/// queue at once and is counted as upstream counts a request whose context ended in its
/// queue: rejected for `time-out`.
struct Waiting {
    flow_control: Arc<FlowControl>,
    level: Arc<Level>,
    id: Option<u64>,
    rx: tokio::sync::oneshot::Receiver<Ticket>,
    seats: u32,
    labels: [String; 2],
    kind: &'static str,
    arrived: Instant,
}

impl Waiting {
    fn new(
        flow_control: &Arc<FlowControl>,
        classified: &Classified,
        id: u64,
        rx: tokio::sync::oneshot::Receiver<Ticket>,
        seats: u32,
        labels: &[&str; 2],
        kind: &'static str,
    ) -> Self {
        let m = metrics();
        m.read_vs_write("waiting", kind).add(1.0);
        m.inqueue.with_label_values(labels).inc();
        m.inqueue_seats
            .with_label_values(labels)
            .add(i64::from(seats));
        Self {
            flow_control: flow_control.clone(),
            level: classified.level.clone(),
            id: Some(id),
            rx,
            seats,
            labels: [labels[0].to_string(), labels[1].to_string()],
            kind,
            arrived: Instant::now(),
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let labels = [self.labels[0].as_str(), self.labels[1].as_str()];
        let m = metrics();
        m.read_vs_write("waiting", self.kind).add(-1.0);
        m.inqueue.with_label_values(&labels).dec();
        m.inqueue_seats
            .with_label_values(&labels)
            .sub(i64::from(self.seats));
        let Some(id) = self.id.take() else { return };
        let now = Instant::now();
        let mut state = self.level.lock();
        if state.queues.cancel(now, id).is_some() {
            drop(state);
            m.rejected
                .with_label_values(&[labels[0], labels[1], Rejection::TimeOut.reason()])
                .inc();
            // Upstream labels the wait of a request that got into a queue `execute="true"`
            // even when it left without executing.
            m.wait
                .with_label_values(&[labels[0], labels[1], "true"])
                .observe(self.arrived.elapsed().as_secs_f64());
        } else {
            // Dispatched, but nobody is left to run it: its seats go back.
            if let Ok(mut ticket) = self.rx.try_recv() {
                state.queues.finish(now, &mut ticket);
                state.dispatch(now);
            }
            drop(state);
        }
        self.flow_control.maybe_reap(&self.level);
    }
}

/// A dispatched request's seats and gauges, given back when dropped; final seats are kept
/// for the estimate's additional latency.
struct Executing {
    flow_control: Arc<FlowControl>,
    level: Arc<Level>,
    ticket: Option<Ticket>,
    labels: [String; 2],
    kind: &'static str,
    watch: bool,
}

impl Executing {
    fn new(
        flow_control: &Arc<FlowControl>,
        level: &Arc<Level>,
        ticket: Ticket,
        labels: &[&str; 2],
        kind: &'static str,
        watch: bool,
    ) -> Self {
        let m = metrics();
        m.read_vs_write("executing", kind).add(1.0);
        m.executing_requests.with_label_values(labels).inc();
        m.executing_seats
            .with_label_values(labels)
            .add(i64::from(ticket.work().max_seats()));
        Self {
            flow_control: flow_control.clone(),
            level: level.clone(),
            ticket: Some(ticket),
            labels: [labels[0].to_string(), labels[1].to_string()],
            kind,
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
        m.read_vs_write("executing", self.kind).add(-1.0);
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
        if !holds {
            self.flow_control.maybe_reap(&self.level);
            return;
        }
        let (flow_control, level) = (self.flow_control.clone(), self.level.clone());
        let latency = ticket.work().additional_latency;
        let mut finish = move || {
            let now = Instant::now();
            let mut state = level.lock();
            state.queues.finish(now, &mut ticket);
            state.dispatch(now);
            drop(state);
            flow_control.maybe_reap(&level);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    tokio::time::sleep(latency).await;
                    finish();
                });
            }
            Err(_) => finish(),
        }
    }
}

fn reject(
    flow_control: &FlowControl,
    classified: &Classified,
    rejection: Rejection,
    labels: &[&str; 2],
    arrived: Instant,
) -> Response {
    let m = metrics();
    m.rejected
        .with_label_values(&[labels[0], labels[1], rejection.reason()])
        .inc();
    // Upstream's `execute` label says whether the request got into a queue: refused at the
    // door "false", refused after waiting "true".
    let queued = rejection == Rejection::TimeOut;
    m.wait
        .with_label_values(&[labels[0], labels[1], if queued { "true" } else { "false" }])
        .observe(arrived.elapsed().as_secs_f64());
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
#[path = "filter_tests.rs"]
mod tests;
