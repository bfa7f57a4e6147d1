//! The CertificateSigningRequest approving controller (upstream's
//! pkg/controller/certificates/approver): a kubelet's request for its client certificate is
//! approved when its requester may create `certificatesigningrequests/selfnodeclient` (its own
//! node's name in the request) or `certificatesigningrequests/nodeclient` (any node's), as a
//! SubjectAccessReview of the requester would find.

use std::sync::Arc;

use registry::auth::{Attributes, UserInfo};
use registry::options::WriteOptions;
use registry::strategy::certificates::KUBE_APISERVER_CLIENT_KUBELET;
use registry::{RegistryError, Store, Subresource};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use client::controller::Controller;
use client::informer::{InformerFactory, SharedInformer};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

use super::request::{self, issued};
use super::{CertificatesError, GROUP, PLURAL};

/// What a recognised request is approved for, and the condition's message.
const RECOGNIZERS: [(&str, bool, &str); 2] = [
    (
        "selfnodeclient",
        true,
        "Auto approving self kubelet client certificate after SubjectAccessReview.",
    ),
    (
        "nodeclient",
        false,
        "Auto approving kubelet client certificate after SubjectAccessReview.",
    ),
];

pub struct CsrApprovingController {
    requests: SharedInformer,
    store: Arc<Store>,
    registry: Arc<registry::Registry>,
    queue: RateLimitingQueue<String>,
}

impl CsrApprovingController {
    pub fn new(informers: &InformerFactory) -> Result<Arc<Self>, CertificatesError> {
        let registry = informers.registry().clone();
        let store = registry
            .store(GROUP, "v1", PLURAL)
            .ok_or(CertificatesError::NoRequests)?;
        Ok(Arc::new(Self {
            requests: informers.informer_for(&store),
            store,
            registry,
            queue: RateLimitingQueue::with_default_rate_limiter("csrapproving"),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new("csrapproving", self.clone(), self.queue.clone())
            .primary(&self.requests, "CertificateSigningRequest")
            .run(stop, |c, name| async move {
                Next::after_sync(
                    c.sync(&name).await,
                    |e| warn!(csr = %name, error = %e, "approving failed; retrying"),
                )
            })
            .await
    }

    /// Whether the requester may create the subresource (a SubjectAccessReview of the
    /// request's user, groups and extra).
    fn may(&self, csr: &Value, subresource: &str) -> bool {
        let Some(authorizer) = self.registry.authorizer() else {
            return false;
        };
        let spec = &csr["spec"];
        let user = UserInfo {
            name: request::text(csr, "/spec/username").to_string(),
            uid: request::text(csr, "/spec/uid").to_string(),
            groups: serde_json::from_value(spec["groups"].clone()).unwrap_or_default(),
            extra: serde_json::from_value(spec["extra"].clone()).unwrap_or_default(),
        };
        authorizer
            .authorize(&Attributes {
                user: Arc::new(user),
                verb: "create".into(),
                resource_request: true,
                namespace: String::new(),
                api_group: GROUP.into(),
                api_version: "*".into(),
                resource: PLURAL.into(),
                subresource: subresource.into(),
                name: String::new(),
                path: String::new(),
            })
            .allowed()
    }

    async fn sync(&self, name: &str) -> Result<(), RegistryError> {
        let Some(seen) = self.requests.indexer().get(name) else {
            return Ok(());
        };
        let mut csr = Value::clone(&seen);
        if issued(&csr)
            || request::has(&csr, "Approved")
            || request::has(&csr, "Denied")
            || request::text(&csr, "/spec/signerName") != KUBE_APISERVER_CLIENT_KUBELET
        {
            return Ok(());
        }
        let Ok(subject) = request::der(&csr).and_then(|der| request::subject(&der)) else {
            return Ok(());
        };
        if request::kubelet_client_problem(&subject, &request::usages(&csr)).is_some() {
            return Ok(());
        }
        let own = request::text(&csr, "/spec/username") == subject.common_name;
        let mut tried = Vec::new();
        for (subresource, self_only, message) in RECOGNIZERS {
            if self_only && !own {
                continue;
            }
            tried.push(subresource);
            if !self.may(&csr, subresource) {
                continue;
            }
            let mut conditions = csr["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            conditions.push(json!({
                "type": "Approved", "status": "True", "reason": "AutoApproved", "message": message,
            }));
            csr["status"]["conditions"] = Value::Array(conditions);
            self.store
                .update(
                    None,
                    name,
                    csr,
                    Subresource::Approval,
                    &WriteOptions::by("kube-controller-manager"),
                )
                .await?;
            info!(
                csr = name,
                as_ = subresource,
                "approved kubelet client certificate request"
            );
            return Ok(());
        }
        debug!(
            csr = name,
            ?tried,
            "recognized the request but the subject access review was not approved"
        );
        Ok(())
    }
}
