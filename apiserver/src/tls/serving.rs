//! The HTTPS listener: TCP accepted in one task, each TLS handshake in its own (bounded by
//! [`HANDSHAKE_TIMEOUT`]), so a client that stalls or sends garbage holds up no one. Failed
//! handshakes are logged at debug and the connection closed; plain HTTP sent to this port is
//! answered 400 as Go's servers answer it.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use super::certs::CertError;
use crate::authn::{self, Peer, UserInfo};

/// How long a client has to finish its handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What Go's net/http answers plain HTTP on a TLS port.
const PLAIN_HTTP_ANSWER: &[u8] = b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// The rustls configuration: the serving certificate chain and key, client certificates
/// requested and, when given, verified against `client_cas` (none given is anonymous);
/// HTTP/2 and HTTP/1.1 offered by ALPN.
pub fn server_config(
    cert_file: &std::path::Path,
    key_file: &std::path::Path,
    client_ca_file: &std::path::Path,
) -> Result<ServerConfig, CertError> {
    let invalid = |path: &std::path::Path, message: String| CertError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let chain = read_certs(cert_file)?;
    let key = PrivateKeyDer::from_pem_file(key_file)
        .map_err(|e| invalid(key_file, format!("no usable PEM private key: {e}")))?;
    let mut roots = RootCertStore::empty();
    for ca in read_certs(client_ca_file)? {
        roots
            .add(ca)
            .map_err(|e| invalid(client_ca_file, format!("not a usable CA: {e}")))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|e| invalid(client_ca_file, e.to_string()))?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(cert_file, e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| invalid(cert_file, format!("certificate and key do not match: {e}")))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Every certificate in a PEM file; an error when there is none.
pub fn read_certs(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, CertError> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| CertError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?
        .collect::<Result<_, _>>()
        .map_err(|e| CertError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(CertError::Invalid {
            path: path.to_path_buf(),
            message: "no PEM certificate".into(),
        });
    }
    Ok(certs)
}

/// One established TLS connection and the user its client certificate names.
pub struct TlsConnection {
    stream: TlsStream<TcpStream>,
    user: UserInfo,
}

impl AsyncRead for TlsConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// Established TLS connections, for `axum::serve`.
pub struct TlsListener {
    incoming: mpsc::Receiver<(TlsConnection, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Accepts on `listener` until `stop`, handshaking each connection in its own task.
    pub fn spawn(
        listener: TcpListener,
        config: Arc<ServerConfig>,
        stop: CancellationToken,
    ) -> Self {
        let local = listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let (tx, incoming) = mpsc::channel(64);
        let acceptor = TlsAcceptor::from(config);
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tx.closed() => return,
                    accepted = listener.accept() => accepted,
                };
                match accepted {
                    Ok((tcp, peer)) => {
                        tokio::spawn(handshake(tcp, peer, acceptor.clone(), tx.clone()));
                    }
                    Err(e) => {
                        // As axum's loop: out of descriptors and the like pass.
                        debug!(error = %e, "accepting a TLS connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        });
        Self { incoming, local }
    }
}

async fn handshake(
    tcp: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    tx: mpsc::Sender<(TlsConnection, SocketAddr)>,
) {
    // Watch events are small writes; without TCP_NODELAY one can wait behind the previous.
    let _ = tcp.set_nodelay(true);
    let established = tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
        let mut first = [0u8; 1];
        let n = tcp.peek(&mut first).await?;
        // A TLS connection opens with a handshake record (0x16); a letter is plain HTTP.
        if n == 1 && first[0].is_ascii_uppercase() {
            let mut tcp = tcp;
            let _ = tcp.write_all(PLAIN_HTTP_ANSWER).await;
            let _ = tcp.shutdown().await;
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "plain HTTP sent to the TLS port (answered 400)",
            ));
        }
        acceptor.accept(tcp).await
    })
    .await;
    match established {
        Ok(Ok(stream)) => {
            let user = authn::user_from_peer_certificates(stream.get_ref().1.peer_certificates());
            let _ = tx.send((TlsConnection { stream, user }, peer)).await;
        }
        Ok(Err(e)) => debug!(%peer, error = %e, "TLS handshake failed"),
        Err(_) => debug!(%peer, "TLS handshake timed out"),
    }
}

impl Listener for TlsListener {
    type Io = TlsConnection;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.incoming.recv().await {
            Some(connection) => connection,
            // The accept task ended (stopping): no connection comes any more.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}

impl Connected<IncomingStream<'_, TlsListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, TlsListener>) -> Self {
        Peer {
            addr: *stream.remote_addr(),
            user: stream.io().user.clone(),
        }
    }
}
