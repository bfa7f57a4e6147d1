//! A whole list read in pages from one snapshot: the first range fixes the revision and every
//! later range reads at it, so a reader streaming the pages out holds one page at a time, never
//! the collection (a quorum list of 100,000 objects is 250 small ranges, not one huge one).

use futures::StreamExt;

use super::events::matches;
use super::KvStore;
use crate::backend::{KeyRange, RangeRequest, RangeResponse};
use crate::{KeyValue, ListOptions, ListPages, ReadRevision, Result, StorageError};

/// Items per range at first: small enough that a page of 4 KiB objects is about a megabyte.
pub(crate) const PAGE_ITEMS: usize = 256;

/// What later ranges aim at, sized by the values read so far: etcd counts the rest of the
/// range on every ranged read, so smaller objects come in fewer, larger ranges.
const PAGE_BYTES: usize = 1 << 20;
const MAX_PAGE_ITEMS: usize = 4096;

/// Where the next range starts, and at which revision; None once the last range was read.
struct Cursor {
    store: KvStore,
    range: Option<KeyRange>,
    revision: i64,
    opts: ListOptions,
    limit: usize,
}

impl Cursor {
    async fn read(&self, range: &KeyRange) -> Result<RangeResponse> {
        self.store
            .backend
            .range(RangeRequest {
                range: Some(range.clone()),
                revision: self.revision,
                limit: self.limit,
                skip_count: true,
                ..Default::default()
            })
            .await
    }

    /// The matching items of one response; moves the cursor past it.
    fn take(&mut self, resp: RangeResponse) -> Result<Vec<KeyValue>> {
        let next = match (&self.range, resp.more, resp.kvs.last()) {
            (Some(range), true, Some(last)) => Some(range.after(&last.key)),
            _ => None,
        };
        self.range = next;
        let bytes: usize = resp.kvs.iter().map(|kv| kv.value.len()).sum();
        if let Some(average) = bytes.checked_div(resp.kvs.len()) {
            self.limit = (PAGE_BYTES / average.max(1)).clamp(PAGE_ITEMS, MAX_PAGE_ITEMS);
        }
        let mut page = Vec::with_capacity(resp.kvs.len());
        for kv in resp.kvs {
            let (kv, _) = self.store.decode(kv)?;
            if matches(&self.opts.predicate, &kv) {
                page.push(self.store.strip(kv));
            }
        }
        Ok(page)
    }

    /// The next non-empty page, or None at the end.
    async fn next_page(&mut self) -> Result<Option<Vec<KeyValue>>> {
        while let Some(range) = self.range.clone() {
            let resp = self.read(&range).await?;
            let page = self.take(resp)?;
            if !page.is_empty() {
                return Ok(Some(page));
            }
        }
        Ok(None)
    }
}

pub async fn get_list_pages(store: &KvStore, key: &str, opts: ListOptions) -> Result<ListPages> {
    if opts
        .continue_token
        .as_deref()
        .is_some_and(|t| !t.is_empty())
    {
        return Err(StorageError::Invalid(
            "a continued list is read a page at a time, not whole".into(),
        ));
    }
    let (_, range) = store.key_range(key, opts.recursive);
    let (revision, min_revision) = match opts.revision {
        ReadRevision::Latest | ReadRevision::Any => (0, 0),
        ReadRevision::NotOlderThan(r) => (0, r),
        ReadRevision::Exact(r) => (r, 0),
    };
    let mut cursor = Cursor {
        store: store.clone(),
        range: Some(range.clone()),
        revision,
        opts,
        limit: PAGE_ITEMS,
    };
    let first = cursor.read(&range).await?;
    if first.revision < min_revision {
        return Err(StorageError::TooLargeResourceVersion {
            requested: min_revision,
            current: first.revision,
        });
    }
    cursor.revision = first.revision;
    let revision = first.revision;
    let first = cursor.take(first)?;
    let head = futures::stream::iter((!first.is_empty()).then_some(Ok(first)));
    let rest = futures::stream::try_unfold(cursor, |mut cursor| async move {
        Ok(cursor.next_page().await?.map(|page| (page, cursor)))
    });
    Ok(ListPages {
        revision,
        pages: head.chain(rest).boxed(),
    })
}
