//! The front-proxy (requestheader) PKI the aggregator presents to the API servers it proxies
//! to, as kubeadm lays it out: a CA of its own (`front-proxy-ca.crt`), distinct from the
//! cluster CA so that a client certificate of the cluster cannot pass for the proxy, and the
//! proxy's client certificate (`front-proxy-client.crt`, CN=front-proxy-client) it signs.
//! `--requestheader-client-ca-file` and `--proxy-client-cert-file`/`--proxy-client-key-file`
//! replace the generated ones.

use std::path::PathBuf;

use rcgen::{ExtendedKeyUsagePurpose, Issuer, KeyUsagePurpose};

use super::certs::{self, CertError, Pki};
use crate::options::Options;

/// The name the generated proxy client certificate carries, and so the one name
/// `requestheader-allowed-names` lists by default (kubeadm's).
pub const CLIENT_NAME: &str = "front-proxy-client";

/// What the aggregator proves itself with, and what it tells aggregated servers to trust.
#[derive(Clone, Default)]
pub struct FrontProxy {
    /// The CA (PEM) that signs the proxy's client certificate: published as
    /// `requestheader-client-ca-file`.
    pub ca_pem: String,
    pub client_cert_pem: String,
    pub client_key_pem: String,
    /// The common names aggregated servers accept from that CA.
    pub allowed_names: Vec<String>,
}

fn ca_cert(pki: &Pki) -> PathBuf {
    pki.dir.join("front-proxy-ca.crt")
}
fn ca_key(pki: &Pki) -> PathBuf {
    pki.dir.join("front-proxy-ca.key")
}
fn client_cert(pki: &Pki) -> PathBuf {
    pki.dir.join("front-proxy-client.crt")
}
fn client_key(pki: &Pki) -> PathBuf {
    pki.dir.join("front-proxy-client.key")
}

/// The flags' files, or what is generated (or reused) under `<data-dir>/pki`.
pub fn prepare(options: &Options) -> Result<FrontProxy, CertError> {
    let given_ca = options.requestheader_client_ca_file.as_ref();
    let given_client = options
        .proxy_client_cert_file
        .as_ref()
        .zip(options.proxy_client_key_file.as_ref());
    let pki = Pki::in_dir(options.data_dir.join("pki"));
    let (ca_pem, generated) = match (given_ca, given_client) {
        (Some(ca), Some((cert, key))) => {
            return Ok(FrontProxy {
                ca_pem: certs::read(ca)?,
                client_cert_pem: certs::read(cert)?,
                client_key_pem: certs::read(key)?,
                allowed_names: options.requestheader_allowed_names.clone(),
            });
        }
        (Some(ca), None) => (certs::read(ca)?, None),
        (None, _) => {
            std::fs::create_dir_all(&pki.dir).map_err(|source| CertError::Io {
                path: pki.dir.clone(),
                source,
            })?;
            let (key, pem, _) = certs::load_or_create_ca(&ca_cert(&pki), &ca_key(&pki))?;
            (pem.clone(), Some((key, pem)))
        }
    };
    let (client_cert_pem, client_key_pem) = match (given_client, generated) {
        (Some((cert, key)), _) => (certs::read(cert)?, certs::read(key)?),
        (None, Some((key, pem))) => {
            let der = certs::first_der(&pem, &ca_cert(&pki))?;
            if !certs::leaf_is_current(&client_cert(&pki), &der, None) {
                let issuer =
                    Issuer::from_ca_cert_der(&der.as_slice().into(), &key).map_err(|e| {
                        CertError::Invalid {
                            path: ca_cert(&pki),
                            message: e.to_string(),
                        }
                    })?;
                let mut params = certs::leaf_params(CLIENT_NAME, None)?;
                params.key_usages = vec![
                    KeyUsagePurpose::DigitalSignature,
                    KeyUsagePurpose::KeyEncipherment,
                ];
                params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
                certs::issue(&params, &issuer, &client_cert(&pki), &client_key(&pki))?;
            }
            (
                certs::read(&client_cert(&pki))?,
                certs::read(&client_key(&pki))?,
            )
        }
        (None, None) => {
            // A CA of the operator's without a certificate it signed: nothing to present.
            return Err(CertError::Invalid {
                path: ca_cert(&pki),
                message: "--requestheader-client-ca-file needs --proxy-client-cert-file and --proxy-client-key-file".into(),
            });
        }
    };
    let allowed_names = if options.requestheader_allowed_names.is_empty() && given_client.is_none()
    {
        vec![CLIENT_NAME.to_string()]
    } else {
        options.requestheader_allowed_names.clone()
    };
    Ok(FrontProxy {
        ca_pem,
        client_cert_pem,
        client_key_pem,
        allowed_names,
    })
}
