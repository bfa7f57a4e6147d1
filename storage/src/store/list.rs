//! Paged lists from one snapshot: the first page reads the latest revision (or the one asked
//! for) and every later page reads at the revision its continue token carries.

use super::continue_token;
use super::events::matches;
use super::KvStore;
use crate::backend::RangeRequest;
use crate::{ListOptions, ListResult, ReadRevision, Result, StorageError};

/// Largest batch read from the backend while a predicate keeps filtering items out.
const MAX_BATCH: usize = 10_000;

pub async fn get_list(store: &KvStore, key: &str, opts: ListOptions) -> Result<ListResult> {
    let (prefix, mut range) = store.key_range(key, opts.recursive);
    let mut revision = 0;
    let mut min_revision = 0;
    let mut continuing = false;
    if let Some(token) = opts.continue_token.as_deref().filter(|t| !t.is_empty()) {
        if !opts.recursive {
            return Err(StorageError::Invalid(
                "continue given for a single key".into(),
            ));
        }
        if !matches!(opts.revision, ReadRevision::Latest | ReadRevision::Any) {
            return Err(StorageError::Invalid(
                "specifying resource version is not allowed when using continue".into(),
            ));
        }
        let (start, rv) = continue_token::decode(token, &prefix)?;
        range.start = start.into_bytes();
        // -1: the client accepted an inconsistent continuation at the latest revision.
        revision = rv.max(0);
        continuing = true;
    } else {
        match opts.revision {
            ReadRevision::Latest | ReadRevision::Any => {}
            ReadRevision::NotOlderThan(r) => min_revision = r,
            ReadRevision::Exact(r) => revision = r,
        }
    }

    let paging = opts.limit > 0 && opts.recursive;
    let limit = if paging { opts.limit as usize } else { 0 };
    let mut batch = limit;
    let mut result = ListResult::default();
    let mut last_key: Option<String> = None;
    let mut has_more;
    let mut total = None;
    loop {
        let resp = match store
            .backend
            .range(RangeRequest {
                range: Some(range.clone()),
                revision,
                limit: batch,
                ..Default::default()
            })
            .await
        {
            Err(StorageError::TooOld { .. }) if continuing => {
                let fresh =
                    continue_token::encode(&String::from_utf8_lossy(&range.start), &prefix, -1)
                        .ok();
                return Err(StorageError::Expired {
                    fresh_continue: fresh,
                });
            }
            other => other?,
        };
        if revision == 0 {
            revision = resp.revision;
            if revision < min_revision {
                return Err(StorageError::TooLargeResourceVersion {
                    requested: min_revision,
                    current: revision,
                });
            }
        }
        if total.is_none() {
            total = Some(resp.count);
        }
        has_more = resp.more;
        let returned = resp.kvs.len();
        for (i, kv) in resp.kvs.into_iter().enumerate() {
            if paging && result.items.len() >= limit {
                // Items remain in this batch beyond the page.
                has_more = has_more || i < returned;
                break;
            }
            last_key = Some(kv.key.clone());
            let (kv, _) = store.decode(kv)?;
            if matches(&opts.predicate, &kv) {
                result.items.push(store.strip(kv));
            }
        }
        if !paging || !has_more || result.items.len() >= limit {
            break;
        }
        // The predicate filtered items out: read further, in growing batches.
        batch = (batch * 2).min(MAX_BATCH);
        if let Some(k) = &last_key {
            range = range.after(k);
        }
    }
    result.revision = revision;
    if paging && has_more {
        if let Some(k) = &last_key {
            let mut next = k.clone();
            next.push('\0');
            result.continue_token = Some(continue_token::encode(&next, &prefix, revision)?);
            if opts.predicate.is_none() {
                result.remaining = total.map(|t| (t - result.items.len() as i64).max(0));
            }
        }
    }
    Ok(result)
}
