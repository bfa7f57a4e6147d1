//! Lists handed out an item at a time: the objects are decoded as the reader asks for them,
//! from pages the storage reads from one snapshot, so a reader that writes each item out (the
//! HTTP list encoders) holds about a page, never the whole collection.

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use serde_json::{json, Map, Value};

use super::convert::Converting;
use super::{decode_at, Store};
use crate::error::{RegistryError, Result};
use crate::object::Object;
use crate::options::ListOptions;

/// A list (`<Kind>List`) whose items come as a stream. `metadata` is the list's metadata
/// exactly as [`Store::list`] sets it.
pub struct ListStream {
    pub api_version: String,
    pub kind: String,
    pub metadata: Map<String, Value>,
    pub items: BoxStream<'static, Result<Object>>,
}

/// The list metadata of a read at `revision`.
pub(super) fn list_metadata(
    revision: i64,
    continue_token: Option<String>,
    remaining: Option<i64>,
) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("resourceVersion".into(), json!(revision.to_string()));
    if let Some(token) = continue_token {
        meta.insert("continue".into(), json!(token));
    }
    if let Some(remaining) = remaining.filter(|r| *r > 0) {
        meta.insert("remainingItemCount".into(), json!(remaining));
    }
    meta
}

impl Store {
    /// What [`Store::list`] answers, as a stream: same items, same order, same metadata.
    pub async fn list_stream(
        &self,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<ListStream> {
        let (prefix, storage_opts) = self.list_request(namespace, opts)?;
        if let Some(converting) = self.converting() {
            return self
                .list_stream_converted(prefix, storage_opts, converting)
                .await;
        }
        let decoder = self.decoder();
        let (metadata, items) = if self.storage.lists_whole(&storage_opts) {
            let pages = self
                .storage
                .get_list_pages(&prefix, storage_opts)
                .await
                .map_err(self.storage_err(""))?;
            let resource = self.info.qualified_resource();
            let items = pages
                .pages
                .map_err(move |e| RegistryError::from_storage(e, &resource, ""))
                .map_ok(move |page| {
                    let decoder = decoder.clone();
                    futures::stream::iter(
                        page.into_iter()
                            .map(move |kv| decoder.decode_bytes(&kv.value, kv.mod_revision)),
                    )
                })
                .try_flatten()
                .boxed();
            (list_metadata(pages.revision, None, None), items)
        } else {
            // One page of a paged read: bounded by its limit.
            let result = self
                .storage
                .get_list(&prefix, storage_opts)
                .await
                .map_err(self.storage_err(""))?;
            let metadata = list_metadata(result.revision, result.continue_token, result.remaining);
            let items = futures::stream::iter(
                result
                    .items
                    .into_iter()
                    .map(move |kv| decoder.decode_bytes(&kv.value, kv.mod_revision)),
            )
            .boxed();
            (metadata, items)
        };
        Ok(ListStream {
            api_version: self.info.api_version(),
            kind: self.info.list_kind.clone(),
            metadata,
            items,
        })
    }
}

impl Store {
    /// [`Store::list_stream`] of a Store with a converter: each page read is converted in one
    /// call (upstream sends a list's objects in one ConversionReview).
    async fn list_stream_converted(
        &self,
        prefix: String,
        storage_opts: storage::ListOptions,
        converting: Converting,
    ) -> Result<ListStream> {
        let decode_page = |page: Vec<storage::KeyValue>| -> Result<Vec<Object>> {
            page.iter()
                .map(|kv| decode_at(&kv.value, kv.mod_revision))
                .collect()
        };
        let (metadata, items) = if self.storage.lists_whole(&storage_opts) {
            let pages = self
                .storage
                .get_list_pages(&prefix, storage_opts)
                .await
                .map_err(self.storage_err(""))?;
            let resource = self.info.qualified_resource();
            let items = pages
                .pages
                .map_err(move |e| RegistryError::from_storage(e, &resource, ""))
                .and_then(move |page| {
                    let converting = converting.clone();
                    let decoded = decode_page(page);
                    async move {
                        let objects = converting.convert(decoded?).await?;
                        Ok(futures::stream::iter(objects.into_iter().map(Ok)))
                    }
                })
                .try_flatten()
                .boxed();
            (list_metadata(pages.revision, None, None), items)
        } else {
            let result = self
                .storage
                .get_list(&prefix, storage_opts)
                .await
                .map_err(self.storage_err(""))?;
            let metadata = list_metadata(result.revision, result.continue_token, result.remaining);
            let objects = converting.convert(decode_page(result.items)?).await?;
            (
                metadata,
                futures::stream::iter(objects.into_iter().map(Ok)).boxed(),
            )
        };
        Ok(ListStream {
            api_version: self.info.api_version(),
            kind: self.info.list_kind.clone(),
            metadata,
            items,
        })
    }
}
