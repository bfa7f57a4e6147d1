//! The audit filter (upstream's WithAuditInit and WithAudit), right after authentication: each
//! request gets an audit ID (the client's `Audit-ID`, else a new UUID), echoed in the
//! `Audit-Id` response header; the policy judges the authenticated user's request, and an
//! audited one is logged at RequestReceived, at ResponseStarted for long-running requests,
//! and at ResponseComplete when its response body ends (or Panic). Bodies are not buffered:
//! the frames going by are kept (shared, not copied) only when the level asks for them.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::Bytes;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, Extensions, HeaderMap, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use chrono::{DateTime, Utc};
use http_body_util::BodyExt;
use registry::auth::{Attributes, UserInfo};

use super::event::{self, Event, Format, ObjectReference, ResponseStatus, User};
use super::log::Entry;
use super::policy::{Level, RequestAuditConfig, Stage};
use super::Auditor;
use crate::authn::Peer;

/// upstream's Audit-ID header.
pub static AUDIT_ID: HeaderName = HeaderName::from_static("audit-id");

/// The most of a body kept for an event; a larger one is left out and the event annotated
/// `audit.k8s.io/truncated` (what upstream's truncating backend does).
const BODY_LIMIT: usize = 3 * 1024 * 1024;
/// Below RequestResponse a response is kept only to read a Status from it.
const STATUS_LIMIT: usize = 64 * 1024;

const MAX_USER_AGENT: usize = 1024;

/// The in-flight event of a request audited at Metadata or above, in its extensions for the
/// filters after audit (impersonation, authorization).
#[derive(Clone, Debug)]
pub struct Context(Arc<Mutex<Event>>);

impl Context {
    fn lock(&self) -> MutexGuard<'_, Event> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Records the user an audited request impersonates (upstream's LogImpersonatedUser).
pub fn record_impersonation(extensions: &Extensions, user: &UserInfo) {
    if let Some(context) = extensions.get::<Context>() {
        context.lock().impersonated_user = Some(User::from(user));
    }
}

/// Adds an annotation to the event of an audited request (upstream's AddAuditAnnotation,
/// e.g. `authorization.k8s.io/decision`); a key keeps its first value.
pub fn annotate(extensions: &Extensions, key: &str, value: &str) {
    if let Some(context) = extensions.get::<Context>() {
        add_annotation(context, key, value);
    }
}

fn add_annotation(context: &Context, key: &str, value: &str) {
    let mut event = context.lock();
    match event.annotations.get(key) {
        Some(old) if old != value => {
            tracing::warn!(
                audit_id = %event.audit_id, key, value, old = %old,
                "audit annotation already set; keeping the first value"
            );
        }
        Some(_) => {}
        None => {
            event.annotations.insert(key.into(), value.into());
        }
    }
}

/// Put in a response by the panic handler, so that audit logs a Panic stage.
#[derive(Clone, Debug)]
pub struct Panicked(pub String);

pub async fn audit(
    State(auditor): State<Arc<Auditor>>,
    mut request: Request,
    next: Next,
) -> Response {
    let received = Utc::now();
    let audit_id = request
        .headers()
        .get(&AUDIT_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let requested = crate::api::attributes::ensure(&mut request).clone();
    let user = Arc::new(
        request
            .extensions()
            .get::<UserInfo>()
            .cloned()
            .unwrap_or_default(),
    );
    let attributes = requested.attributes(user, request.uri().path());
    let config = auditor.policy.evaluate(&attributes);
    if config.level == Level::None {
        let mut response = next.run(request).await;
        echo_audit_id(&mut response, &audit_id);
        return response;
    }
    let long_running = requested.long_running();
    let event = new_event(
        &request,
        &attributes,
        config.level,
        audit_id.clone(),
        received,
    );
    let context = Context(Arc::new(Mutex::new(event)));
    request.extensions_mut().insert(context.clone());
    let verb = attributes.verb.as_str();
    let emitter = Emitter {
        auditor,
        config,
        context,
        patch: verb == "patch",
    };
    emitter.emit(Stage::RequestReceived, None, None);

    // A create's object is named in its body; an update's carries its uid: upstream reads
    // the reference from the decoded object even at Metadata.
    let wants_request = attributes.resource_request
        && !long_running
        && (config.level >= Level::Request || matches!(verb, "create" | "update"));
    let request_body = match body_kind(request.headers()).filter(|_| wants_request) {
        Some(format) => {
            let capture = Arc::new(Mutex::new(Capture::new(BODY_LIMIT, format)));
            request = tee(request, capture.clone());
            Some(capture)
        }
        None => None,
    };

    let mut response = next.run(request).await;
    echo_audit_id(&mut response, &audit_id);
    // What admission recorded for the event (upstream's AddAuditAnnotation from plugins).
    if let Some(annotations) = response.extensions().get::<registry::audit::Annotations>() {
        for (key, value) in &annotations.0 {
            add_annotation(&emitter.context, key, value);
        }
    }
    let captured_request = || request_body.as_ref().map(|c| lock(c).take());
    if let Some(Panicked(message)) = response.extensions().get::<Panicked>().cloned() {
        emitter.context.lock().response_status = Some(ResponseStatus {
            status: "Failure".into(),
            message: format!("APIServer panic'd: {message}"),
            reason: "InternalError".into(),
            code: 500,
            ..Default::default()
        });
        emitter.emit(Stage::Panic, captured_request(), None);
        return response;
    }
    emitter.context.lock().response_status = Some(ResponseStatus::code(response.status().as_u16()));
    if long_running {
        emitter.emit(Stage::ResponseStarted, None, None);
    }
    let limit = if config.level >= Level::RequestResponse {
        BODY_LIMIT
    } else {
        STATUS_LIMIT
    };
    let response_body = response_format(response.headers())
        .filter(|_| attributes.resource_request && !long_running)
        .map(|format| Capture::new(limit, format));
    let mut completion = Completion {
        emitter,
        request: captured_request(),
        response: response_body,
    };
    response.map(|body| {
        axum::body::Body::new(body.map_frame(move |frame| {
            if let (Some(data), Some(capture)) = (frame.data_ref(), completion.response.as_mut()) {
                capture.push(data);
            }
            frame
        }))
    })
}

/// The event of a request, as it is received.
fn new_event(
    request: &Request,
    attributes: &Attributes,
    level: Level,
    audit_id: String,
    received: DateTime<Utc>,
) -> Event {
    let object_ref = attributes.resource_request.then(|| ObjectReference {
        resource: attributes.resource.clone(),
        namespace: attributes.namespace.clone(),
        name: attributes.name.clone(),
        api_group: attributes.api_group.clone(),
        api_version: attributes.api_version.clone(),
        subresource: attributes.subresource.clone(),
        ..Default::default()
    });
    Event {
        kind: "Event",
        api_version: "audit.k8s.io/v1",
        level,
        audit_id,
        stage: Stage::RequestReceived,
        request_uri: request
            .uri()
            .path_and_query()
            .map(|pq| pq.as_str().to_string())
            .unwrap_or_else(|| request.uri().path().to_string()),
        verb: attributes.verb.clone(),
        user: User::from(&*attributes.user),
        impersonated_user: None,
        source_ips: source_ips(request.headers(), remote_addr(request.extensions())),
        user_agent: user_agent(request.headers()),
        object_ref,
        response_status: None,
        request_object: None,
        response_object: None,
        request_received_timestamp: received,
        stage_timestamp: received,
        annotations: BTreeMap::new(),
    }
}

/// `request`, whose body's frames are kept in `capture` as the handler reads them.
fn tee(request: Request, capture: Arc<Mutex<Capture>>) -> Request {
    request.map(|body| {
        axum::body::Body::new(body.map_frame(move |frame| {
            if let Some(data) = frame.data_ref() {
                lock(&capture).push(data);
            }
            frame
        }))
    })
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn echo_audit_id(response: &mut Response, audit_id: &str) {
    if response.headers().contains_key(&AUDIT_ID) {
        return;
    }
    if let Ok(value) = HeaderValue::from_str(audit_id) {
        response.headers_mut().insert(AUDIT_ID.clone(), value);
    }
}

/// Sends the request's event to the log at each stage the policy does not omit.
struct Emitter {
    auditor: Arc<Auditor>,
    config: RequestAuditConfig,
    context: Context,
    patch: bool,
}

impl Emitter {
    fn emit(&self, stage: Stage, request: Option<event::Body>, response: Option<event::Body>) {
        if self.config.omit_stages.contains(stage) {
            return;
        }
        let mut event = self.context.lock().clone();
        event.stage = stage;
        event.stage_timestamp = match stage {
            Stage::RequestReceived => event.request_received_timestamp,
            _ => Utc::now(),
        };
        self.auditor.sink.send(Entry {
            event,
            request,
            response,
            patch: self.patch,
            omit_managed_fields: self.config.omit_managed_fields,
        });
    }
}

/// Logs ResponseComplete when the response body is done with (sent, or the client gone).
struct Completion {
    emitter: Emitter,
    request: Option<event::Body>,
    response: Option<Capture>,
}

impl Drop for Completion {
    fn drop(&mut self) {
        let response = self.response.as_mut().map(Capture::take);
        self.emitter
            .emit(Stage::ResponseComplete, self.request.take(), response);
    }
}

/// The chunks of a body going by, up to a limit.
#[derive(Debug)]
struct Capture {
    body: event::Body,
    len: usize,
    limit: usize,
}

impl Capture {
    fn new(limit: usize, format: Format) -> Self {
        Capture {
            body: event::Body {
                format,
                ..Default::default()
            },
            len: 0,
            limit,
        }
    }

    fn push(&mut self, data: &Bytes) {
        if self.body.truncated {
            return;
        }
        self.len += data.len();
        if self.len > self.limit {
            self.body.truncated = true;
            self.body.chunks = Vec::new();
        } else if !data.is_empty() {
            self.body.chunks.push(data.clone());
        }
    }

    fn take(&mut self) -> event::Body {
        std::mem::take(&mut self.body)
    }
}

/// How a request body the event may record is read (None: it is not recorded).
fn body_kind(headers: &HeaderMap) -> Option<Format> {
    let media = media_type(headers);
    if media.is_empty() || media.ends_with("json") {
        Some(Format::Json)
    } else if media.ends_with("yaml") {
        Some(Format::Yaml)
    } else if media == crate::api::protobuf::MEDIA_TYPE {
        Some(Format::Protobuf)
    } else {
        None
    }
}

/// How a response body is read (None: it is not recorded).
fn response_format(headers: &HeaderMap) -> Option<Format> {
    match media_type(headers).as_str() {
        "application/json" => Some(Format::Json),
        "application/yaml" => Some(Format::Yaml),
        // client-go asks for protobuf first; upstream audits the object, not its encoding.
        crate::api::protobuf::MEDIA_TYPE => Some(Format::Protobuf),
        _ => None,
    }
}

fn media_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

fn remote_addr(extensions: &Extensions) -> Option<IpAddr> {
    extensions
        .get::<ConnectInfo<Peer>>()
        .map(|ConnectInfo(peer)| peer.addr.ip())
        .or_else(|| {
            extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(addr)| addr.ip())
        })
}

/// upstream's SourceIPs: the X-Forwarded-For chain, X-Real-Ip unless already in it, then the
/// connection's address unless it ends the chain.
pub fn source_ips(headers: &HeaderMap, remote: Option<IpAddr>) -> Vec<String> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    };
    let parse = |s: &str| s.trim().parse::<IpAddr>().ok().map(|ip| ip.to_canonical());
    let mut ips: Vec<IpAddr> = header("x-forwarded-for")
        .split(',')
        .filter_map(parse)
        .collect();
    if let Some(real) = parse(header("x-real-ip")).filter(|ip| !ips.contains(ip)) {
        ips.push(real);
    }
    if let Some(remote) = remote.map(|ip| ip.to_canonical()) {
        if ips.last() != Some(&remote) {
            ips.push(remote);
        }
    }
    ips.iter().map(IpAddr::to_string).collect()
}

fn user_agent(headers: &HeaderMap) -> String {
    let agent = headers
        .get(header::USER_AGENT)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    if agent.len() <= MAX_USER_AGENT {
        return agent;
    }
    let mut end = MAX_USER_AGENT;
    while !agent.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...TRUNCATED", &agent[..end])
}

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
