//! Secure serving (kube-apiserver's --secure-port): HTTPS with rustls (`serving`), and the
//! server's own PKI when no certificate is given (`certs`). Who a request comes from is
//! `crate::authn`'s matter.

pub mod certs;
pub mod front_proxy;
pub mod serving;

use std::net::IpAddr;
use std::sync::Arc;

use tracing::info;

use crate::options::Options;
use certs::{CertError, Pki};

/// What the HTTPS listener serves with, and what the written kubeconfig carries.
pub struct SecureServing {
    pub config: Arc<rustls::ServerConfig>,
    /// The PEM the kubeconfig trusts the server by: the server's CA, or the certificates of
    /// `--tls-cert-file` when one is given.
    pub trusted_pem: String,
    /// The admin client certificate and key (PEM), when the server's own CA verifies clients.
    pub admin: Option<(String, String)>,
    /// The server's own CA certificate and key (PEM), when it made one: what the certificate
    /// signers issue with unless --cluster-signing-cert-file says otherwise.
    pub own_ca: Option<(String, String)>,
}

/// The secure serving `options` ask for (None with `--secure-port 0`), generating or reusing
/// the PKI under `<data-dir>/pki` for what the flags do not give.
pub fn prepare(options: &Options) -> Result<Option<SecureServing>, CertError> {
    if options.secure_port == 0 {
        return Ok(None);
    }
    let pki = Pki::in_dir(options.data_dir.join("pki"));
    let own_serving = options.tls_cert_file.is_none();
    let own_client_ca = options.client_ca_file.is_none();
    if own_serving || own_client_ca {
        let sans = if own_serving {
            let addresses: Vec<IpAddr> = [Some(options.bind_address), options.advertise_address]
                .into_iter()
                .flatten()
                .collect();
            Some(certs::serving_sans(
                certs::hostname().as_deref(),
                &addresses,
                IpAddr::V4(options.service_cluster_ip_range.first()),
                &options.tls_san,
            )?)
        } else {
            None
        };
        let ensured = certs::ensure(&pki, sans.as_deref())?;
        info!(
            dir = %pki.dir.display(),
            ca_created = ensured.ca_created,
            apiserver_cert_issued = ensured.serving_issued,
            admin_cert_issued = ensured.admin_issued,
            "certificates ready"
        );
    }
    let (cert_file, key_file) = match (&options.tls_cert_file, &options.tls_private_key_file) {
        (Some(cert), Some(key)) => (cert.clone(), key.clone()),
        _ => (pki.serving_cert(), pki.serving_key()),
    };
    let client_ca = options
        .client_ca_file
        .clone()
        .unwrap_or_else(|| pki.ca_cert());
    let config = serving::server_config(&cert_file, &key_file, &client_ca)?;
    let trusted_pem = if own_serving {
        certs::read(&pki.ca_cert())?
    } else {
        certs::read(&cert_file)?
    };
    let (admin, own_ca) = if own_client_ca {
        (
            Some((
                certs::read(&pki.admin_cert())?,
                certs::read(&pki.admin_key())?,
            )),
            Some((certs::read(&pki.ca_cert())?, certs::read(&pki.ca_key())?)),
        )
    } else {
        (None, None)
    };
    Ok(Some(SecureServing {
        config: Arc::new(config),
        trusted_pem,
        admin,
        own_ca,
    }))
}

#[cfg(test)]
mod tests;
