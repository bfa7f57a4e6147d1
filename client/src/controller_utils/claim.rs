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
use super::{controller_ref, SyncError};
use crate::informer::Summary;

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

/// The objects among `candidates` that belong to `c.owner` after claiming.
pub async fn claim(
    c: &Claimable<'_>,
    candidates: Vec<Arc<Value>>,
) -> Result<Vec<Arc<Value>>, SyncError> {
    let owner_uid = object::uid(c.owner);
    let owner_deleting = object::deletion_timestamp(c.owner).is_some();
    let can_adopt: OnceCell<bool> = OnceCell::new();
    let mut claimed = Vec::new();
    for obj in candidates {
        let matches = c.selector.matches_labels(object::labels(&obj));
        match crate::informer::controller_uid(&obj) {
            Some(uid) if uid != owner_uid => {}
            Some(_) if matches => claimed.push(obj),
            Some(_) => {
                if !owner_deleting {
                    release(c, &obj).await?;
                }
            }
            None => {
                if owner_deleting || !matches || object::deletion_timestamp(&obj).is_some() {
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
                    claimed.push(Arc::new(adopted));
                }
            }
        }
    }
    Ok(claimed)
}

async fn adopt(c: &Claimable<'_>, obj: &Value) -> Result<Option<Value>, SyncError> {
    let reference = controller_ref(c.owner);
    let result = patch_owner_references(
        c.store,
        Some(object::namespace(obj)).filter(|n| !n.is_empty()),
        object::name(obj),
        object::uid(obj),
        Some(obj.clone()),
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
                object = object::name(obj),
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

async fn release(c: &Claimable<'_>, obj: &Value) -> Result<(), SyncError> {
    let owner_uid = object::uid(c.owner).to_string();
    let result = patch_owner_references(
        c.store,
        Some(object::namespace(obj)).filter(|n| !n.is_empty()),
        object::name(obj),
        object::uid(obj),
        Some(obj.clone()),
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
                object = object::name(obj),
                owner = object::name(c.owner),
                "released"
            );
            Ok(())
        }
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(e),
    }
}
