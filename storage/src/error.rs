//! The one error type of the storage layer. The registry maps each variant to a metav1.Status.

use thiserror::Error;

pub type Result<T, E = StorageError> = std::result::Result<T, E>;

#[derive(Debug, Error)]
pub enum StorageError {
    #[error("key {key} not found")]
    NotFound { key: String },

    #[error("key {key} already exists")]
    AlreadyExists { key: String },

    /// A compare-and-swap lost, or a precondition (UID, resourceVersion) did not hold.
    #[error("conflict on {key}: {message}")]
    Conflict { key: String, message: String },

    /// The requested revision has been compacted away (upstream: 410 Gone / Expired).
    /// `oldest` is the compaction point where the backend reports it (0: unknown).
    #[error("too old resource version: {requested}")]
    TooOld { requested: i64, oldest: i64 },

    /// A continue token whose snapshot revision has been compacted. `fresh_continue` lets the
    /// client go on at the latest revision, accepting an inconsistent list, as upstream offers.
    #[error("the provided continue parameter is too old to display a consistent list result")]
    Expired { fresh_continue: Option<String> },

    /// The caller asked for a revision newer than the store has seen (upstream: 504 with
    /// reason ResourceVersionTooLarge once the wait for it times out).
    #[error("too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion { requested: i64, current: i64 },

    /// A malformed request that reached storage, e.g. an undecodable continue token.
    #[error("invalid request: {0}")]
    Invalid(String),

    /// The backend cannot be reached or did not answer in time.
    #[error("storage unavailable: {0}")]
    Unavailable(String),

    /// The caller's update or validation function refused; carried through untouched so the
    /// caller gets its own error back.
    #[error(transparent)]
    Aborted(Box<dyn std::error::Error + Send + Sync>),

    #[error("storage internal error: {0}")]
    Internal(String),

    /// `--encryption-provider-config` is unreadable or invalid (upstream's messages).
    #[error("{0}")]
    EncryptionConfig(String),
}

impl StorageError {
    pub fn not_found(key: impl Into<String>) -> Self {
        Self::NotFound { key: key.into() }
    }

    pub fn conflict(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Conflict {
            key: key.into(),
            message: message.into(),
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict { .. })
    }

    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }
}
