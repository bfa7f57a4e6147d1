//! Signing and verifying service account JWTs (upstream's pkg/serviceaccount/jwt.go). The
//! key material comes from the server's flags; this module only uses it.

use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::claims::{check_times, Claims};

/// Tokens longer than this are not even parsed (no real token comes near it).
pub const MAX_TOKEN_BYTES: usize = 64 * 1024;

/// Upstream's key id: the unpadded base64url SHA-256 of the public key's DER
/// (SubjectPublicKeyInfo).
pub fn key_id(public_key_der: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(public_key_der))
}

/// The private key tokens are signed with.
#[derive(Clone)]
pub struct SigningKey {
    key: EncodingKey,
    algorithm: Algorithm,
    kid: String,
}

impl SigningKey {
    /// `key` signs with `algorithm` (RS256 or ES256); `public_key_der` is its public half
    /// as DER SubjectPublicKeyInfo, which names it (`kid`).
    pub fn new(key: EncodingKey, algorithm: Algorithm, public_key_der: &[u8]) -> Self {
        Self {
            key,
            algorithm,
            kid: key_id(public_key_der),
        }
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    pub fn sign(&self, claims: &Claims) -> Result<String, jsonwebtoken::errors::Error> {
        let mut header = Header::new(self.algorithm);
        // Upstream's tokens carry alg and kid only.
        header.typ = None;
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.key)
    }
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("algorithm", &self.algorithm)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// A public key tokens are verified with.
#[derive(Clone)]
pub struct VerifyingKey {
    key: DecodingKey,
    algorithm: Algorithm,
    kid: String,
}

impl VerifyingKey {
    pub fn new(key: DecodingKey, algorithm: Algorithm, public_key_der: &[u8]) -> Self {
        Self {
            key,
            algorithm,
            kid: key_id(public_key_der),
        }
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }
}

impl std::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyingKey")
            .field("algorithm", &self.algorithm)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// Why a token that claims to be ours is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("token is too large")]
    TooLarge,
    #[error("invalid signature: {0}")]
    Signature(String),
    #[error("token issuer {0:?} is invalid")]
    Issuer(String),
    #[error("token audiences {token:?} is invalid for the target audiences {api:?}")]
    Audience {
        token: Vec<String>,
        api: Vec<String>,
    },
    #[error("{0}")]
    Time(&'static str),
    #[error("{0}")]
    Binding(String),
}

/// Verifies tokens: signed by one of `keys`, issued by one of `issuers`, for one of
/// `audiences`, in time.
#[derive(Debug, Clone)]
pub struct Verifier {
    pub keys: Vec<VerifyingKey>,
    pub issuers: Vec<String>,
    pub audiences: Vec<String>,
}

impl Verifier {
    /// Upstream's hasCorrectIssuer: whether the (unverified) payload names one of our
    /// issuers. A token that does not is someone else's, for other authenticators.
    pub fn is_ours(&self, token: &str) -> bool {
        #[derive(Deserialize)]
        struct Issuer {
            #[serde(default)]
            iss: String,
        }
        let mut parts = token.split('.');
        let (Some(_), Some(payload), Some(_), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        let Ok(bytes) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload) else {
            return false;
        };
        serde_json::from_slice::<Issuer>(&bytes)
            .map(|i| self.issuers.contains(&i.iss))
            .unwrap_or(false)
    }

    /// The claims of a token that is ours and holds at `now` (Unix seconds); what is bound
    /// to it is for the caller to look up.
    pub fn verify(&self, token: &str, now: i64) -> Result<Claims, TokenError> {
        self.verify_for(token, now, &self.audiences)
    }

    /// [`Verifier::verify`] for other target audiences than the server's (a TokenReview
    /// that names its own).
    pub fn verify_for(
        &self,
        token: &str,
        now: i64,
        audiences: &[String],
    ) -> Result<Claims, TokenError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenError::TooLarge);
        }
        let kid = jsonwebtoken::decode_header(token)
            .map_err(|e| TokenError::Signature(e.to_string()))?
            .kid;
        // The key the token names first, then the others (a kid is a hint, as upstream).
        let mut keys: Vec<&VerifyingKey> = self.keys.iter().collect();
        keys.sort_by_key(|k| Some(k.kid.as_str()) != kid.as_deref());
        let mut errors = Vec::new();
        let mut verified = None;
        for key in keys {
            let mut validation = Validation::new(key.algorithm);
            validation.validate_exp = false;
            validation.validate_nbf = false;
            validation.validate_aud = false;
            validation.required_spec_claims.clear();
            match jsonwebtoken::decode::<Claims>(token, &key.key, &validation) {
                Ok(data) => {
                    verified = Some(data.claims);
                    break;
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        let claims = verified.ok_or_else(|| TokenError::Signature(errors.join(", ")))?;
        if !self.issuers.contains(&claims.iss) {
            return Err(TokenError::Issuer(claims.iss));
        }
        let matching = claims.aud.iter().any(|a| audiences.contains(a));
        if !matching && !audiences.is_empty() {
            return Err(TokenError::Audience {
                token: claims.aud,
                api: audiences.to_vec(),
            });
        }
        check_times(&claims, now).map_err(TokenError::Time)?;
        if claims.kubernetes.is_none() {
            return Err(TokenError::Binding(
                "service account token claims are missing".into(),
            ));
        }
        Ok(claims)
    }
}
