//! The CertificateSigningRequest cleaner (upstream's pkg/controller/certificates/cleaner):
//! every hour, requests past their time go: approved and issued ones an hour after approval,
//! denied and failed ones an hour after that, pending ones after a day, and any whose
//! certificate has expired.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use chrono::{DateTime, TimeDelta, Utc};
use registry::options::{DeleteOptions, ListOptions};
use registry::{object, RegistryError, Store};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::request::{self, issued};
use super::{CertificatesError, GROUP, PLURAL};

/// How often the cleaner looks (upstream's pollingInterval).
pub const INTERVAL: Duration = Duration::from_secs(3600);

pub struct CsrCleanerController {
    store: Arc<Store>,
}

fn time_of(value: Option<&Value>) -> Option<DateTime<Utc>> {
    value
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// When the condition of this type was last updated.
fn updated(csr: &Value, kind: &str) -> Option<DateTime<Utc>> {
    time_of(request::condition(csr, kind).and_then(|c| c.get("lastUpdateTime")))
}

/// The end of the first certificate issued, when there is one that parses.
fn certificate_end(csr: &Value) -> Option<DateTime<Utc>> {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(request::text(csr, "/status/certificate"))
        .ok()?;
    let (_, block) = x509_parser::pem::parse_x509_pem(&pem).ok()?;
    let cert = block.parse_x509().ok()?;
    DateTime::from_timestamp(cert.validity().not_after.timestamp(), 0)
}

/// Why the request goes at `now`, if it does (upstream's isIssuedExpired and the
/// past-deadline checks).
pub fn expired(csr: &Value, now: DateTime<Utc>) -> Option<&'static str> {
    let hour = TimeDelta::hours(1);
    let past = |at: Option<DateTime<Utc>>, after: TimeDelta| at.is_some_and(|t| t + after < now);
    if certificate_end(csr).is_some_and(|end| end < now) {
        return Some("its certificate has expired");
    }
    let decided = ["Approved", "Denied", "Failed"]
        .iter()
        .any(|kind| request::has(csr, kind));
    if !decided
        && past(
            time_of(csr.pointer("/metadata/creationTimestamp")),
            TimeDelta::hours(24),
        )
    {
        return Some("it has been pending for more than 24 hours");
    }
    if past(updated(csr, "Denied"), hour) {
        return Some("it was denied more than an hour ago");
    }
    if past(updated(csr, "Failed"), hour) {
        return Some("it failed more than an hour ago");
    }
    if issued(csr) && past(updated(csr, "Approved"), hour) {
        return Some("it was approved and issued more than an hour ago");
    }
    None
}

impl CsrCleanerController {
    pub fn new(registry: &registry::Registry) -> Result<Arc<Self>, CertificatesError> {
        let store = registry
            .store(GROUP, "v1", PLURAL)
            .ok_or(CertificatesError::NoRequests)?;
        Ok(Arc::new(Self { store }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let mut ticks = tokio::time::interval(INTERVAL);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            if let Err(e) = self.clean(Utc::now()).await {
                warn!(error = %e, "cleaning certificate signing requests failed");
            }
        }
    }

    /// Deletes what has expired at `now`; how many went.
    pub async fn clean(&self, now: DateTime<Utc>) -> Result<usize, RegistryError> {
        let list = self.store.list(None, &ListOptions::default()).await?;
        let mut deleted = 0;
        for csr in list["items"].as_array().into_iter().flatten() {
            let Some(why) = expired(csr, now) else {
                continue;
            };
            let name = object::name(csr);
            match self
                .store
                .delete(None, name, DeleteOptions::default())
                .await
            {
                Ok(_) => {
                    deleted += 1;
                    info!(csr = name, why, "cleaned up certificate signing request");
                }
                Err(RegistryError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    #[test]
    fn requests_go_when_their_time_is_up() {
        let created = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(expired(&created, at("2026-01-01T23:00:00Z")), None);
        assert!(expired(&created, at("2026-01-02T00:00:01Z")).is_some());

        let denied = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"conditions": [{"type": "Denied", "lastUpdateTime": "2026-01-01T00:10:00Z"}]}});
        assert_eq!(expired(&denied, at("2026-01-01T01:00:00Z")), None);
        assert_eq!(
            expired(&denied, at("2026-01-01T01:10:01Z")),
            Some("it was denied more than an hour ago")
        );
        // Approved but not issued (yet): not pending, so no deadline applies.
        let approved = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"conditions": [{"type": "Approved", "lastUpdateTime": "2026-01-01T00:00:00Z"}]}});
        assert_eq!(expired(&approved, at("2026-01-03T00:00:00Z")), None);
    }
}
