//! Authentication, first piece (upstream's k8s.io/apiserver/pkg/authentication): the user a
//! request acts as, put into the request as an extension ([`UserInfo`]) for the layers after.
//!
//! - A TLS client certificate that the client CA verified (the handshake refuses any other)
//!   is the x509 authenticator's user: CN the name, O the groups, and
//!   `authentication.kubernetes.io/credential-id: X509SHA256=<fingerprint>` in extra. A
//!   certificate with an empty CN authenticates no one (anonymous, as upstream).
//! - A `Authorization: Bearer <token>` header names a user of `--token-auth-file` (upstream's
//!   static token file, [`TokenFile`]), else is a service account JWT the registry issued
//!   (upstream's ServiceAccount token authenticator: signature, issuer, audience, expiry,
//!   and the account and bound object still there). A bearer token that names no one is
//!   401: it does not fall back to anonymous (upstream's union.NewFailOnError). Other
//!   schemes and an empty token are no credentials, as upstream's bearer-token
//!   authenticator treats them.
//! - A TLS request with no credentials is `system:anonymous` in `system:unauthenticated`
//!   (upstream's anonymous authenticator), or 401 with `--anonymous-auth=false`.
//! - Plain HTTP, served only on loopback, is the trusted local port: its requests act as
//!   [`UserInfo::loopback`], `system:apiserver` in `system:masters` (the user upstream's
//!   own loopback client has), so a later authorizer sees an explicit privileged user
//!   rather than the absence of one.
//!
//! Authenticated users get `system:authenticated` added to their groups (upstream's
//! AuthenticatedGroupAdder).
//!
//! Impersonation (`impersonation`), which makes an authenticated request act as another
//! user, runs later, after authorization's check of the `impersonate` verb.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use x509_parser::prelude::{FromDer, X509Certificate};

pub mod impersonation;
pub mod tokenfile;

pub mod review;
pub use tokenfile::{TokenFile, TokenFileError};

pub use registry::auth::{
    UserInfo, ANONYMOUS, APISERVER_USER, AUTHENTICATED, CREDENTIAL_ID, MASTERS, UNAUTHENTICATED,
};

/// The user of a verified client certificate chain (leaf first), or anonymous when there is
/// none or its leaf names no one.
pub fn user_from_peer_certificates(chain: Option<&[impl AsRef<[u8]>]>) -> UserInfo {
    chain
        .and_then(|c| c.first())
        .and_then(|leaf| from_certificate(leaf.as_ref()))
        .unwrap_or_else(UserInfo::anonymous)
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

/// The authenticators of the secure port, in upstream's order: x509 (done at the handshake),
/// bearer tokens (static, then service account JWTs), anonymous.
#[derive(Clone)]
pub struct Authenticator {
    pub tokens: TokenFile,
    /// `--anonymous-auth`: requests without credentials are `system:anonymous`.
    pub anonymous: bool,
    /// Where service account tokens are verified and their accounts looked up; None: no
    /// service account tokens.
    pub service_accounts: Option<Arc<registry::Registry>>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("tokens", &self.tokens)
            .field("anonymous", &self.anonymous)
            .field("service_accounts", &self.service_accounts.is_some())
            .finish()
    }
}

impl Default for Authenticator {
    fn default() -> Self {
        Self {
            tokens: TokenFile::default(),
            anonymous: true,
            service_accounts: None,
        }
    }
}

/// Why a request is refused (answered 401, logged at debug).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A bearer token that names no one.
    InvalidToken,
    /// No credentials, and anonymous requests are off.
    NoCredentials,
}

/// A request's authentication, when it authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    pub user: UserInfo,
    /// By the bearer token (upstream then removes the Authorization header).
    pub by_token: bool,
    /// `Bearer  <token>`: an empty token, then something (upstream warns of it).
    pub space_before_token: bool,
}

/// What an `Authorization` header holds, as upstream's bearertoken authenticator reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bearer<'a> {
    /// No header, another scheme, or an empty token: no credentials.
    None {
        space_before_token: bool,
    },
    Token(&'a [u8]),
}

/// Upstream's reading: trim, split on spaces into at most 3 parts, scheme `bearer` in any
/// case, the second part the token. Works on bytes: a header that is not ASCII is only a
/// token that names no one.
pub fn bearer(header: Option<&[u8]>) -> Bearer<'_> {
    let none = Bearer::None {
        space_before_token: false,
    };
    let Some(header) = header else {
        return none;
    };
    let header = header.trim_ascii();
    let mut parts = header.splitn(3, |b| *b == b' ');
    let (Some(scheme), Some(token)) = (parts.next(), parts.next()) else {
        return none;
    };
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return none;
    }
    if token.is_empty() {
        return Bearer::None {
            space_before_token: parts.next().is_some(),
        };
    }
    Bearer::Token(token)
}

impl Authenticator {
    /// The authenticators `options` ask for; a bad `--token-auth-file` is an error.
    pub fn from_options(options: &crate::options::Options) -> Result<Self, TokenFileError> {
        let tokens = match &options.token_auth_file {
            Some(path) => {
                let tokens = TokenFile::read(path)?;
                tracing::info!(file = %path.display(), users = tokens.len(), "token authentication");
                tokens
            }
            None => TokenFile::default(),
        };
        Ok(Self {
            tokens,
            anonymous: options.anonymous_auth,
            service_accounts: None,
        })
    }

    /// The user of a request over TLS: `connection` is the x509 authenticator's answer (the
    /// connection's user; anonymous when its certificate authenticated no one), `header` the
    /// request's Authorization header.
    pub async fn authenticate(
        &self,
        connection: Option<&UserInfo>,
        header: Option<&[u8]>,
    ) -> Result<Authenticated, Refusal> {
        // The x509 authenticator's users are always in system:authenticated; the anonymous
        // connection user never is.
        if let Some(user) = connection.filter(|u| u.groups.iter().any(|g| g == AUTHENTICATED)) {
            return Ok(Authenticated {
                user: user.clone(),
                by_token: false,
                space_before_token: false,
            });
        }
        match bearer(header) {
            Bearer::Token(token) => {
                let user = match self.tokens.user(token) {
                    Some(user) => user.clone(),
                    None => self
                        .service_account_user(token)
                        .await
                        .ok_or(Refusal::InvalidToken)?,
                };
                Ok(Authenticated {
                    user: with_authenticated_group(user),
                    by_token: true,
                    space_before_token: false,
                })
            }
            Bearer::None { space_before_token } if self.anonymous => Ok(Authenticated {
                user: UserInfo::anonymous(),
                by_token: false,
                space_before_token,
            }),
            Bearer::None { .. } => Err(Refusal::NoCredentials),
        }
    }
}

impl Authenticator {
    /// The user of a service account token, if `token` is a good one.
    async fn service_account_user(&self, token: &[u8]) -> Option<UserInfo> {
        let registry = self.service_accounts.as_ref()?;
        let token = std::str::from_utf8(token).ok()?;
        match registry.authenticate_service_account_token(token).await {
            Ok(user) => user,
            Err(e) => {
                tracing::debug!(error = %e, "service account token refused");
                None
            }
        }
    }
}

/// Upstream's AuthenticatedGroupAdder: `system:authenticated` unless the user is already in
/// it or in `system:unauthenticated`.
fn with_authenticated_group(mut user: UserInfo) -> UserInfo {
    if !user
        .groups
        .iter()
        .any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED)
    {
        user.groups.push(AUTHENTICATED.into());
    }
    user
}

/// Upstream's warning for `Bearer  <token>`.
const SPACE_BEFORE_TOKEN_WARNING: &str = "299 - \"the provided Authorization header contains extra space before the bearer token, and is ignored\"";

/// What upstream answers a request that does not authenticate, byte for byte (json.Encoder's
/// newline included).
pub const UNAUTHORIZED_BODY: &str = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}\n";

pub fn unauthorized() -> Response {
    crate::api::response::raw_json(
        StatusCode::UNAUTHORIZED,
        bytes::Bytes::from_static(UNAUTHORIZED_BODY.as_bytes()),
    )
}

/// [`unauthorized`], indented when the request asked for pretty answers (curl does).
fn unauthorized_in(pretty: bool) -> Response {
    if !pretty {
        return unauthorized();
    }
    let status: serde_json::Value = serde_json::from_str(UNAUTHORIZED_BODY).unwrap_or_default();
    crate::api::response::json_in(StatusCode::UNAUTHORIZED, &status, true)
}

/// Authenticates each request of a TLS connection: the user goes into the request, or the
/// request is answered 401.
pub async fn authenticate(
    State(authenticator): State<Arc<Authenticator>>,
    mut request: Request,
    next: Next,
) -> Response {
    let connection = request
        .extensions()
        .get::<ConnectInfo<Peer>>()
        .map(|ConnectInfo(peer)| &peer.user);
    let header = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|h| h.as_bytes());
    match authenticator.authenticate(connection, header).await {
        Ok(authenticated) => {
            if authenticated.by_token {
                // As upstream: nothing after authentication sees the token.
                request.headers_mut().remove(header::AUTHORIZATION);
            }
            request.extensions_mut().insert(authenticated.user);
            let mut response = next.run(request).await;
            if authenticated.space_before_token {
                response.headers_mut().append(
                    header::WARNING,
                    HeaderValue::from_static(SPACE_BEFORE_TOKEN_WARNING),
                );
            }
            response
        }
        Err(refusal) => {
            tracing::debug!(?refusal, path = %request.uri().path(), "unable to authenticate the request");
            let pretty =
                crate::api::response::is_pretty_request(request.uri().query(), request.headers());
            unauthorized_in(pretty)
        }
    }
}

#[cfg(test)]
mod tests;
