//! CertificateSigning (upstream's plugin/pkg/admission/certificates/signing): writing a
//! CertificateSigningRequest's status (its certificate or conditions) takes `sign` on its
//! signer.

use std::sync::Arc;

use async_trait::async_trait;

use super::certificate_approval::{on_csrs, signer};
use super::signer_permission::{allowed, AuthorizerCell};
use super::{Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::{RegistryError, Result};
use crate::object::Object;
use crate::Registry;

pub(super) fn build(registry: &Registry) -> Arc<dyn Plugin> {
    Arc::new(CertificateSigning {
        authorizer: registry.authorizer_cell(),
    })
}

struct CertificateSigning {
    authorizer: AuthorizerCell,
}

#[async_trait]
impl Plugin for CertificateSigning {
    fn name(&self) -> &'static str {
        "CertificateSigning"
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        operation == Operation::Update && subresource == "status" && on_csrs(info)
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes<'_>, csr: Option<&Object>) -> Result<()> {
        let (Some(csr), Some(old)) = (csr, attrs.old) else {
            return Ok(());
        };
        // Only a change of the certificate or the conditions needs the permission.
        let part = |o: &Object, field: &str| o.pointer(&format!("/status/{field}")).cloned();
        if part(csr, "certificate") == part(old, "certificate")
            && part(csr, "conditions") == part(old, "conditions")
        {
            return Ok(());
        }
        let signer = signer(old);
        if allowed(&self.authorizer, attrs.user, "sign", signer) {
            return Ok(());
        }
        Err(RegistryError::forbidden(
            &attrs.info.qualified_resource(),
            attrs.name,
            format!("user not permitted to sign requests with signerName {signer:?}"),
        ))
    }
}
