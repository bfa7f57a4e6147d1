//! Service account token keys and flags (kube-apiserver's --service-account-* and
//! --api-audiences): the private key tokens are signed with, generated once into
//! `<data-dir>/pki/sa.key` when `--service-account-signing-key-file` is not given (as k3s
//! does), and the public keys that verify them. ECDSA P-256 keys sign with ES256 and RSA
//! keys with RS256, as upstream picks the algorithm from the key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use registry::serviceaccount::{SigningKey, TokenConfig, Verifier, VerifyingKey};
use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey};
use rsa::traits::PublicKeyParts;
use thiserror::Error;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::options::Options;

/// k3s's and kubeadm's issuer.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The generated signing key, beside the rest of the server's PKI.
pub const GENERATED_KEY_FILE: &str = "sa.key";

#[derive(Debug, Error)]
pub enum KeyError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("generating the service account signing key: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("writing the service account signing key: {0}")]
    Write(#[from] crate::tls::certs::CertError),
    #[error("{0}")]
    Flag(String),
}

/// A key of either kind, with what signs or verifies and the DER public key that names it.
enum Key {
    Ec(p256::SecretKey),
    EcPublic(p256::PublicKey),
    Rsa(Box<rsa::RsaPrivateKey>),
    RsaPublic(rsa::RsaPublicKey),
}

fn invalid(path: &Path, message: impl std::fmt::Display) -> KeyError {
    KeyError::Invalid {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

/// The PEM blocks of a text, each whole (label and text).
fn pem_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + 11..];
        let Some(label_end) = after.find("-----") else {
            break;
        };
        let label = after[..label_end].to_string();
        let end_marker = format!("-----END {label}-----");
        let Some(end) = rest[start..].find(&end_marker) else {
            break;
        };
        let stop = start + end + end_marker.len();
        blocks.push((label, rest[start..stop].to_string()));
        rest = &rest[stop..];
    }
    blocks
}

/// The base64 body of one PEM block.
fn pem_body(block: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let body: String = block
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .map(str::trim)
        .collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}

/// The keys of a PEM file: private keys, public keys, certificates' public keys.
fn read_keys(path: &Path) -> Result<Vec<Key>, KeyError> {
    let text = std::fs::read_to_string(path).map_err(|source| KeyError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut keys = Vec::new();
    for (label, block) in pem_blocks(&text) {
        let key = match label.as_str() {
            "EC PRIVATE KEY" => p256::SecretKey::from_sec1_pem(&block)
                .map(Key::Ec)
                .map_err(|e| invalid(path, format!("EC private key (P-256 expected): {e}")))?,
            "RSA PRIVATE KEY" => rsa::RsaPrivateKey::from_pkcs1_pem(&block)
                .map(|k| Key::Rsa(Box::new(k)))
                .map_err(|e| invalid(path, format!("RSA private key: {e}")))?,
            "PRIVATE KEY" => match p256::SecretKey::from_pkcs8_pem(&block) {
                Ok(k) => Key::Ec(k),
                Err(_) => rsa::RsaPrivateKey::from_pkcs8_pem(&block)
                    .map(|k| Key::Rsa(Box::new(k)))
                    .map_err(|e| {
                        invalid(path, format!("private key (P-256 or RSA expected): {e}"))
                    })?,
            },
            "RSA PUBLIC KEY" => rsa::RsaPublicKey::from_pkcs1_pem(&block)
                .map(Key::RsaPublic)
                .map_err(|e| invalid(path, format!("RSA public key: {e}")))?,
            "PUBLIC KEY" => {
                let der = pem_body(&block).ok_or_else(|| invalid(path, "bad PEM"))?;
                public_key(&der).map_err(|e| invalid(path, e))?
            }
            "CERTIFICATE" => {
                let der = pem_body(&block).ok_or_else(|| invalid(path, "bad PEM"))?;
                let (_, cert) = X509Certificate::from_der(&der)
                    .map_err(|e| invalid(path, format!("certificate: {e}")))?;
                public_key(cert.public_key().raw).map_err(|e| invalid(path, e))?
            }
            _ => continue,
        };
        keys.push(key);
    }
    Ok(keys)
}

/// A DER SubjectPublicKeyInfo of a P-256 or RSA key.
fn public_key(der: &[u8]) -> Result<Key, String> {
    if let Ok(k) = p256::PublicKey::from_public_key_der(der) {
        return Ok(Key::EcPublic(k));
    }
    rsa::RsaPublicKey::from_public_key_der(der)
        .map(Key::RsaPublic)
        .map_err(|e| format!("public key (P-256 or RSA expected): {e}"))
}

impl Key {
    fn signing(&self, path: &Path) -> Result<Option<SigningKey>, KeyError> {
        let der = self.public_der(path)?;
        Ok(match self {
            Key::Ec(k) => {
                let pkcs8 = k
                    .to_pkcs8_pem(Default::default())
                    .map_err(|e| invalid(path, e))?;
                let key =
                    EncodingKey::from_ec_pem(pkcs8.as_bytes()).map_err(|e| invalid(path, e))?;
                Some(SigningKey::new(key, Algorithm::ES256, &der))
            }
            Key::Rsa(k) => {
                let pkcs8 = k
                    .to_pkcs8_pem(Default::default())
                    .map_err(|e| invalid(path, e))?;
                let key =
                    EncodingKey::from_rsa_pem(pkcs8.as_bytes()).map_err(|e| invalid(path, e))?;
                Some(SigningKey::new(key, Algorithm::RS256, &der))
            }
            Key::EcPublic(_) | Key::RsaPublic(_) => None,
        })
    }

    fn verifying(&self, path: &Path) -> Result<VerifyingKey, KeyError> {
        let der = self.public_der(path)?;
        Ok(match self {
            Key::Ec(_) | Key::EcPublic(_) => {
                let pem = match self {
                    Key::Ec(k) => k.public_key().to_public_key_pem(Default::default()),
                    Key::EcPublic(k) => k.to_public_key_pem(Default::default()),
                    _ => unreachable!("matched above"),
                }
                .map_err(|e| invalid(path, e))?;
                let key = DecodingKey::from_ec_pem(pem.as_bytes()).map_err(|e| invalid(path, e))?;
                VerifyingKey::new(key, Algorithm::ES256, &der)
            }
            Key::Rsa(k) => rsa_verifying(&k.to_public_key(), &der),
            Key::RsaPublic(k) => rsa_verifying(k, &der),
        })
    }

    fn public_der(&self, path: &Path) -> Result<Vec<u8>, KeyError> {
        let doc = match self {
            Key::Ec(k) => k.public_key().to_public_key_der(),
            Key::EcPublic(k) => k.to_public_key_der(),
            Key::Rsa(k) => k.to_public_key().to_public_key_der(),
            Key::RsaPublic(k) => k.to_public_key_der(),
        };
        doc.map(|d| d.as_bytes().to_vec())
            .map_err(|e| invalid(path, e))
    }
}

fn rsa_verifying(key: &rsa::RsaPublicKey, der: &[u8]) -> VerifyingKey {
    let key = DecodingKey::from_rsa_raw_components(&key.n().to_bytes_be(), &key.e().to_bytes_be());
    VerifyingKey::new(key, Algorithm::RS256, der)
}

/// The signing key file: the flag's, or the generated one (made now when absent).
fn signing_key_file(options: &Options) -> Result<PathBuf, KeyError> {
    if let Some(path) = &options.service_account_signing_key_file {
        return Ok(path.clone());
    }
    let dir = options.data_dir.join("pki");
    let path = dir.join(GENERATED_KEY_FILE);
    if !path.exists() {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&dir).map_err(|source| KeyError::Io {
            path: dir.clone(),
            source,
        })?;
        let key = rcgen::KeyPair::generate()?;
        crate::tls::certs::write_file(&path, &key.serialize_pem(), true)?;
        tracing::info!(file = %path.display(), "generated the service account signing key");
    }
    Ok(path)
}

/// What `options` decide about service account tokens.
pub fn prepare(options: &Options) -> Result<TokenConfig, KeyError> {
    let max = options
        .service_account_max_token_expiration
        .unwrap_or(Duration::ZERO);
    if !max.is_zero() && (max < Duration::from_secs(3600) || max.as_secs() > 1 << 32) {
        return Err(KeyError::Flag(
            "the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"
                .into(),
        ));
    }
    let issuers: Vec<String> = options
        .service_account_issuer
        .iter()
        .filter(|i| !i.is_empty())
        .cloned()
        .collect();
    let Some(first) = issuers.first().cloned() else {
        return Err(KeyError::Flag(
            "--service-account-issuer must not be empty".into(),
        ));
    };
    let signing_file = signing_key_file(options)?;
    let signer = read_keys(&signing_file)?
        .iter()
        .find_map(|k| k.signing(&signing_file).transpose())
        .transpose()?
        .ok_or_else(|| invalid(&signing_file, "no private key (PEM) found"))?;
    // As upstream: the signing key verifies only when no key files are given.
    let key_files = if options.service_account_key_file.is_empty() {
        vec![signing_file.clone()]
    } else {
        options.service_account_key_file.clone()
    };
    let mut keys = Vec::new();
    for file in &key_files {
        let found = read_keys(file)?;
        if found.is_empty() {
            return Err(invalid(file, "no public or private key (PEM) found"));
        }
        for key in found {
            keys.push(key.verifying(file)?);
        }
    }
    let audiences = if options.api_audiences.is_empty() {
        vec![first]
    } else {
        options.api_audiences.clone()
    };
    tracing::info!(
        kid = signer.kid(),
        issuers = ?issuers,
        audiences = ?audiences,
        verifying_keys = keys.len(),
        "service account tokens"
    );
    Ok(TokenConfig {
        signer,
        verifier: Verifier {
            keys,
            issuers,
            audiences,
        },
        max_expiration_seconds: max.as_secs() as i64,
        extend_expiration: options.service_account_extend_token_expiration,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn options(dir: &Path, extra: &[&str]) -> Options {
        let mut args = vec![
            "apiserver".to_string(),
            "--data-dir".into(),
            dir.display().to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        Options::parse_from(args)
    }

    #[test]
    fn generated_once_and_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = prepare(&options(dir.path(), &[])).expect("prepare");
        let key = dir.path().join("pki").join(GENERATED_KEY_FILE);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&key).expect("key").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = prepare(&options(dir.path(), &[])).expect("prepare");
        assert_eq!(first.signer.kid(), again.signer.kid());
        assert_eq!(first.issuer(), DEFAULT_ISSUER);
        assert_eq!(first.api_audiences(), [DEFAULT_ISSUER]);
        assert_eq!(first.verifier.keys.len(), 1);
        assert_eq!(first.verifier.keys[0].kid(), first.signer.kid());
    }

    #[test]
    fn flags_and_rsa_and_public_key_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let rsa_key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 1024).expect("rsa");
        let pkcs1 = rsa::pkcs1::EncodeRsaPrivateKey::to_pkcs1_pem(&rsa_key, Default::default())
            .expect("pem");
        let signing = dir.path().join("signing.pem");
        std::fs::write(&signing, pkcs1.as_bytes()).expect("write");
        let ec = p256::SecretKey::random(&mut rsa::rand_core::OsRng);
        let public = dir.path().join("old.pub");
        std::fs::write(
            &public,
            ec.public_key()
                .to_public_key_pem(Default::default())
                .expect("pem"),
        )
        .expect("write");
        let config = prepare(&options(
            dir.path(),
            &[
                "--service-account-signing-key-file",
                &signing.display().to_string(),
                "--service-account-key-file",
                &signing.display().to_string(),
                "--service-account-key-file",
                &public.display().to_string(),
                "--service-account-issuer",
                "https://a.example",
                "--service-account-issuer",
                "https://b.example",
                "--api-audiences",
                "x,y",
                "--service-account-max-token-expiration",
                "2h",
            ],
        ))
        .expect("prepare");
        assert_eq!(config.issuer(), "https://a.example");
        assert_eq!(config.verifier.issuers.len(), 2);
        assert_eq!(config.api_audiences(), ["x", "y"]);
        assert_eq!(config.max_expiration_seconds, 7200);
        assert_eq!(config.verifier.keys.len(), 2);
        assert_eq!(config.verifier.keys[0].kid(), config.signer.kid());
        assert!(!dir.path().join("pki").join(GENERATED_KEY_FILE).exists());
    }

    #[test]
    fn bad_files_and_flags_are_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let junk = dir.path().join("junk.pem");
        std::fs::write(
            &junk,
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        )
        .expect("write");
        let path = junk.display().to_string();
        assert!(prepare(&options(
            dir.path(),
            &["--service-account-signing-key-file", &path]
        ))
        .is_err());
        std::fs::write(&junk, "nothing here").expect("write");
        assert!(prepare(&options(
            dir.path(),
            &["--service-account-signing-key-file", &path]
        ))
        .is_err());
        assert!(prepare(&options(
            dir.path(),
            &["--service-account-max-token-expiration", "10m"]
        ))
        .is_err());
    }
}
