//! The certificate controllers of kube-controller-manager (upstream's pkg/controller/certificates):
//! the signers issuing approved CertificateSigningRequests with the cluster's CA (`signer`),
//! the approver of kubelets' client certificates (`approver`) and the cleaner of old requests
//! (`cleaner`).

pub mod approver;
pub mod cleaner;
mod request;
pub mod signer;

pub use approver::CsrApprovingController;
pub use cleaner::CsrCleanerController;
pub use signer::{CsrSigningController, SigningAuthority};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum CertificatesError {
    #[error("the registry serves no certificates.k8s.io/v1 certificatesigningrequests")]
    NoRequests,
    #[error("the signing CA is unusable: {0}")]
    Authority(String),
}

const GROUP: &str = "certificates.k8s.io";
const PLURAL: &str = "certificatesigningrequests";
