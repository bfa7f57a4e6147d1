//! Auditing (kube-apiserver's `--audit-policy-file` and `--audit-log-path`): requests the
//! policy selects are written to the log as audit.k8s.io/v1 Events, one JSON object per line.
//! Without both flags nothing is audited and no filter runs.
//!
//! The filters after audit add to a request's event through its extensions:
//! [`record_impersonation`] and [`annotate`].

pub mod event;
pub mod filter;
pub mod log;
pub mod policy;
pub mod rotate;

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;

pub use filter::{annotate, record_impersonation, Context, Panicked, AUDIT_ID};
pub use policy::{Level, Policy, PolicyError, Stage};

use crate::options::Options;

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("loading audit policy file: {0}")]
    Policy(#[from] PolicyError),
    #[error("opening audit log {path}: {source}")]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The policy and the log a server audits with.
#[derive(Debug)]
pub struct Auditor {
    policy: Policy,
    backend: log::Backend,
    sink: log::Sink,
}

impl Auditor {
    /// The auditor `options` ask for: None unless both a policy and a log are given. A policy
    /// file is read (and refused when invalid) whenever it is given, as upstream does.
    pub fn from_options(options: &Options) -> Result<Option<Arc<Auditor>>, AuditError> {
        let policy = options
            .audit_policy_file
            .as_deref()
            .map(Policy::load)
            .transpose()?;
        match (policy, &options.audit_log_path) {
            (Some(policy), Some(path)) => {
                let rotation = rotate::Rotation::new(
                    options.audit_log_maxsize,
                    options.audit_log_maxbackup,
                    options.audit_log_maxage,
                );
                let backend =
                    log::Backend::open(path, rotation).map_err(|source| AuditError::Log {
                        path: path.clone(),
                        source,
                    })?;
                tracing::info!(
                    log = %path.display(),
                    rules = policy.rules.len(),
                    "auditing"
                );
                Ok(Some(Arc::new(Auditor::new(policy, backend))))
            }
            (Some(_), None) => {
                tracing::info!("no audit backend (--audit-log-path): no events will be recorded");
                Ok(None)
            }
            (None, Some(_)) => {
                tracing::info!(
                    "no audit policy file (--audit-policy-file): no events will be recorded"
                );
                Ok(None)
            }
            (None, None) => Ok(None),
        }
    }

    pub fn new(policy: Policy, backend: log::Backend) -> Self {
        let sink = backend.sink();
        Auditor {
            policy,
            backend,
            sink,
        }
    }

    /// `router` audited: the filter must run after authentication (the user is in the
    /// request) and before impersonation and authorization.
    pub fn layer(self: &Arc<Self>, router: Router) -> Router {
        router.layer(axum::middleware::from_fn_with_state(
            self.clone(),
            filter::audit,
        ))
    }

    /// Writes out the events still queued; events of requests ending later are lost.
    pub async fn stop(&self) {
        self.backend.stop().await;
    }
}
