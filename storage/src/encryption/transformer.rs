//! Value transformers (upstream's value.Transformer): what a stored value becomes on its way
//! to storage and back, chosen by the prefix the stored bytes carry.

use std::sync::Arc;

use bytes::Bytes;

use crate::{Result, StorageError};

/// Every encrypted value starts with this; plain JSON never does.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// Turns a value into its stored form and back. `authenticated` is data the stored form is
/// bound to (the full storage key): a value moved to another key must not read.
pub trait Transformer: Send + Sync {
    /// The value and whether it is stale: readable, but not in the form a write would give it
    /// now (an older key or provider), so an update must write it even when unchanged.
    fn transform_from_storage(&self, data: Bytes, authenticated: &[u8]) -> Result<(Bytes, bool)>;

    fn transform_to_storage(&self, data: &[u8], authenticated: &[u8]) -> Result<Bytes>;
}

pub type DynTransformer = Arc<dyn Transformer>;

pub(crate) fn failed(message: impl Into<String>) -> StorageError {
    StorageError::Internal(message.into())
}

/// The message of a transform failure, without the Display decoration of its variant.
pub(crate) fn message(err: StorageError) -> String {
    match err {
        StorageError::Internal(message) => message,
        other => other.to_string(),
    }
}

/// Leaves values as they are, but refuses to read encrypted ones as plain (upstream's
/// identity.NewEncryptCheckTransformer): what unlisted resources and `identity: {}` use.
pub struct Identity;

impl Transformer for Identity {
    fn transform_from_storage(&self, data: Bytes, _: &[u8]) -> Result<(Bytes, bool)> {
        if data.starts_with(ENCRYPTED_PREFIX) {
            return Err(failed("identity transformer tried to read encrypted data"));
        }
        Ok((data, false))
    }

    fn transform_to_storage(&self, data: &[u8], _: &[u8]) -> Result<Bytes> {
        Ok(Bytes::copy_from_slice(data))
    }
}

/// Transformers by the prefix of the stored bytes (upstream's prefixTransformers): the first
/// writes, every one reads what carries its prefix, and a read by any but the first is stale.
pub struct PrefixTransformers {
    entries: Vec<(Vec<u8>, DynTransformer)>,
    /// What a value no prefix matches fails with.
    no_match: String,
}

impl PrefixTransformers {
    /// `entries` must not be empty (validation requires a provider and a key).
    pub fn new(entries: Vec<(Vec<u8>, DynTransformer)>, no_match: impl Into<String>) -> Self {
        Self {
            entries,
            no_match: no_match.into(),
        }
    }
}

impl Transformer for PrefixTransformers {
    fn transform_from_storage(&self, data: Bytes, authenticated: &[u8]) -> Result<(Bytes, bool)> {
        let mut errors = Vec::new();
        for (i, (prefix, transformer)) in self.entries.iter().enumerate() {
            if !data.starts_with(prefix) {
                continue;
            }
            match transformer.transform_from_storage(data.slice(prefix.len()..), authenticated) {
                Ok((value, stale)) => return Ok((value, stale || i != 0)),
                // An identity listed before the provider that wrote the value refuses it;
                // the later provider still gets its turn.
                Err(_) if prefix.is_empty() => continue,
                // Several entries may share a prefix (one provider listed twice with other
                // keys): a failure in one must not hide a later match.
                Err(e) => errors.push(message(e)),
            }
        }
        Err(failed(match errors.len() {
            0 => self.no_match.clone(),
            1 => errors.remove(0),
            _ => format!("[{}]", errors.join(", ")),
        }))
    }

    fn transform_to_storage(&self, data: &[u8], authenticated: &[u8]) -> Result<Bytes> {
        let (prefix, transformer) = self
            .entries
            .first()
            .ok_or_else(|| failed(self.no_match.clone()))?;
        let body = transformer.transform_to_storage(data, authenticated)?;
        let mut out = Vec::with_capacity(prefix.len() + body.len());
        out.extend_from_slice(prefix);
        out.extend_from_slice(&body);
        Ok(out.into())
    }
}

/// `n` random bytes from the operating system, for nonces and IVs.
pub(crate) fn random<const N: usize>() -> Result<[u8; N]> {
    let mut out = [0u8; N];
    getrandom::fill(&mut out).map_err(|e| failed(format!("unable to read random bytes: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends a marker on write and requires it on read: enough to see which entry ran.
    struct Tagged(&'static [u8]);

    impl Transformer for Tagged {
        fn transform_from_storage(&self, data: Bytes, _: &[u8]) -> Result<(Bytes, bool)> {
            match data.strip_suffix(self.0) {
                Some(rest) => Ok((Bytes::copy_from_slice(rest), false)),
                None => Err(failed(format!("not tagged {:?}", self.0))),
            }
        }

        fn transform_to_storage(&self, data: &[u8], _: &[u8]) -> Result<Bytes> {
            Ok([data, self.0].concat().into())
        }
    }

    fn chain(entries: Vec<(&str, DynTransformer)>) -> PrefixTransformers {
        let entries = entries
            .into_iter()
            .map(|(p, t)| (p.as_bytes().to_vec(), t))
            .collect();
        PrefixTransformers::new(entries, "no matching prefix found")
    }

    #[test]
    fn first_entry_writes_and_later_reads_are_stale() {
        let t = chain(vec![
            ("a:", Arc::new(Tagged(b"!"))),
            ("b:", Arc::new(Tagged(b"?"))),
        ]);
        let stored = t.transform_to_storage(b"v", b"").unwrap();
        assert_eq!(&stored[..], b"a:v!");
        assert_eq!(
            t.transform_from_storage(stored, b"").unwrap(),
            (Bytes::from("v"), false)
        );
        assert_eq!(
            t.transform_from_storage(Bytes::from("b:w?"), b"").unwrap(),
            (Bytes::from("w"), true)
        );
    }

    #[test]
    fn unmatched_values_fail_with_the_no_match_error() {
        let t = chain(vec![("a:", Arc::new(Tagged(b"!")))]);
        let err = t
            .transform_from_storage(Bytes::from("{}"), b"")
            .unwrap_err();
        assert_eq!(message(err), "no matching prefix found");
    }

    #[test]
    fn a_failing_match_does_not_hide_a_later_one() {
        let t = chain(vec![
            ("a:", Arc::new(Tagged(b"!"))),
            ("a:", Arc::new(Tagged(b"?"))),
        ]);
        assert_eq!(
            t.transform_from_storage(Bytes::from("a:x?"), b"").unwrap(),
            (Bytes::from("x"), true)
        );
        let err = t
            .transform_from_storage(Bytes::from("a:x"), b"")
            .unwrap_err();
        assert_eq!(message(err), r#"[not tagged [33], not tagged [63]]"#);
    }

    #[test]
    fn identity_first_passes_encrypted_values_on() {
        let t = chain(vec![
            ("", Arc::new(Identity)),
            ("k8s:enc:t:", Arc::new(Tagged(b"!"))),
        ]);
        assert_eq!(&t.transform_to_storage(b"{}", b"").unwrap()[..], b"{}");
        assert_eq!(
            t.transform_from_storage(Bytes::from("k8s:enc:t:s!"), b"")
                .unwrap(),
            (Bytes::from("s"), true)
        );
        assert_eq!(
            t.transform_from_storage(Bytes::from("{}"), b"").unwrap(),
            (Bytes::from("{}"), false)
        );
    }

    #[test]
    fn identity_refuses_encrypted_data() {
        let err = Identity
            .transform_from_storage(Bytes::from("k8s:enc:aesgcm:v1:k:xyz"), b"")
            .unwrap_err();
        assert_eq!(
            message(err),
            "identity transformer tried to read encrypted data"
        );
    }
}
