//! The storage interface the registry programs against (upstream's storage.Interface), served
//! by [`crate::KvStore`] straight from the backend and by [`crate::Cacher`] from the watch cache.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use crate::{KeyValue, ListOptions, ListPages, ListResult, Preconditions, ReadRevision, Result};
use crate::{WatchOptions, WatchStream};

/// Decides what becomes of the key from its current value (None: absent, with
/// `ignore_not_found`). May be called several times: after a lost compare-and-swap it runs
/// again on fresh state, so the last call's decision is the one that took effect.
pub type UpdateFn<'a> = dyn FnMut(Option<&KeyValue>) -> Result<Update> + Send + 'a;

/// What an update function decided. Keeping and deleting are decisions, not errors, so the
/// caller never has to smuggle them out through an error value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Update {
    /// Store this value, compare-and-swap against the value decided from. A value equal to
    /// the stored one writes nothing.
    Write(Bytes),
    /// Leave the key as it is; the stored pair is returned.
    Keep,
    /// Remove the key, compare-and-swap against the value decided from; the removed pair is
    /// returned.
    Delete,
}

impl From<Bytes> for Update {
    fn from(value: Bytes) -> Self {
        Self::Write(value)
    }
}

/// Checked against the current value right before a delete; an error cancels it.
pub type ValidateDeletion<'a> = dyn Fn(&KeyValue) -> Result<()> + Send + Sync + 'a;

#[derive(Clone, Debug, Default)]
pub struct UpdateOptions {
    pub preconditions: Preconditions,
    /// Call the update function with None when the key is absent (create on update).
    pub ignore_not_found: bool,
    /// A recent read of the key (e.g. from the watch cache) to start from instead of reading;
    /// if it proves stale the store re-reads, so it only saves a round trip.
    pub cached: Option<KeyValue>,
    /// The written value expires this long after the write (upstream's ttl argument): the key
    /// is then deleted as by any delete, so watchers see it go. None: it never expires, and a
    /// write without a ttl clears the expiry an earlier write set. A write that changes
    /// nothing writes nothing, so it renews nothing.
    pub ttl: Option<Duration>,
}

#[async_trait]
pub trait Interface: Send + Sync {
    /// Stores a new key; AlreadyExists if present.
    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue> {
        self.create_with_ttl(key, value, None).await
    }

    /// As `create`, the key expiring `ttl` after the write (see [`UpdateOptions::ttl`]).
    async fn create_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
    ) -> Result<KeyValue>;

    /// NotFound if absent.
    async fn get(&self, key: &str, revision: ReadRevision) -> Result<KeyValue>;

    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ListResult>;

    /// A whole list read page by page from one snapshot, for readers that stream it out;
    /// for options [`Interface::lists_whole`] accepts (`opts.limit` is not applied, and a
    /// continue token is refused).
    async fn get_list_pages(&self, key: &str, opts: ListOptions) -> Result<ListPages>;

    /// Whether a list with these options is answered whole (no page, no continue), so that
    /// [`Interface::get_list_pages`] reads the same items as [`Interface::get_list`].
    fn lists_whole(&self, opts: &ListOptions) -> bool {
        opts.limit <= 0 && opts.continue_token.as_deref().is_none_or(str::is_empty)
    }

    /// Read, decide, compare-and-swap; retried on conflict until it lands or the update
    /// function or a precondition refuses. Returns the pair written, kept or removed.
    async fn guaranteed_update(
        &self,
        key: &str,
        opts: UpdateOptions,
        update: &mut UpdateFn<'_>,
    ) -> Result<KeyValue>;

    /// Deletes the key under preconditions; returns the value it had.
    async fn delete(
        &self,
        key: &str,
        preconditions: &Preconditions,
        validate: Option<&ValidateDeletion<'_>>,
    ) -> Result<KeyValue>;

    /// As `delete`, starting from a recent read of the key (`cached`) instead of reading it
    /// again; a stale one only costs a retry (upstream's cachedExistingObject).
    async fn delete_cached(
        &self,
        key: &str,
        preconditions: &Preconditions,
        cached: KeyValue,
    ) -> Result<KeyValue>;

    async fn watch(&self, key: &str, opts: WatchOptions) -> Result<WatchStream>;

    /// Keys under the prefix.
    async fn count(&self, key: &str) -> Result<i64>;

    async fn current_revision(&self) -> Result<i64>;
}
