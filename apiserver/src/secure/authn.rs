//! Authentication, first piece (upstream's k8s.io/apiserver/pkg/authentication): the user a
//! request acts as, put into the request as an extension ([`UserInfo`]) for the layers after.
//!
//! - A TLS client certificate that the client CA verified (the handshake refuses any other)
//!   is the x509 authenticator's user: CN the name, O the groups, and
//!   `authentication.kubernetes.io/credential-id: X509SHA256=<fingerprint>` in extra. A
//!   certificate with an empty CN authenticates no one (anonymous, as upstream).
//! - A TLS request without a client certificate is `system:anonymous` in
//!   `system:unauthenticated` (upstream's anonymous authenticator). Nothing is refused yet:
//!   authorization comes later.
//! - Plain HTTP, served only on loopback, is the trusted local port: its requests act as
//!   [`UserInfo::loopback`], `system:apiserver` in `system:masters` (the user upstream's
//!   own loopback client has), so a later authorizer sees an explicit privileged user
//!   rather than the absence of one.
//!
//! Authenticated users get `system:authenticated` added to their groups (upstream's
//! AuthenticatedGroupAdder).

use std::collections::BTreeMap;

use axum::extract::{ConnectInfo, Request};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use x509_parser::prelude::{FromDer, X509Certificate};

pub const ANONYMOUS: &str = "system:anonymous";
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
pub const AUTHENTICATED: &str = "system:authenticated";
pub const APISERVER_USER: &str = "system:apiserver";
pub const MASTERS: &str = "system:masters";
/// upstream's user.CredentialIDKey.
pub const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// upstream's user.Info.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn anonymous() -> Self {
        Self {
            name: ANONYMOUS.into(),
            groups: vec![UNAUTHENTICATED.into()],
            ..Default::default()
        }
    }

    /// The trusted local (plain HTTP, loopback) port's user.
    pub fn loopback() -> Self {
        Self {
            name: APISERVER_USER.into(),
            groups: vec![MASTERS.into(), AUTHENTICATED.into()],
            ..Default::default()
        }
    }

    pub fn is_anonymous(&self) -> bool {
        self.name == ANONYMOUS
    }

    /// The user of a verified client certificate chain (leaf first), or anonymous when there
    /// is none or its leaf names no one.
    pub fn from_peer_certificates(chain: Option<&[impl AsRef<[u8]>]>) -> Self {
        chain
            .and_then(|c| c.first())
            .and_then(|leaf| from_certificate(leaf.as_ref()))
            .unwrap_or_else(Self::anonymous)
    }
}

/// upstream's x509 CommonNameUserConversion plus the authenticated group, for a leaf that
/// the TLS layer already verified. None for an unparsable certificate or an empty CN.
pub fn from_certificate(der: &[u8]) -> Option<UserInfo> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .filter(|cn| !cn.is_empty())?
        .to_string();
    let mut groups: Vec<String> = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_string)
        .collect();
    if !groups.iter().any(|g| g == AUTHENTICATED) {
        groups.push(AUTHENTICATED.into());
    }
    let fingerprint: String = Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let extra = BTreeMap::from([(
        CREDENTIAL_ID.to_string(),
        vec![format!("X509SHA256={fingerprint}")],
    )]);
    Some(UserInfo {
        name,
        uid: String::new(),
        groups,
        extra,
    })
}

/// What a TLS connection brought: its peer and the user its certificate names.
#[derive(Debug, Clone)]
pub struct Peer {
    pub addr: std::net::SocketAddr,
    pub user: UserInfo,
}

/// Puts the connection's user into each request of a TLS connection.
pub async fn authenticate(mut request: Request, next: Next) -> Response {
    let user = request
        .extensions()
        .get::<ConnectInfo<Peer>>()
        .map(|ConnectInfo(peer)| peer.user.clone())
        .unwrap_or_else(UserInfo::anonymous);
    request.extensions_mut().insert(user);
    next.run(request).await
}
