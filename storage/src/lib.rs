//! Storage for the API server: upstream's storage.Interface semantics over keys and bytes.
//!
//! - [`backend`]: the MVCC key-value primitives, on etcd ([`backend::etcd`]) or on the
//!   embedded durable store ([`embedded`]).
//! - [`KvStore`]: create / get / list / guaranteed update / delete / watch with preconditions,
//!   compare-and-swap and paging, built once over any backend.
//! - [`Cacher`]: the watch cache, one backend watch per resource prefix fanned out to every
//!   watcher, serving `resourceVersion=0` lists and bookmarks.
//! - [`encryption`]: values encrypted at rest per resource (`--encryption-provider-config`),
//!   transformed by the [`KvStore`] so backends hold ciphertext and the cache plaintext.
//!
//! Storage knows nothing of Kubernetes objects beyond one hook: where a value keeps its UID,
//! for UID preconditions.

pub mod backend;
pub mod cacher;
mod compactor;
pub mod embedded;
pub mod encryption;
mod error;
mod interface;
pub mod metrics;
pub mod store;
mod types;

pub use cacher::{Cacher, CacherConfig, SharedEncodings};
pub use compactor::spawn_compactor;
pub use error::{Result, StorageError};
pub use interface::{Interface, Update, UpdateFn, UpdateOptions, ValidateDeletion};
pub use store::{json_metadata_uid, KvStore, UidExtractor};
pub use types::*;
