//! Encryption at rest (upstream's `--encryption-provider-config`): values of the configured
//! resources are transformed on their way to the backend and back, so the backend only ever
//! holds ciphertext while everything above the store, the watch cache included, sees
//! plaintext.
//!
//! Stored forms are upstream's, byte for byte, so data moves between this server and
//! kube-apiserver in either direction:
//! - `k8s:enc:aesgcm:v1:<key>:` + nonce(12) + ciphertext and tag, the full storage key bound
//!   as additional data;
//! - `k8s:enc:aescbc:v1:<key>:` + IV(16) + PKCS#7-padded ciphertext;
//! - `k8s:enc:secretbox:v1:<key>:` + nonce(24) + secretbox;
//! - `identity`: the value as it is.

mod aes_cbc;
mod aes_gcm;
mod config;
mod resources;
mod routes;
mod secretbox;
mod transformer;

pub use aes_cbc::AesCbcTransformer;
pub use aes_gcm::AesGcmTransformer;
pub use config::{EncryptionConfig, API_VERSION, KIND};
pub use resources::GroupResource;
pub use routes::Routes;
pub use secretbox::SecretboxTransformer;
pub(crate) use transformer::message;
pub use transformer::{
    DynTransformer, Identity, PrefixTransformers, Transformer, ENCRYPTED_PREFIX,
};
