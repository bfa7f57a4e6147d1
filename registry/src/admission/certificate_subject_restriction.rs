//! CertificateSubjectRestriction (upstream's
//! plugin/pkg/admission/certificates/subjectrestriction): nobody may ask the
//! kube-apiserver-client signer for a certificate in the system:masters group.

use std::sync::Arc;

use async_trait::async_trait;
use x509_parser::prelude::FromDer;

use super::certificate_approval::{on_csrs, signer};
use super::{Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::{RegistryError, Result};
use crate::object::Object;
use crate::strategy::certificates::{request_bytes, request_der, KUBE_APISERVER_CLIENT};
use crate::Registry;

pub(super) fn build(_: &Registry) -> Arc<dyn Plugin> {
    Arc::new(CertificateSubjectRestriction)
}

struct CertificateSubjectRestriction;

/// The organizations (groups) the request names; None when it does not parse.
fn organizations(csr: &Object) -> Option<Vec<String>> {
    let der = request_der(&request_bytes(csr)).ok()?;
    let (_, request) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&der).ok()?;
    Some(
        request
            .certification_request_info
            .subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok().map(str::to_string))
            .collect(),
    )
}

#[async_trait]
impl Plugin for CertificateSubjectRestriction {
    fn name(&self) -> &'static str {
        "CertificateSubjectRestriction"
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        operation == Operation::Create && subresource.is_empty() && on_csrs(info)
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes<'_>, csr: Option<&Object>) -> Result<()> {
        let Some(csr) = csr.filter(|c| signer(c) == KUBE_APISERVER_CLIENT) else {
            return Ok(());
        };
        let forbidden = |why: String| {
            Err(RegistryError::forbidden(
                &attrs.info.qualified_resource(),
                attrs.name,
                why,
            ))
        };
        match organizations(csr) {
            // Validation refuses what does not parse, with its own words.
            None => Ok(()),
            Some(groups) if groups.iter().any(|g| g == crate::auth::MASTERS) => forbidden(format!(
                "use of {KUBE_APISERVER_CLIENT} signer with {} group is not allowed",
                crate::auth::MASTERS
            )),
            Some(_) => Ok(()),
        }
    }
}
