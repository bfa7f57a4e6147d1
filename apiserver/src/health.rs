//! `/healthz`, `/livez`, `/readyz` and their per-check paths, answering as kube-apiserver does:
//! `ok`, or the list of checks with `[+]`/`[-]` and a closing line, 500 on failure.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use storage::backend::DynBackend;
use tokio_util::sync::CancellationToken;

#[derive(Clone)]
pub struct Health {
    pub backend: DynBackend,
    /// Set when shutdown begins, so load balancers stop sending traffic first.
    pub shutdown: CancellationToken,
    /// Ready only once the definitions stored at start are served (upstream's
    /// `poststarthook/crd-informer-synced`): a client must not see a 404 for a custom
    /// resource that exists.
    pub definitions: Option<Arc<controllers::apiextensions::DefinitionController>>,
    /// The etcd checks' last probes.
    pub probes: Arc<StorageProbes>,
}

/// Upstream's rate limit on each etcd check: one probe per half of the check's 2 s
/// timeout; a check asked sooner answers with the last finished probe's result, so a burst of
/// health requests against an unreachable etcd does not pile up probes.
#[derive(Default)]
pub struct StorageProbes {
    checks: Mutex<HashMap<&'static str, Probe>>,
}

#[derive(Default)]
struct Probe {
    /// When the last probe began.
    started: Option<Instant>,
    /// The result of the latest-started probe that finished, and when it began.
    result: Option<(Instant, Option<String>)>,
}

const PROBE_EVERY: Duration = Duration::from_secs(1);

impl StorageProbes {
    /// Check `name`'s failure now: a new probe of `backend`, or within [`PROBE_EVERY`] of the
    /// last one, that one's result.
    async fn check(&self, name: &'static str, backend: &DynBackend) -> Option<String> {
        let now = Instant::now();
        {
            let mut checks = self.checks.lock().unwrap_or_else(|e| e.into_inner());
            let probe = checks.entry(name).or_default();
            if probe.started.is_some_and(|at| now < at + PROBE_EVERY) {
                return match &probe.result {
                    Some((_, result)) => result.clone(),
                    None => Some("storage check not yet finished".to_string()),
                };
            }
            probe.started = Some(now);
        }
        let result = backend.check_health().await.err().map(|e| e.to_string());
        let mut checks = self.checks.lock().unwrap_or_else(|e| e.into_inner());
        let probe = checks.entry(name).or_default();
        // A slower probe that began earlier does not overwrite a newer one's result.
        if probe.result.as_ref().is_none_or(|(at, _)| *at < now) {
            probe.result = Some((now, result.clone()));
        }
        result
    }
}

#[derive(Deserialize, Default)]
pub struct HealthQuery {
    verbose: Option<String>,
    exclude: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Healthz,
    Livez,
    Readyz,
}

impl Endpoint {
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Healthz => "healthz",
            Endpoint::Livez => "livez",
            Endpoint::Readyz => "readyz",
        }
    }
}

const CRD_SYNCED: &str = "poststarthook/crd-informer-synced";

/// Upstream's readyz-only etcd check. It and `etcd` (on all three endpoints, so `/livez` too
/// fails while etcd is unreachable, as upstream's does) pass when the cluster answers a read,
/// whichever member answers: upstream has no per-member check or metric (its per-endpoint
/// database size gauge is gone), so a member being down is not a failure of the server. Each
/// member's state is named in a failing check's reason, which goes to the log, as upstream
/// withholds reasons from the response.
const ETCD_READINESS: &str = "etcd-readiness";

impl Health {
    fn storage_check_name(&self) -> &'static str {
        // Upstream calls its storage check "etcd"; keep that name where it is true.
        match self.backend.name() {
            "etcd" => "etcd",
            _ => "storage",
        }
    }

    /// Each check's name and, if it failed, why.
    async fn run(
        &self,
        endpoint: Endpoint,
        only: Option<&str>,
    ) -> Vec<(&'static str, Option<String>)> {
        let mut names = vec!["ping", "log", self.storage_check_name()];
        if endpoint == Endpoint::Readyz && self.backend.name() == "etcd" {
            names.push(ETCD_READINESS);
        }
        if self.definitions.is_some() {
            names.push(CRD_SYNCED);
        }
        if endpoint == Endpoint::Readyz {
            names.push("shutdown");
        }
        // Run at once, not one after another as upstream's are: the two etcd checks each
        // wait up to 2 s for an unreachable cluster, and in turn they would outlast a short
        // `--request-timeout`.
        let checks = names
            .into_iter()
            .filter(|name| only.is_none_or(|o| o == *name))
            .map(|name| async move { (name, self.failure(name).await) });
        futures::future::join_all(checks).await
    }

    /// Why check `name` fails now, if it does.
    async fn failure(&self, name: &'static str) -> Option<String> {
        match name {
            "shutdown" if self.shutdown.is_cancelled() => {
                Some("process is shutting down".to_string())
            }
            CRD_SYNCED if !self.definitions.as_ref().is_some_and(|d| d.has_synced()) => {
                Some("not finished".to_string())
            }
            "etcd" | ETCD_READINESS => self.probes.check(name, &self.backend).await,
            "storage" => self
                .backend
                .check_health()
                .await
                .err()
                .map(|e| e.to_string()),
            _ => None,
        }
    }

    async fn respond(
        &self,
        endpoint: Endpoint,
        only: Option<&str>,
        query: &HealthQuery,
    ) -> Response {
        let excluded: Vec<&str> = query
            .exclude
            .as_deref()
            .map_or(Vec::new(), |e| e.split(',').collect());
        let results: Vec<_> = self
            .run(endpoint, only)
            .await
            .into_iter()
            .filter(|(name, _)| !excluded.contains(name))
            .collect();
        if only.is_some() && results.is_empty() {
            return (StatusCode::NOT_FOUND, "404 page not found\n").into_response();
        }
        let failed = results.iter().any(|(_, f)| f.is_some());
        for (name, failure) in &results {
            if let Some(why) = failure {
                tracing::warn!(check = name, endpoint = endpoint.name(), reason = %why, "health check failed");
            }
        }
        if !failed && query.verbose.is_none() {
            return (StatusCode::OK, "ok").into_response();
        }
        let mut body = String::new();
        for (name, failure) in &results {
            match failure {
                None => {
                    let _ = writeln!(body, "[+]{name} ok");
                }
                // Reasons stay in the log, as upstream withholds them from the response.
                Some(_) => {
                    let _ = writeln!(body, "[-]{name} failed: reason withheld");
                }
            }
        }
        let status = if failed {
            let _ = writeln!(body, "{} check failed", endpoint.name());
            StatusCode::INTERNAL_SERVER_ERROR
        } else {
            let _ = writeln!(body, "{} check passed", endpoint.name());
            StatusCode::OK
        };
        (status, body).into_response()
    }
}

pub async fn all(
    State(health): State<Health>,
    endpoint: Endpoint,
    Query(query): Query<HealthQuery>,
) -> Response {
    health.respond(endpoint, None, &query).await
}

pub async fn one(
    State(health): State<Health>,
    endpoint: Endpoint,
    Path(check): Path<String>,
    Query(query): Query<HealthQuery>,
) -> Response {
    health.respond(endpoint, Some(&check), &query).await
}
