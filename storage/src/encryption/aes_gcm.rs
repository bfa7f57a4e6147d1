//! The `aesgcm` provider (upstream's aes.NewGCMTransformer): a random 12-byte nonce, then the
//! AES-GCM ciphertext and tag, with the storage key as additional authenticated data.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes128Gcm, Aes256Gcm, AesGcm, Nonce};
use bytes::Bytes;

use super::transformer::{failed, random, Transformer};
use crate::Result;

type Aes192Gcm = AesGcm<aes::Aes192, aes_gcm::aead::consts::U12>;

const NONCE: usize = 12;

enum Cipher {
    Aes128(Box<Aes128Gcm>),
    Aes192(Box<Aes192Gcm>),
    Aes256(Box<Aes256Gcm>),
}

pub struct AesGcmTransformer {
    cipher: Cipher,
}

impl AesGcmTransformer {
    /// A 16, 24 or 32-byte key (AES-128, -192, -256).
    pub fn new(key: &[u8]) -> Result<Self> {
        let invalid = |_| failed(format!("crypto/aes: invalid key size {}", key.len()));
        let cipher = match key.len() {
            16 => Cipher::Aes128(Box::new(Aes128Gcm::new_from_slice(key).map_err(invalid)?)),
            24 => Cipher::Aes192(Box::new(Aes192Gcm::new_from_slice(key).map_err(invalid)?)),
            32 => Cipher::Aes256(Box::new(Aes256Gcm::new_from_slice(key).map_err(invalid)?)),
            n => return Err(failed(format!("crypto/aes: invalid key size {n}"))),
        };
        Ok(Self { cipher })
    }
}

impl Transformer for AesGcmTransformer {
    fn transform_from_storage(&self, data: Bytes, authenticated: &[u8]) -> Result<(Bytes, bool)> {
        if data.len() < NONCE {
            return Err(failed("the stored data was shorter than the required size"));
        }
        let (nonce, sealed) = data.split_at(NONCE);
        let nonce = Nonce::from_slice(nonce);
        let payload = Payload {
            msg: sealed,
            aad: authenticated,
        };
        let opened = match &self.cipher {
            Cipher::Aes128(c) => c.decrypt(nonce, payload),
            Cipher::Aes192(c) => c.decrypt(nonce, payload),
            Cipher::Aes256(c) => c.decrypt(nonce, payload),
        };
        let plain = opened.map_err(|_| failed("cipher: message authentication failed"))?;
        Ok((plain.into(), false))
    }

    fn transform_to_storage(&self, data: &[u8], authenticated: &[u8]) -> Result<Bytes> {
        let nonce_bytes = random::<NONCE>()?;
        let nonce = Nonce::from_slice(&nonce_bytes);
        let payload = Payload {
            msg: data,
            aad: authenticated,
        };
        let sealed = match &self.cipher {
            Cipher::Aes128(c) => c.encrypt(nonce, payload),
            Cipher::Aes192(c) => c.encrypt(nonce, payload),
            Cipher::Aes256(c) => c.encrypt(nonce, payload),
        }
        .map_err(|_| failed("failed to encrypt with AES-GCM"))?;
        let mut out = Vec::with_capacity(NONCE + sealed.len());
        out.extend_from_slice(&nonce_bytes);
        out.extend_from_slice(&sealed);
        Ok(out.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encryption::transformer::message;

    const KEY_AD: &[u8] = b"/registry/secrets/default/a";

    #[test]
    fn round_trips_with_every_key_size() {
        for size in [16, 24, 32] {
            let t = AesGcmTransformer::new(&vec![7u8; size]).unwrap();
            let stored = t.transform_to_storage(b"{\"data\":1}", KEY_AD).unwrap();
            // nonce, ciphertext of the same length, 16-byte tag
            assert_eq!(stored.len(), NONCE + 10 + 16, "key size {size}");
            assert!(!stored.windows(10).any(|w| w == b"{\"data\":1}"));
            let (plain, stale) = t.transform_from_storage(stored, KEY_AD).unwrap();
            assert_eq!(&plain[..], b"{\"data\":1}");
            assert!(!stale);
        }
    }

    #[test]
    fn every_write_has_a_fresh_nonce() {
        let t = AesGcmTransformer::new(&[1u8; 32]).unwrap();
        let a = t.transform_to_storage(b"same", KEY_AD).unwrap();
        let b = t.transform_to_storage(b"same", KEY_AD).unwrap();
        assert_ne!(a[..NONCE], b[..NONCE]);
    }

    #[test]
    fn a_value_moved_to_another_key_does_not_read() {
        let t = AesGcmTransformer::new(&[1u8; 32]).unwrap();
        let stored = t.transform_to_storage(b"secret", KEY_AD).unwrap();
        let err = t
            .transform_from_storage(stored, b"/registry/secrets/default/b")
            .unwrap_err();
        assert_eq!(message(err), "cipher: message authentication failed");
    }

    #[test]
    fn the_wrong_key_does_not_read() {
        let stored = AesGcmTransformer::new(&[1u8; 32])
            .unwrap()
            .transform_to_storage(b"secret", KEY_AD)
            .unwrap();
        let other = AesGcmTransformer::new(&[2u8; 32]).unwrap();
        assert!(other.transform_from_storage(stored, KEY_AD).is_err());
    }

    #[test]
    fn short_or_tampered_data_is_an_error() {
        let t = AesGcmTransformer::new(&[1u8; 16]).unwrap();
        let err = t
            .transform_from_storage(Bytes::from_static(b"short"), KEY_AD)
            .unwrap_err();
        assert_eq!(
            message(err),
            "the stored data was shorter than the required size"
        );
        let mut stored = t.transform_to_storage(b"secret", KEY_AD).unwrap().to_vec();
        let last = stored.len() - 1;
        stored[last] ^= 1;
        assert!(t.transform_from_storage(stored.into(), KEY_AD).is_err());
    }

    #[test]
    fn refuses_keys_of_other_sizes() {
        assert!(AesGcmTransformer::new(&[0u8; 20]).is_err());
    }
}
