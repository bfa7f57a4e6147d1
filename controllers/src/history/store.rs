//! Reading and writing a parent's ControllerRevisions (upstream's realHistory and the
//! ControllerRevision ref manager): listing what the parent controls (claiming orphans its
//! selector matches, releasing what it no longer matches), creating under a name that may
//! collide, renumbering, deleting, and truncating history to the parent's limit.

use std::collections::HashSet;
use std::sync::Arc;

use registry::options::{DeleteOptions, ListOptions, WriteOptions};
use registry::selector::labels::LabelSelector;
use registry::{object, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use tracing::debug;

use super::{equal_revision, hash_revision, revision_name, revision_number, sort_revisions};
use client::controller_utils::{claim, Claimable, SyncError};
use client::informer::{
    FactoryError, InformerFactory, SharedInformer, CONTROLLER_UID_INDEX, NAMESPACE_INDEX,
};

/// Update attempts when a revision changes under us.
const UPDATE_ATTEMPTS: usize = 5;

/// The ControllerRevisions of one kind of parent (StatefulSets, DaemonSets).
#[derive(Clone)]
pub struct History {
    revisions: Arc<Store>,
    informer: SharedInformer,
    /// The parents' Store, read fresh before adopting (adoption must not race a deletion).
    parents: Arc<Store>,
}

impl History {
    pub fn new(informers: &InformerFactory, parents: Arc<Store>) -> Result<Self, FactoryError> {
        let revisions = informers.store("apps", "v1", "controllerrevisions")?;
        Ok(Self {
            informer: informers.informer_for(&revisions),
            revisions,
            parents,
        })
    }

    /// The shared informer of ControllerRevisions, for a controller to watch and wait on.
    pub fn informer(&self) -> &SharedInformer {
        &self.informer
    }

    /// The parent's revisions, sorted by revision: those it controls and its selector
    /// matches, plus matching orphans it adopts; controlled ones it no longer matches are
    /// released.
    pub async fn list(
        &self,
        parent: &Value,
        selector: &LabelSelector,
    ) -> Result<Vec<Arc<Value>>, SyncError> {
        let namespace = object::namespace(parent);
        let index_error = |e: client::informer::IndexerError| SyncError::Failed(e.to_string());
        let mut candidates = self
            .informer
            .indexer()
            .by_index(CONTROLLER_UID_INDEX, object::uid(parent))
            .map_err(index_error)?;
        candidates.retain(|r| object::namespace(r) == namespace);
        let orphans = self
            .informer
            .indexer()
            .by_index_selected(NAMESPACE_INDEX, namespace, |r| {
                r.controller_uid().is_none() && r.labels().matches(selector)
            })
            .map_err(index_error)?;
        candidates.extend(orphans);
        let name = object::name(parent);
        let claimable = Claimable {
            owner: parent,
            store: &self.revisions,
            selector,
            fresh_owner: Box::new(|| {
                Box::pin(async move {
                    Ok(self
                        .parents
                        .get(Some(namespace), name, &ListOptions::default())
                        .await?)
                })
            }),
        };
        let mut claimed = claim(&claimable, candidates).await?;
        sort_revisions(&mut claimed);
        Ok(claimed)
    }

    /// Creates `revision` for `parent` under the name its hash and `collision_count` give.
    /// A revision of that name with equal data is the one wanted and is returned; one with
    /// other data is a hash collision: the count goes up and the name is tried again.
    pub async fn create(
        &self,
        parent: &Value,
        revision: &Value,
        collision_count: &mut i32,
    ) -> Result<Value, SyncError> {
        let namespace = object::namespace(parent);
        loop {
            let hash = hash_revision(revision, Some(*collision_count));
            let name = revision_name(object::name(parent), &hash);
            let mut candidate = revision.clone();
            candidate["metadata"]["name"] = json!(name);
            candidate["metadata"]["namespace"] = json!(namespace);
            match self
                .revisions
                .create(Some(namespace), candidate.clone(), &WriteOptions::default())
                .await
            {
                Ok(created) => return Ok(created),
                Err(RegistryError::AlreadyExists { .. }) => {
                    let existing = self
                        .revisions
                        .get(Some(namespace), &name, &ListOptions::default())
                        .await?;
                    if equal_revision(&existing, &candidate) {
                        return Ok(existing);
                    }
                    debug!(revision = %name, "revision name collision");
                    *collision_count = collision_count.saturating_add(1);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Gives `revision` the number `number` (a rollback makes an old revision the newest).
    pub async fn update_revision(&self, revision: &Value, number: i64) -> Result<Value, SyncError> {
        let namespace = object::namespace(revision);
        let name = object::name(revision);
        let mut current = revision.clone();
        for _ in 0..UPDATE_ATTEMPTS {
            if revision_number(&current) == number {
                return Ok(current);
            }
            current["revision"] = json!(number);
            match self
                .revisions
                .update(
                    Some(namespace),
                    name,
                    current.clone(),
                    Subresource::Main,
                    &WriteOptions::default(),
                )
                .await
            {
                Ok((updated, _)) => return Ok(updated),
                Err(RegistryError::Conflict { .. }) => {
                    current = self
                        .revisions
                        .get(Some(namespace), name, &ListOptions::default())
                        .await?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(SyncError::Failed(format!(
            "revision {name} kept changing while it was renumbered"
        )))
    }

    /// Deletes `revision`; one already gone is not an error.
    pub async fn delete(&self, revision: &Value) -> Result<(), SyncError> {
        match self
            .revisions
            .delete(
                Some(object::namespace(revision)),
                object::name(revision),
                DeleteOptions::default(),
            )
            .await
        {
            Ok(_) | Err(RegistryError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes the oldest of `revisions` (sorted by revision) that are not `live`, keeping
    /// `limit` of them (upstream's truncateHistory / cleanupHistory).
    pub async fn truncate(
        &self,
        revisions: &[Arc<Value>],
        live: &HashSet<String>,
        limit: usize,
    ) -> Result<(), SyncError> {
        let history: Vec<&Arc<Value>> = revisions
            .iter()
            .filter(|r| !live.contains(object::name(r)))
            .collect();
        let excess = history.len().saturating_sub(limit);
        for revision in &history[..excess] {
            self.delete(revision).await?;
        }
        Ok(())
    }
}
