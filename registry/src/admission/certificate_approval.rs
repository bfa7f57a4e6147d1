//! CertificateApproval (upstream's plugin/pkg/admission/certificates/approval): approving or
//! denying a CertificateSigningRequest takes `approve` on its signer.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::signer_permission::{allowed, AuthorizerCell};
use super::{Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::{RegistryError, Result};
use crate::object::Object;
use crate::Registry;

pub(super) fn build(registry: &Registry) -> Arc<dyn Plugin> {
    Arc::new(CertificateApproval {
        authorizer: registry.authorizer_cell(),
    })
}

struct CertificateApproval {
    authorizer: AuthorizerCell,
}

pub(super) fn on_csrs(info: &ResourceInfo) -> bool {
    info.group == "certificates.k8s.io" && info.plural == "certificatesigningrequests"
}

pub(super) fn signer(csr: &Value) -> &str {
    csr.pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[async_trait]
impl Plugin for CertificateApproval {
    fn name(&self) -> &'static str {
        "CertificateApproval"
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        operation == Operation::Update && subresource == "approval" && on_csrs(info)
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes<'_>, csr: Option<&Object>) -> Result<()> {
        let Some(csr) = csr else { return Ok(()) };
        let signer = signer(csr);
        if allowed(&self.authorizer, attrs.user, "approve", signer) {
            return Ok(());
        }
        Err(RegistryError::forbidden(
            &attrs.info.qualified_resource(),
            attrs.name,
            format!("user not permitted to approve requests with signerName {signer:?}"),
        ))
    }
}
