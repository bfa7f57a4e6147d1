//! The TLS the aggregator speaks to an aggregated server (upstream's BuildTransportConfig):
//! the server is verified by the APIService's `caBundle` under the Service's DNS name, or not
//! at all with `insecureSkipTLSVerify` (and for the availability check, as upstream's); the
//! front-proxy client certificate is always presented.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::tls::front_proxy::FrontProxy;

/// How the server's certificate is judged.
pub enum Trust<'a> {
    Bundle(&'a [u8]),
    Insecure,
}

/// Accepts any certificate, still checking the handshake's signatures.
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn client_config(
    trust: Trust<'_>,
    front_proxy: &FrontProxy,
) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match trust {
        Trust::Bundle(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(pem).flatten() {
                let _ = roots.add(cert);
            }
            builder.with_root_certificates(roots)
        }
        Trust::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider))),
    };
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(front_proxy.client_cert_pem.as_bytes())
            .flatten()
            .collect();
    let key = PrivateKeyDer::from_pem_slice(front_proxy.client_key_pem.as_bytes())
        .map_err(|e| format!("the proxy client key: {e}"))?;
    builder
        .with_client_auth_cert(chain, key)
        .map_err(|e| format!("the proxy client certificate: {e}"))
}

/// Dials `address` and speaks TLS to it as `server_name`; errors in Go's words.
pub async fn connect(
    address: &str,
    server_name: &str,
    trust: Trust<'_>,
    front_proxy: &FrontProxy,
) -> Result<TlsStream<TcpStream>, String> {
    let mut config = client_config(trust, front_proxy)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tcp = TcpStream::connect(address).await.map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
            _ => e.to_string(),
        };
        format!("dial tcp {address}: {why}")
    })?;
    let _ = tcp.set_nodelay(true);
    let name = ServerName::try_from(server_name.to_string()).map_err(|e| e.to_string())?;
    TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| {
            let text = e.to_string();
            if text.contains("UnknownIssuer") || text.contains("invalid peer certificate") {
                format!("tls: failed to verify certificate: x509: {text}")
            } else {
                format!("remote error: {text}")
            }
        })
}
