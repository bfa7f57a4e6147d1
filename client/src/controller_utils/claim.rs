//! Claiming (upstream's ControllerRefManager): of the objects a controller could own, which
//! are its own. It keeps what it controls and its selector still matches, releases what it
//! controls but no longer matches, and adopts matching orphans, all through patches of the
//! objects' controller references. Objects controlled by someone else are never touched.

use std::sync::Arc;

use futures::future::BoxFuture;
use registry::selector::labels::LabelSelector;
use registry::{object, Store};
use serde_json::Value;
use tokio::sync::OnceCell;
use tracing::debug;

use super::owner_references::patch_owner_references;
use super::{controller_ref, PodView, SyncError};
use crate::informer::{
    orphan_index_key, Indexer, IndexerError, Summary, View, CONTROLLER_UID_INDEX,
};

/// What claiming reads of an object: the whole object, or a pod's [`PodView`].
pub trait Claimed: Sized {
    fn matches(&self, selector: &LabelSelector) -> bool;
    fn controller_uid(&self) -> Option<&str>;
    fn is_deleting(&self) -> bool;
    fn namespace(&self) -> &str;
    fn name(&self) -> &str;
    fn uid(&self) -> &str;
    /// The whole object, if held: saves the patch its first read.
    fn whole(&self) -> Option<Value>;
    /// The object a patch answered with.
    fn patched(obj: Value) -> Self;
}

impl Claimed for Arc<Value> {
    fn matches(&self, selector: &LabelSelector) -> bool {
        selector.matches_labels(object::labels(self))
    }
    fn controller_uid(&self) -> Option<&str> {
        crate::informer::controller_uid(self)
    }
    fn is_deleting(&self) -> bool {
        object::deletion_timestamp(self).is_some()
    }
    fn namespace(&self) -> &str {
        object::namespace(self)
    }
    fn name(&self) -> &str {
        object::name(self)
    }
    fn uid(&self) -> &str {
        object::uid(self)
    }
    fn whole(&self) -> Option<Value> {
        Some((**self).clone())
    }
    fn patched(obj: Value) -> Self {
        Arc::new(obj)
    }
}

impl Claimed for Arc<PodView> {
    fn matches(&self, selector: &LabelSelector) -> bool {
        self.labels().matches(selector)
    }
    fn controller_uid(&self) -> Option<&str> {
        PodView::controller_uid(self)
    }
    fn is_deleting(&self) -> bool {
        PodView::is_deleting(self)
    }
    fn namespace(&self) -> &str {
        PodView::namespace(self)
    }
    fn name(&self) -> &str {
        PodView::name(self)
    }
    fn uid(&self) -> &str {
        PodView::uid(self)
    }
    fn whole(&self) -> Option<Value> {
        None
    }
    fn patched(obj: Value) -> Self {
        Arc::new(PodView::of(&obj))
    }
}

/// What claiming works with: the owner, the store of the objects, and what it selects.
pub struct Claimable<'a> {
    pub owner: &'a Value,
    pub store: &'a Store,
    pub selector: &'a LabelSelector,
    /// A fresh read of the owner, asked at most once before the first adoption: adoption
    /// must not race a deletion of the owner the informer has not shown yet.
    pub fresh_owner: Box<dyn Fn() -> BoxFuture<'a, Result<Value, SyncError>> + Send + Sync + 'a>,
}

/// Whether claiming would look at the object at all: one the owner controls (kept or
/// released), or an orphan its selector matches (adopted). Claiming passes over the rest,
/// so callers select candidates with this before decoding them.
pub fn claim_candidate<'a>(
    owner_uid: &'a str,
    selector: &'a LabelSelector,
) -> impl Fn(&Summary<'_>) -> bool + 'a {
    move |s| match s.controller_uid() {
        Some(uid) => uid == owner_uid,
        None => s.labels().matches(selector),
    }
}

/// The pods `owner` may claim, as [`View`]s: those it controls and its namespace's orphans
/// its selector matches, read from two buckets of the pods informer's
/// [`CONTROLLER_UID_INDEX`] (upstream's FilterPodsByOwner with orphans) instead of a walk of
/// the namespace, which with 150,000 pods in one namespace was most of a ReplicaSet's sync.
pub fn pod_candidate_views<T: View>(
    pods: &Indexer,
    owner: &Value,
    selector: &LabelSelector,
) -> Result<Vec<Arc<T>>, IndexerError> {
    owned_and_orphans(owner, |bucket| {
        pods.by_index_view::<T>(
            CONTROLLER_UID_INDEX,
            bucket,
            claim_candidate(object::uid(owner), selector),
        )
    })
}

/// [`pod_candidate_views`] as whole pods.
pub fn pod_candidates(
    pods: &Indexer,
    owner: &Value,
    selector: &LabelSelector,
) -> Result<Vec<Arc<Value>>, IndexerError> {
    pod_candidates_where(pods, owner, claim_candidate(object::uid(owner), selector))
}

/// The pods `owner` controls and its namespace's orphans, those `keep` picks.
pub fn pod_candidates_where(
    pods: &Indexer,
    owner: &Value,
    keep: impl Fn(&Summary<'_>) -> bool,
) -> Result<Vec<Arc<Value>>, IndexerError> {
    owned_and_orphans(owner, |bucket| {
        pods.by_index_selected(CONTROLLER_UID_INDEX, bucket, &keep)
    })
}

fn owned_and_orphans<T>(
    owner: &Value,
    read: impl Fn(&str) -> Result<Vec<T>, IndexerError>,
) -> Result<Vec<T>, IndexerError> {
    let mut found = read(object::uid(owner))?;
    found.extend(read(&orphan_index_key(object::namespace(owner)))?);
    Ok(found)
}

/// The objects among `candidates` that belong to `c.owner` after claiming.
pub async fn claim<T: Claimed>(c: &Claimable<'_>, candidates: Vec<T>) -> Result<Vec<T>, SyncError> {
    let owner_uid = object::uid(c.owner);
    let owner_deleting = object::deletion_timestamp(c.owner).is_some();
    let can_adopt: OnceCell<bool> = OnceCell::new();
    let mut claimed = Vec::new();
    for obj in candidates {
        let matches = obj.matches(c.selector);
        match obj.controller_uid() {
            Some(uid) if uid != owner_uid => {}
            Some(_) if matches => claimed.push(obj),
            Some(_) => {
                if !owner_deleting {
                    release(c, &obj).await?;
                }
            }
            None => {
                if owner_deleting || !matches || obj.is_deleting() {
                    continue;
                }
                let adoptable = can_adopt
                    .get_or_try_init(|| async {
                        let fresh = (c.fresh_owner)().await?;
                        Ok::<_, SyncError>(
                            object::uid(&fresh) == owner_uid
                                && object::deletion_timestamp(&fresh).is_none(),
                        )
                    })
                    .await?;
                if !*adoptable {
                    continue;
                }
                if let Some(adopted) = adopt(c, &obj).await? {
                    claimed.push(T::patched(adopted));
                }
            }
        }
    }
    Ok(claimed)
}

async fn adopt(c: &Claimable<'_>, obj: &impl Claimed) -> Result<Option<Value>, SyncError> {
    let reference = controller_ref(c.owner);
    let result = patch_owner_references(
        c.store,
        Some(obj.namespace()).filter(|n| !n.is_empty()),
        obj.name(),
        obj.uid(),
        obj.whole(),
        |refs| {
            // Someone else took control since the read: not ours to adopt.
            if refs.iter().any(|r| r["controller"].as_bool() == Some(true)) {
                return None;
            }
            let mut next = refs.to_vec();
            next.retain(|r| r["uid"] != reference["uid"]);
            next.push(reference.clone());
            Some(next)
        },
    )
    .await;
    match result {
        Ok(Some(adopted)) => {
            debug!(
                object = obj.name(),
                owner = object::name(c.owner),
                "adopted"
            );
            Ok(Some(adopted))
        }
        Ok(None) => Ok(None),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

async fn release(c: &Claimable<'_>, obj: &impl Claimed) -> Result<(), SyncError> {
    let owner_uid = object::uid(c.owner).to_string();
    let result = patch_owner_references(
        c.store,
        Some(obj.namespace()).filter(|n| !n.is_empty()),
        obj.name(),
        obj.uid(),
        obj.whole(),
        |refs| {
            let next: Vec<Value> = refs
                .iter()
                .filter(|r| r["uid"].as_str() != Some(&owner_uid))
                .cloned()
                .collect();
            (next.len() != refs.len()).then_some(next)
        },
    )
    .await;
    match result {
        Ok(_) => {
            debug!(
                object = obj.name(),
                owner = object::name(c.owner),
                "released"
            );
            Ok(())
        }
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(e),
    }
}
