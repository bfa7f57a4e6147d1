//! Connections to webhooks kept open between calls, as client-go's webhook clients keep theirs
//! (keep-alive, a client per configuration): without them every admission call paid a TCP
//! and TLS handshake, and parsed its caBundle again. Idle connections are kept per endpoint,
//! server name and CA, for at most 90 s (Go's IdleConnTimeout as Kubernetes sets it); one the
//! webhook has closed is dropped when next looked at.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::transport::Target;

pub type Sender = SendRequest<Full<Bytes>>;

/// Idle connections kept per key: enough for the calls one server has in flight to a webhook
/// endpoint under load (validating webhooks of a request are called at once), so that a busy
/// server does not shake hands again for most calls.
const MAX_IDLE: usize = 256;

/// How long an idle connection is kept.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// (address, server name, CA bundle).
type Key = (String, String, Vec<u8>);

#[derive(Default)]
struct Pool {
    idle: Mutex<HashMap<Key, Vec<(Instant, Sender)>>>,
    /// TLS client configurations by CA bundle.
    connectors: Mutex<HashMap<Vec<u8>, TlsConnector>>,
}

static POOL: LazyLock<Pool> = LazyLock::new(Pool::default);

/// Started with the first connection: drops idle connections past the timeout, also those of
/// webhooks no longer called, so that a burst's connections do not outlive it.
static SWEEPER: std::sync::Once = std::sync::Once::new();

fn sweep() {
    let mut idle = POOL.idle.lock().unwrap_or_else(|p| p.into_inner());
    idle.retain(|_, senders| {
        senders.retain(|(since, sender)| since.elapsed() <= IDLE_TIMEOUT && !sender.is_closed());
        !senders.is_empty()
    });
}

fn key(target: &Target) -> Key {
    (
        target.address.clone(),
        target.server_name.clone(),
        target.ca_bundle.clone(),
    )
}

/// An idle connection to the target that is still open, if there is one.
pub fn idle(target: &Target) -> Option<Sender> {
    let mut idle = POOL.idle.lock().unwrap_or_else(|p| p.into_inner());
    let senders = idle.get_mut(&key(target))?;
    // The oldest are at the front: those past the timeout go first.
    let expired = senders
        .iter()
        .take_while(|(since, _)| since.elapsed() > IDLE_TIMEOUT)
        .count();
    senders.drain(..expired);
    while let Some((_, sender)) = senders.pop() {
        if sender.is_ready() {
            return Some(sender);
        }
    }
    None
}

/// Keeps a connection whose exchange completed for the next call.
pub fn give_back(target: &Target, sender: Sender) {
    if !sender.is_ready() {
        return;
    }
    let mut idle = POOL.idle.lock().unwrap_or_else(|p| p.into_inner());
    let senders = idle.entry(key(target)).or_default();
    if senders.len() < MAX_IDLE {
        senders.push((Instant::now(), sender));
    }
}

fn connector(ca_bundle: &[u8]) -> Result<TlsConnector, String> {
    let mut connectors = POOL.connectors.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(found) = connectors.get(ca_bundle) {
        return Ok(found.clone());
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_bundle).flatten() {
        let _ = roots.add(cert);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let made = TlsConnector::from(Arc::new(config));
    // Bundles change rarely; a server that sees very many drops the lot rather than grow.
    if connectors.len() >= 256 {
        connectors.clear();
    }
    connectors.insert(ca_bundle.to_vec(), made.clone());
    Ok(made)
}

/// The words Go gives a failed connection.
fn dial_error(address: &str, e: &std::io::Error) -> String {
    let why = match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
        _ => e.to_string(),
    };
    format!("dial tcp {address}: {why}")
}

fn tls_error(e: &std::io::Error) -> String {
    let text = e.to_string();
    if text.contains("UnknownIssuer") || text.contains("invalid peer certificate") {
        "tls: failed to verify certificate: x509: certificate signed by unknown authority"
            .to_string()
    } else {
        format!("remote error: {text}")
    }
}

/// A new connection to the target: TCP, TLS verified against its CA, HTTP/1.1.
pub async fn dial(target: &Target) -> Result<Sender, String> {
    SWEEPER.call_once(|| {
        tokio::spawn(async {
            let mut every = tokio::time::interval(IDLE_TIMEOUT / 3);
            loop {
                every.tick().await;
                sweep();
            }
        });
    });
    let tcp = TcpStream::connect(&target.address)
        .await
        .map_err(|e| dial_error(&target.address, &e))?;
    let _ = tcp.set_nodelay(true);
    let name = ServerName::try_from(target.server_name.clone()).map_err(|e| e.to_string())?;
    let stream = connector(&target.ca_bundle)?
        .connect(name, tcp)
        .await
        .map_err(|e| tls_error(&e))?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    Ok(sender)
}
