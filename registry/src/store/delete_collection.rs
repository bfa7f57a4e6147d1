//! Deletecollection (upstream's Store.DeleteCollection): a list, then a delete of each item
//! with the same options.

use futures::{StreamExt, TryStreamExt};
use serde_json::Value;

use super::Store;
use crate::error::{RegistryError, Result};
use crate::object::{self, Object};
use crate::options::{DeleteOptions, ListOptions};

/// Deletes of a deletecollection in flight at once.
const COLLECTION_CONCURRENCY: usize = 16;

impl Store {
    /// Deletes everything a list with these options would return; returns the list of what
    /// was deleted.
    pub async fn delete_collection(
        &self,
        namespace: Option<&str>,
        list: &ListOptions,
        opts: DeleteOptions,
    ) -> Result<Object> {
        let mut listing = self.list(namespace, list).await?;
        let items = match listing.get_mut("items").map(Value::take) {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        };
        let deleted: Vec<Value> = futures::stream::iter(items)
            .map(|item| {
                let opts = opts.clone();
                async move {
                    let ns = object::namespace(&item).to_string();
                    let ns = (!ns.is_empty()).then_some(ns);
                    // The answer of each delete is not used: no conversion of it.
                    match self
                        .delete_stored(ns.as_deref(), object::name(&item), opts)
                        .await
                    {
                        Ok(_) => Ok(Some(item)),
                        Err(RegistryError::NotFound { .. }) => Ok(None),
                        Err(e) => Err(e),
                    }
                }
            })
            .buffer_unordered(COLLECTION_CONCURRENCY)
            .try_filter_map(|item| async move { Ok(item) })
            .try_collect()
            .await?;
        if let Some(map) = listing.as_object_mut() {
            map.insert("items".into(), Value::Array(deleted));
        }
        Ok(listing)
    }
}
