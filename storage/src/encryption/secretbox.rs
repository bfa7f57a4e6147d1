//! The `secretbox` provider (upstream's secretbox.NewSecretboxTransformer): a random 24-byte
//! nonce, then NaCl's secretbox (XSalsa20-Poly1305; tag, then ciphertext). Like upstream it
//! binds no additional data.

use bytes::Bytes;
use crypto_secretbox::aead::{Aead, KeyInit};
use crypto_secretbox::{Nonce, XSalsa20Poly1305};

use super::transformer::{failed, random, Transformer};
use crate::Result;

const NONCE: usize = 24;
const OVERHEAD: usize = 16;

pub struct SecretboxTransformer {
    cipher: Box<XSalsa20Poly1305>,
}

impl SecretboxTransformer {
    /// A 32-byte key.
    pub fn new(key: &[u8]) -> Result<Self> {
        let cipher = XSalsa20Poly1305::new_from_slice(key).map_err(|_| {
            failed(format!(
                "expected key size 32 for secretbox provider, got {}",
                key.len()
            ))
        })?;
        Ok(Self {
            cipher: Box::new(cipher),
        })
    }
}

impl Transformer for SecretboxTransformer {
    fn transform_from_storage(&self, data: Bytes, _: &[u8]) -> Result<(Bytes, bool)> {
        if data.len() < NONCE + OVERHEAD {
            return Err(failed("the stored data was shorter than the required size"));
        }
        let (nonce, sealed) = data.split_at(NONCE);
        let plain = self
            .cipher
            .decrypt(Nonce::from_slice(nonce), sealed)
            // Upstream's message, odd as it reads: secretbox.Open failed.
            .map_err(|_| failed("output array was not large enough for encryption"))?;
        Ok((plain.into(), false))
    }

    fn transform_to_storage(&self, data: &[u8], _: &[u8]) -> Result<Bytes> {
        let nonce = random::<NONCE>()?;
        let sealed = self
            .cipher
            .encrypt(Nonce::from_slice(&nonce), data)
            .map_err(|_| failed("failed to seal with secretbox"))?;
        let mut out = Vec::with_capacity(NONCE + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encryption::transformer::message;

    #[test]
    fn round_trips_with_nonce_and_tag() {
        let t = SecretboxTransformer::new(&[9u8; 32]).unwrap();
        let stored = t.transform_to_storage(b"hello", b"").unwrap();
        assert_eq!(stored.len(), NONCE + OVERHEAD + 5);
        let (plain, stale) = t.transform_from_storage(stored, b"").unwrap();
        assert_eq!(&plain[..], b"hello");
        assert!(!stale);
    }

    #[test]
    fn the_wrong_key_does_not_read() {
        let stored = SecretboxTransformer::new(&[9u8; 32])
            .unwrap()
            .transform_to_storage(b"hello", b"")
            .unwrap();
        let err = SecretboxTransformer::new(&[8u8; 32])
            .unwrap()
            .transform_from_storage(stored, b"")
            .unwrap_err();
        assert_eq!(
            message(err),
            "output array was not large enough for encryption"
        );
    }

    #[test]
    fn only_32_byte_keys() {
        let err = SecretboxTransformer::new(&[0u8; 16]).err().map(message);
        assert_eq!(
            err.as_deref(),
            Some("expected key size 32 for secretbox provider, got 16")
        );
    }

    #[test]
    fn short_data_is_an_error() {
        let t = SecretboxTransformer::new(&[9u8; 32]).unwrap();
        assert!(t
            .transform_from_storage(Bytes::from(vec![0u8; 30]), b"")
            .is_err());
    }
}
