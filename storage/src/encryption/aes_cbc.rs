//! The `aescbc` provider (upstream's aes.NewCBCTransformer): a random 16-byte IV, then the
//! AES-CBC ciphertext of the PKCS#7-padded value. CBC authenticates nothing, so, as upstream,
//! the storage key is not bound into the value.

use aes::cipher::block_padding::{NoPadding, Pkcs7};
use aes::cipher::generic_array::GenericArray;
use aes::cipher::{BlockDecryptMut, BlockEncryptMut, InnerIvInit, KeyInit};
use aes::{Aes128, Aes192, Aes256};
use bytes::Bytes;

use super::transformer::{failed, random, Transformer};
use crate::Result;

const BLOCK: usize = 16;

/// The expanded key schedule, ready for each value's own IV.
enum Cipher {
    Aes128(Box<Aes128>),
    Aes192(Box<Aes192>),
    Aes256(Box<Aes256>),
}

pub struct AesCbcTransformer {
    cipher: Cipher,
}

impl AesCbcTransformer {
    /// A 16, 24 or 32-byte key (AES-128, -192, -256).
    pub fn new(key: &[u8]) -> Result<Self> {
        let invalid = |_| failed(format!("crypto/aes: invalid key size {}", key.len()));
        let cipher = match key.len() {
            16 => Cipher::Aes128(Box::new(Aes128::new_from_slice(key).map_err(invalid)?)),
            24 => Cipher::Aes192(Box::new(Aes192::new_from_slice(key).map_err(invalid)?)),
            32 => Cipher::Aes256(Box::new(Aes256::new_from_slice(key).map_err(invalid)?)),
            n => return Err(failed(format!("crypto/aes: invalid key size {n}"))),
        };
        Ok(Self { cipher })
    }
}

impl Transformer for AesCbcTransformer {
    fn transform_from_storage(&self, data: Bytes, _: &[u8]) -> Result<(Bytes, bool)> {
        if data.len() < BLOCK {
            return Err(failed("the stored data was shorter than the required size"));
        }
        let (iv, body) = data.split_at(BLOCK);
        if body.len() % BLOCK != 0 {
            return Err(failed(
                "the stored data is not a multiple of the block size",
            ));
        }
        let mut buf = body.to_vec();
        let decrypted = match &self.cipher {
            Cipher::Aes128(c) => cbc::Decryptor::<Aes128>::inner_iv_init(
                c.as_ref().clone(),
                GenericArray::from_slice(iv),
            )
            .decrypt_padded_mut::<NoPadding>(&mut buf)
            .map(|d| d.len()),
            Cipher::Aes192(c) => cbc::Decryptor::<Aes192>::inner_iv_init(
                c.as_ref().clone(),
                GenericArray::from_slice(iv),
            )
            .decrypt_padded_mut::<NoPadding>(&mut buf)
            .map(|d| d.len()),
            Cipher::Aes256(c) => cbc::Decryptor::<Aes256>::inner_iv_init(
                c.as_ref().clone(),
                GenericArray::from_slice(iv),
            )
            .decrypt_padded_mut::<NoPadding>(&mut buf)
            .map(|d| d.len()),
        };
        let len =
            decrypted.map_err(|_| failed("the stored data is not a multiple of the block size"))?;
        buf.truncate(len);
        // The padding is checked here rather than by the cipher so the errors are upstream's.
        let Some(&last) = buf.last() else {
            return Err(failed("invalid PKCS7 data (empty or not padded)"));
        };
        let pad = usize::from(last);
        if pad == 0 || pad > buf.len() {
            return Err(failed("invalid PKCS7 data (empty or not padded)"));
        }
        let size = buf.len() - pad;
        if buf[size..].iter().any(|&b| b != last) {
            return Err(failed("invalid padding on input"));
        }
        buf.truncate(size);
        Ok((buf.into(), false))
    }

    fn transform_to_storage(&self, data: &[u8], _: &[u8]) -> Result<Bytes> {
        let iv = random::<BLOCK>()?;
        let sealed = match &self.cipher {
            Cipher::Aes128(c) => cbc::Encryptor::<Aes128>::inner_iv_init(
                c.as_ref().clone(),
                GenericArray::from_slice(&iv),
            )
            .encrypt_padded_vec_mut::<Pkcs7>(data),
            Cipher::Aes192(c) => cbc::Encryptor::<Aes192>::inner_iv_init(
                c.as_ref().clone(),
                GenericArray::from_slice(&iv),
            )
            .encrypt_padded_vec_mut::<Pkcs7>(data),
            Cipher::Aes256(c) => cbc::Encryptor::<Aes256>::inner_iv_init(
                c.as_ref().clone(),
                GenericArray::from_slice(&iv),
            )
            .encrypt_padded_vec_mut::<Pkcs7>(data),
        };
        let mut out = Vec::with_capacity(BLOCK + sealed.len());
        out.extend_from_slice(&iv);
        out.extend_from_slice(&sealed);
        Ok(out.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encryption::transformer::message;

    #[test]
    fn round_trips_with_every_key_size_and_pads_to_blocks() {
        for size in [16, 24, 32] {
            let t = AesCbcTransformer::new(&vec![3u8; size]).unwrap();
            for len in [0usize, 1, 15, 16, 17, 100] {
                let value = vec![b'x'; len];
                let stored = t.transform_to_storage(&value, b"").unwrap();
                // IV, then whole blocks with at least one byte of padding
                assert_eq!(stored.len(), BLOCK + (len / BLOCK + 1) * BLOCK);
                let (plain, stale) = t.transform_from_storage(stored, b"").unwrap();
                assert_eq!(plain.to_vec(), value);
                assert!(!stale);
            }
        }
    }

    #[test]
    fn the_wrong_key_does_not_read() {
        let stored = AesCbcTransformer::new(&[1u8; 32])
            .unwrap()
            .transform_to_storage(br#"{"kind":"Secret","data":{"a":"b"}}"#, b"")
            .unwrap();
        let other = AesCbcTransformer::new(&[2u8; 32]).unwrap();
        match other.transform_from_storage(stored, b"") {
            Err(_) => {}
            // Random garbage may end in a valid pad byte; it never gives the value back.
            Ok((plain, _)) => assert_ne!(&plain[..], br#"{"kind":"Secret","data":{"a":"b"}}"#),
        }
    }

    #[test]
    fn malformed_data_is_an_error() {
        let t = AesCbcTransformer::new(&[1u8; 16]).unwrap();
        let short = t
            .transform_from_storage(Bytes::from_static(b"short"), b"")
            .unwrap_err();
        assert_eq!(
            message(short),
            "the stored data was shorter than the required size"
        );
        let ragged = t
            .transform_from_storage(Bytes::from(vec![0u8; BLOCK + 5]), b"")
            .unwrap_err();
        assert_eq!(
            message(ragged),
            "the stored data is not a multiple of the block size"
        );
        let empty = t
            .transform_from_storage(Bytes::from(vec![0u8; BLOCK]), b"")
            .unwrap_err();
        assert_eq!(message(empty), "invalid PKCS7 data (empty or not padded)");
    }
}
