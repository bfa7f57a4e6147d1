//! The CertificateSigningRequest signing controller (upstream's
//! pkg/controller/certificates/signer): approved requests for the kubernetes.io signers the
//! cluster CA serves get their certificate, with the usages the request names, valid from
//! five minutes ago (clocks differ) for the requested duration capped by
//! `--cluster-signing-duration` and by the CA's own end; a request its signer would not sign
//! is marked Failed instead.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use chrono::{DateTime, Utc};
use rcgen::{
    CertificateSigningRequestParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SerialNumber,
};
use registry::options::WriteOptions;
use registry::strategy::certificates::{
    KUBELET_SERVING, KUBE_APISERVER_CLIENT, KUBE_APISERVER_CLIENT_KUBELET,
};
use registry::{object, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use client::controller::Controller;
use client::informer::{InformerFactory, SharedInformer};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

use super::request::{self, issued};
use super::{CertificatesError, GROUP, PLURAL};

const WORKERS: usize = 2;
/// How far back a certificate's validity starts (upstream's backdate).
const BACKDATE: Duration = Duration::from_secs(5 * 60);
/// kube-controller-manager's default `--cluster-signing-duration` (a year).
pub const DEFAULT_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// The CA that signs, and for how long its certificates last at most.
pub struct SigningAuthority {
    issuer: Issuer<'static, KeyPair>,
    /// The CA certificate's own end.
    not_after: DateTime<Utc>,
    duration: Duration,
}

impl SigningAuthority {
    /// The CA of these PEM files' contents.
    pub fn new(
        cert_pem: &str,
        key_pem: &str,
        duration: Duration,
    ) -> Result<Self, CertificatesError> {
        let bad = |e: &dyn std::fmt::Display| CertificatesError::Authority(e.to_string());
        let key = KeyPair::from_pem(key_pem).map_err(|e| bad(&e))?;
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key).map_err(|e| bad(&e))?;
        let (_, pem) =
            x509_parser::pem::parse_x509_pem(cert_pem.as_bytes()).map_err(|e| bad(&e))?;
        let cert = pem.parse_x509().map_err(|e| bad(&e))?;
        let not_after = DateTime::from_timestamp(cert.validity().not_after.timestamp(), 0)
            .ok_or_else(|| CertificatesError::Authority("the CA's end is out of range".into()))?;
        Ok(Self {
            issuer,
            not_after,
            duration,
        })
    }

    /// The PEM certificate for a request's DER, as the CSR's spec asks.
    pub fn sign(
        &self,
        der: &[u8],
        usages: &[String],
        expiration_seconds: Option<i64>,
    ) -> Result<String, String> {
        let mut request = CertificateSigningRequestParams::from_der(&der.to_vec().into())
            .map_err(|e| format!("unable to parse the certificate request: {e}"))?;
        let now = Utc::now();
        let mut ttl = self.duration;
        if let Some(seconds) = expiration_seconds.and_then(|s| u64::try_from(s).ok()) {
            ttl = ttl.min(Duration::from_secs(seconds.max(600)));
        }
        let ends = (now + ttl).min(self.not_after);
        let params = &mut request.params;
        params.not_before = offset(now - BACKDATE);
        params.not_after = offset(ends);
        params.serial_number = Some(SerialNumber::from_slice(&rand::random::<[u8; 16]>()));
        params.is_ca = IsCa::ExplicitNoCa;
        params.use_authority_key_identifier_extension = true;
        params.key_usages = usages.iter().filter_map(|u| key_usage(u)).collect();
        params.extended_key_usages = usages.iter().filter_map(|u| extended_usage(u)).collect();
        let cert = request
            .signed_by(&self.issuer)
            .map_err(|e| format!("error signing the certificate: {e}"))?;
        Ok(cert.pem())
    }
}

fn offset(at: DateTime<Utc>) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(at.timestamp())
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}

/// upstream's keyUsageDict.
fn key_usage(usage: &str) -> Option<KeyUsagePurpose> {
    Some(match usage {
        "signing" | "digital signature" => KeyUsagePurpose::DigitalSignature,
        "content commitment" => KeyUsagePurpose::ContentCommitment,
        "key encipherment" => KeyUsagePurpose::KeyEncipherment,
        "key agreement" => KeyUsagePurpose::KeyAgreement,
        "data encipherment" => KeyUsagePurpose::DataEncipherment,
        "cert sign" => KeyUsagePurpose::KeyCertSign,
        "crl sign" => KeyUsagePurpose::CrlSign,
        "encipher only" => KeyUsagePurpose::EncipherOnly,
        "decipher only" => KeyUsagePurpose::DecipherOnly,
        _ => return None,
    })
}

/// upstream's extKeyUsageDict (the IPsec and SGC purposes by their OIDs).
fn extended_usage(usage: &str) -> Option<ExtendedKeyUsagePurpose> {
    Some(match usage {
        "any" => ExtendedKeyUsagePurpose::Any,
        "server auth" => ExtendedKeyUsagePurpose::ServerAuth,
        "client auth" => ExtendedKeyUsagePurpose::ClientAuth,
        "code signing" => ExtendedKeyUsagePurpose::CodeSigning,
        "email protection" | "s/mime" => ExtendedKeyUsagePurpose::EmailProtection,
        "timestamping" => ExtendedKeyUsagePurpose::TimeStamping,
        "ocsp signing" => ExtendedKeyUsagePurpose::OcspSigning,
        "ipsec end system" => ExtendedKeyUsagePurpose::Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 5]),
        "ipsec tunnel" => ExtendedKeyUsagePurpose::Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 6]),
        "ipsec user" => ExtendedKeyUsagePurpose::Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 7]),
        "microsoft sgc" => ExtendedKeyUsagePurpose::Other(vec![1, 3, 6, 1, 4, 1, 311, 10, 3, 3]),
        "netscape sgc" => ExtendedKeyUsagePurpose::Other(vec![2, 16, 840, 1, 113730, 4, 1]),
        _ => return None,
    })
}

/// Why the signer would not sign this request, None when it would; Err when it is no
/// request for the signers this controller runs.
fn signer_problem(csr: &Value, der: &[u8]) -> Result<Option<String>, ()> {
    let usages = request::usages(csr);
    match request::text(csr, "/spec/signerName") {
        KUBE_APISERVER_CLIENT => Ok(request::client_usages_problem(&usages)),
        KUBE_APISERVER_CLIENT_KUBELET => Ok(match request::subject(der) {
            Ok(s) => request::kubelet_client_problem(&s, &usages),
            Err(e) => Some(e),
        }),
        KUBELET_SERVING => Ok(match request::subject(der) {
            Ok(s) => request::kubelet_serving_problem(&s, &usages),
            Err(e) => Some(e),
        }),
        _ => Err(()),
    }
}

pub struct CsrSigningController {
    requests: SharedInformer,
    store: Arc<Store>,
    authority: SigningAuthority,
    queue: RateLimitingQueue<String>,
}

impl CsrSigningController {
    pub fn new(
        informers: &InformerFactory,
        authority: SigningAuthority,
    ) -> Result<Arc<Self>, CertificatesError> {
        let store = informers
            .registry()
            .store(GROUP, "v1", PLURAL)
            .ok_or(CertificatesError::NoRequests)?;
        Ok(Arc::new(Self {
            requests: informers.informer_for(&store),
            store,
            authority,
            queue: RateLimitingQueue::with_default_rate_limiter("certificate"),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new("csrsigning", self.clone(), self.queue.clone())
            .workers(WORKERS)
            .primary(&self.requests, "CertificateSigningRequest")
            .run(stop, |c, name| async move {
                Next::after_sync(
                    c.sync(&name).await,
                    |e| warn!(csr = %name, error = %e, "signing failed; retrying"),
                )
            })
            .await
    }

    async fn sync(&self, name: &str) -> Result<(), RegistryError> {
        let Some(seen) = self.requests.indexer().get(name) else {
            return Ok(());
        };
        let mut csr = Value::clone(&seen);
        if !request::has(&csr, "Approved") || request::has(&csr, "Failed") || issued(&csr) {
            return Ok(());
        }
        let der = match request::der(&csr) {
            Ok(der) => der,
            Err(e) => {
                return Err(RegistryError::BadRequest(format!(
                    "unable to parse csr {name:?}: {e}"
                )))
            }
        };
        let status = match signer_problem(&csr, &der) {
            Err(()) => return Ok(()),
            Ok(Some(problem)) => {
                let failed = json!({
                    "type": "Failed", "status": "True", "reason": "SignerValidationFailure",
                    "message": problem, "lastUpdateTime": object::now(),
                });
                let mut conditions = csr["status"]["conditions"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                conditions.push(failed);
                csr["status"]["conditions"] = Value::Array(conditions);
                "failed"
            }
            Ok(None) => {
                let usages: Vec<String> = request::usages(&csr).into_iter().collect();
                let expiration = csr
                    .pointer("/spec/expirationSeconds")
                    .and_then(Value::as_i64);
                let pem = self
                    .authority
                    .sign(&der, &usages, expiration)
                    .map_err(RegistryError::Internal)?;
                csr["status"]["certificate"] =
                    json!(base64::engine::general_purpose::STANDARD.encode(pem));
                "issued"
            }
        };
        self.store
            .update(
                None,
                name,
                csr,
                Subresource::Status,
                &WriteOptions::by("kube-controller-manager"),
            )
            .await?;
        info!(csr = name, outcome = status, "signed certificate request");
        Ok(())
    }
}
