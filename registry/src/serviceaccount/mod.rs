//! Service accounts' credentials and their admission, as upstream keeps them in
//! pkg/serviceaccount, pkg/registry/core/serviceaccount/storage/token.go and
//! plugin/pkg/admission/serviceaccount: bound JWTs issued by the `token` subresource
//! (TokenRequest), verified back into users for authentication (the pods' ServiceAccount
//! admission is a plugin of the chain, `admission::service_account`). The server hands the keys in at start ([`Registry::set_service_account_tokens`]);
//! nothing here reads a file or speaks HTTP.

mod authenticate;
pub mod claims;
pub mod jwt;
mod token_request;

#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use self::claims::{Claims, Private, Ref};
pub use self::jwt::{key_id, SigningKey, TokenError, Verifier, VerifyingKey};

use crate::Registry;

/// What the server's flags decide about service account tokens.
#[derive(Debug, Clone)]
pub struct TokenConfig {
    /// `--service-account-signing-key-file`.
    pub signer: SigningKey,
    /// `--service-account-key-file` (the signing key's public half by default), the
    /// `--service-account-issuer`s and `--api-audiences`.
    pub verifier: Verifier,
    /// `--service-account-max-token-expiration` in seconds; 0: no cap.
    pub max_expiration_seconds: i64,
    /// `--service-account-extend-token-expiration`: pod-bound tokens asked for with the
    /// admission's expiration live a year and are only warned about after it.
    pub extend_expiration: bool,
}

impl TokenConfig {
    /// The issuer new tokens name (the first `--service-account-issuer`).
    pub fn issuer(&self) -> &str {
        self.verifier
            .issuers
            .first()
            .map(String::as_str)
            .unwrap_or_default()
    }

    pub fn api_audiences(&self) -> &[String] {
        &self.verifier.audiences
    }
}

impl Registry {
    /// Issues and accepts service account tokens with `config` from now on (once; a second
    /// call is ignored).
    pub fn set_service_account_tokens(&self, config: TokenConfig) {
        if self.service_account_tokens.set(Arc::new(config)).is_err() {
            tracing::warn!("service account token keys were already set; keeping the first");
        }
    }

    pub fn service_account_tokens(&self) -> Option<&Arc<TokenConfig>> {
        self.service_account_tokens.get()
    }
}
