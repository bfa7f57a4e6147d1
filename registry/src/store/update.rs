//! Update, status update, finalize and patch: one guaranteed update whose function computes
//! the next state from the stored one (upstream's Store.Update with BeforeUpdate), so a patch
//! is re-applied to fresh state whenever a concurrent write wins.

use serde_json::Value;
use storage::{ReadRevision, StorageError, Update, UpdateOptions};

use super::hooks::GuardedWrite;
use super::managed::{Endpoint, Tracking};
use super::{stamp, Store};
use crate::admission::{Attributes, Chain, Operation};
use crate::error::{Cause, RegistryError, Result};
use crate::object::{self, Object};
use crate::options::WriteOptions;
use crate::patch::{self, PatchType};

/// Which part of the object a write may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subresource {
    /// The object but its status (when the resource has a status subresource).
    Main,
    /// Only `status`.
    Status,
    /// Only `spec.finalizers` (namespaces' `finalize`).
    Finalize,
    /// Only `status.conditions` (CertificateSigningRequests' `approval`).
    Approval,
    /// Only `spec.ephemeralContainers` (pods' `ephemeralcontainers`, what `kubectl debug`
    /// writes).
    EphemeralContainers,
    /// Only the containers' `resources` and `resizePolicy` (pods' `resize`: in-place resize).
    Resize,
}

impl Subresource {
    /// The subresource's name in a request path; "" for the main resource.
    pub fn name(self) -> &'static str {
        match self {
            Subresource::Main => "",
            Subresource::Status => "status",
            Subresource::Finalize => "finalize",
            Subresource::Approval => "approval",
            Subresource::EphemeralContainers => "ephemeralcontainers",
            Subresource::Resize => "resize",
        }
    }
}

/// What an update attempt decided.
pub(super) enum Next {
    Write(Object),
    Create(Object),
    /// The update emptied the finalizers of an object being deleted: it goes.
    Delete(Object),
}

/// Rounds of a hooked write lost to concurrent writes before it gives up with a Conflict.
/// Upstream's GuaranteedUpdate retries without a bound; a busy object (a pod whose kubelet
/// and scheduler write its status) can win several rounds in a row on a loaded machine.
pub(super) const HOOKED_WRITE_TRIES: usize = 32;

pub(super) const MODIFIED: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

impl Store {
    pub async fn update(
        &self,
        namespace: Option<&str>,
        name: &str,
        mut obj: Object,
        sub: Subresource,
        opts: &WriteOptions,
    ) -> Result<(Object, bool)> {
        self.check_kind(&mut obj)?;
        self.check_fields(&mut obj, opts, false)?;
        self.write(namespace, name, sub, opts, move |_| Ok(obj.clone()))
            .await
    }

    pub async fn patch(
        &self,
        namespace: Option<&str>,
        name: &str,
        kind: PatchType,
        body: &[u8],
        sub: Subresource,
        opts: &WriteOptions,
    ) -> Result<Object> {
        if kind == PatchType::Apply {
            return Ok(self.apply(namespace, name, body, sub, opts).await?.0);
        }
        let schema = self.patch_schema;
        let (obj, _) = self
            .write(namespace, name, sub, opts, move |current| {
                let current = self.existing(current, name)?;
                let mut patched = patch::apply_patch(kind, current, body, schema)?;
                self.check_fields(&mut patched, opts, true)?;
                Ok(patched)
            })
            .await?;
        Ok(obj)
    }

    /// The generic write: `produce` makes the requested object from the stored one.
    pub(crate) async fn write(
        &self,
        namespace: Option<&str>,
        name: &str,
        sub: Subresource,
        opts: &WriteOptions,
        produce: impl FnMut(Option<&Object>) -> Result<Object> + Send,
    ) -> Result<(Object, bool)> {
        let how = How {
            sub,
            endpoint: Endpoint::of(sub),
            tracking: Tracking::Update,
        };
        self.write_as(namespace, name, how, opts, produce).await
    }

    /// A write through `how.endpoint` whose managedFields come about as `how.tracking` says.
    pub(crate) async fn write_as(
        &self,
        namespace: Option<&str>,
        name: &str,
        how: How,
        opts: &WriteOptions,
        produce: impl FnMut(Option<&Object>) -> Result<Object> + Send,
    ) -> Result<(Object, bool)> {
        let chain = self.admission.chain();
        let sub = how.sub.name();
        let main = how.sub == Subresource::Main;
        let hooked = main && self.hooks.iter().any(|h| h.hooks_updates());
        let admitted = chain.handles(&self.info, Operation::Update, sub)
            || (main
                && self.strategy.allow_create_on_update()
                && chain.handles(&self.info, Operation::Create, sub));
        if hooked || admitted {
            self.write_admitted(&chain, namespace, name, how, opts, produce)
                .await
        } else {
            self.write_plain(namespace, name, how, opts, produce).await
        }
    }

    /// A write that admission or hooks see before it lands (upstream runs admission inside
    /// the update's transform, and its BeginUpdate hooks there): the requested object is made
    /// from the stored one and admitted, the hooks may allocate, and only then is it written.
    /// Neither is part of the compare-and-swap, so the write lands only on the revision they
    /// saw; a concurrent write meanwhile gives back what the hooks took and starts over.
    async fn write_admitted(
        &self,
        chain: &Chain,
        namespace: Option<&str>,
        name: &str,
        how: How,
        opts: &WriteOptions,
        mut produce: impl FnMut(Option<&Object>) -> Result<Object> + Send,
    ) -> Result<(Object, bool)> {
        let scope = self.scope(namespace)?;
        let key = self.key(scope, name);
        let may_create = how.sub == Subresource::Main && self.strategy.allow_create_on_update();
        let dry_run = opts.dry_run.is_all();
        for attempt in 0..HOOKED_WRITE_TRIES {
            // The first round starts from the watch cache's copy, as upstream's admission runs
            // on the cached existing object: the compare-and-swap below proves it current, and
            // a round that lost to a newer state reads the store. An object the cache does not
            // have yet is read from the store too, so that no write passes admission unseen.
            // Behind a converter a stale copy would cost a webhook call: it reads the store.
            let cached_first = attempt == 0 && self.converter.is_none();
            let mut read = match cached_first {
                true => self.storage.get(&key, ReadRevision::Any).await,
                false => self.storage.get(&key, ReadRevision::Latest).await,
            };
            if cached_first && matches!(read, Err(StorageError::NotFound { .. })) {
                read = self.storage.get(&key, ReadRevision::Latest).await;
            }
            let old = match read {
                Ok(kv) => Some(self.served_one(self.decode(&kv)?).await?),
                Err(StorageError::NotFound { .. }) => None,
                Err(e) => return Err(self.storage_err(name)(e)),
            };
            // Nothing to update and nothing to create: the plain write answers (NotFound).
            if old.is_none() && !may_create {
                return self.write_plain(namespace, name, how, opts, produce).await;
            }
            let mut new = produce(old.as_ref())?;
            let attrs = Attributes {
                info: &self.info,
                operation: match old {
                    Some(_) => Operation::Update,
                    None => Operation::Create,
                },
                subresource: how.sub.name(),
                namespace: scope,
                name,
                old: old.as_ref(),
                user: opts.user.as_ref(),
                dry_run,
            };
            chain.admit_and_validate(&attrs, &mut new).await?;
            let mut finishes = Vec::new();
            if let Some(old) = old.as_ref().filter(|_| how.sub == Subresource::Main) {
                for hooks in self.hooks.iter().filter(|h| h.hooks_updates()) {
                    match hooks.begin_update(&mut new, old, dry_run).await {
                        Ok(finish) => finishes.push(finish),
                        Err(e) => return super::finish(finishes, Err(e)).await,
                    }
                }
            }
            let seen = old
                .as_ref()
                .map(|o| object::resource_version(o).to_string());
            let mut stale = false;
            let written = self
                .write_plain(namespace, name, how, opts, |current| {
                    let same = current.map(|c| object::resource_version(c).to_string());
                    if same == seen {
                        return Ok(new.clone());
                    }
                    stale = true;
                    Err(RegistryError::conflict(
                        &self.info.qualified_resource(),
                        name,
                        MODIFIED,
                    ))
                })
                .await;
            let retry = written.is_err() && stale;
            if retry {
                tracing::debug!(resource = %self.info.qualified_resource(), name, "admitted write lost to a concurrent one; again");
                // Let the writer that won finish its round before this one reads again.
                tokio::task::yield_now().await;
            }
            let written = super::finish(finishes, written).await;
            if !retry {
                return written;
            }
        }
        Err(RegistryError::conflict(
            &self.info.qualified_resource(),
            name,
            MODIFIED,
        ))
    }

    async fn write_plain(
        &self,
        namespace: Option<&str>,
        name: &str,
        how: How,
        opts: &WriteOptions,
        mut produce: impl FnMut(Option<&Object>) -> Result<Object> + Send,
    ) -> Result<(Object, bool)> {
        let sub = how.sub;
        let dry_run = opts.dry_run.is_all();
        let namespace = self.scope(namespace)?;
        if self.converter.is_some() {
            return self
                .write_converted(namespace, name, how, opts, produce)
                .await;
        }
        let key = self.key(namespace, name);
        let may_create = sub == Subresource::Main && self.strategy.allow_create_on_update();
        if dry_run {
            let current = match self.storage.get(&key, ReadRevision::Latest).await {
                Ok(kv) => Some(self.decode(&kv)?),
                Err(StorageError::NotFound { .. }) => None,
                Err(e) => return Err(self.storage_err(name)(e)),
            };
            let new = produce(current.as_ref())?;
            return match self.next_state(namespace, name, how, opts, current, new)? {
                Next::Write(obj) | Next::Delete(obj) => Ok((obj, false)),
                Next::Create(obj) => Ok((obj, true)),
            };
        }

        let mut decided: Option<Next> = None;
        let kv = self
            .storage
            .guaranteed_update(
                &key,
                UpdateOptions {
                    ignore_not_found: may_create,
                    ..self.write_options()
                },
                &mut |current| {
                    let mut attempt = || -> Result<Next> {
                        let current = current
                            .map(|kv| self.decode_bytes(&kv.value, kv.mod_revision))
                            .transpose()?;
                        let new = produce(current.as_ref())?;
                        self.next_state(namespace, name, how, opts, current, new)
                    };
                    let mut next = attempt().map_err(RegistryError::into_storage)?;
                    // Encoding drops resourceVersion; the result is stamped with the new one.
                    let update = match &mut next {
                        Next::Write(obj) | Next::Create(obj) => {
                            Update::Write(self.encode(obj).map_err(RegistryError::into_storage)?)
                        }
                        // Removed at the revision the decision was made on.
                        Next::Delete(_) => Update::Delete,
                    };
                    decided = Some(next);
                    Ok(update)
                },
            )
            .await
            .map_err(self.storage_err(name))?;
        match decided {
            Some(Next::Write(mut obj)) => {
                stamp(&mut obj, kv.mod_revision);
                Ok((obj, false))
            }
            Some(Next::Create(mut obj)) => {
                stamp(&mut obj, kv.mod_revision);
                Ok((obj, true))
            }
            // The update took the last finalizer away: the object is gone (upstream's
            // deleteWithoutFinalizers), shown as the update left it.
            Some(Next::Delete(obj)) => {
                for hooks in &self.hooks {
                    hooks.after_delete(&obj).await;
                }
                Ok((obj, false))
            }
            // Nothing changed: storage wrote nothing and returned what it holds.
            None => Ok((self.decode(&kv)?, false)),
        }
    }

    /// The state an update leads to, from the stored object (None: absent) and the requested
    /// one.
    pub(super) fn next_state(
        &self,
        namespace: Option<&str>,
        name: &str,
        how: How,
        opts: &WriteOptions,
        current: Option<Object>,
        mut new: Object,
    ) -> Result<Next> {
        let sub = how.sub;
        self.check_kind(&mut new)?;
        // The client's (or apply's) managedFields, before the generic rules drop them.
        let requested = object::meta_mut(&mut new).remove("managedFields");
        match object::name(&new) {
            "" => {
                object::meta_mut(&mut new).insert("name".into(), Value::from(name));
            }
            given if given != name => {
                return Err(RegistryError::BadRequest(format!(
                    "the name of the object ({given}) does not match the name on the URL ({name})"
                )))
            }
            _ => {}
        }
        self.check_namespace(&mut new, namespace)?;
        let requested_rv = object::resource_version(&new).to_string();
        let Some(old) = current else {
            if !requested_rv.is_empty()
                || sub != Subresource::Main
                || !self.strategy.allow_create_on_update()
            {
                return Err(RegistryError::not_found(
                    &self.info.qualified_resource(),
                    name,
                ));
            }
            self.prepare_create_meta(&mut new);
            self.strategy.prepare_for_create(&mut new);
            self.finish_tracking(how, opts, None, &mut new, requested);
            let mut causes = self.validate_meta(&new);
            causes.extend(self.strategy.validate(&new));
            self.invalid_if_any(name, causes)?;
            self.guard_write(&GuardedWrite {
                namespace,
                path_name: name,
                new: &new,
                old: None,
                user: opts.user.as_ref(),
            })?;
            return Ok(Next::Create(new));
        };
        if !requested_rv.is_empty() && requested_rv != object::resource_version(&old) {
            return Err(RegistryError::conflict(
                &self.info.qualified_resource(),
                name,
                MODIFIED,
            ));
        }
        let mut causes = Vec::new();
        let mut new = match sub {
            Subresource::Main => {
                causes.extend(self.prepare_update_meta(&mut new, &old));
                if self.info.status_subresource() {
                    if let Some(map) = new.as_object_mut() {
                        match old.get("status") {
                            Some(status) => map.insert("status".into(), status.clone()),
                            None => map.remove("status"),
                        };
                    }
                }
                self.strategy.prepare_for_update(&mut new, &old);
                new
            }
            Subresource::Status => {
                let mut next = replace_part(&old, &new, &["status"]);
                for field in self.strategy.status_metadata_fields() {
                    let value = new.pointer(&format!("/metadata/{field}")).cloned();
                    let meta = object::meta_mut(&mut next);
                    match value {
                        Some(v) => meta.insert(field.to_string(), v),
                        None => meta.remove(*field),
                    };
                }
                next
            }
            Subresource::Finalize => replace_part(&old, &new, &["spec", "finalizers"]),
            Subresource::Approval => replace_part(&old, &new, &["status", "conditions"]),
            Subresource::EphemeralContainers => {
                replace_part(&old, &new, &["spec", "ephemeralContainers"])
            }
            Subresource::Resize => resized(&old, &new),
        };
        self.strategy
            .prepare_for_subresource_update(sub, &mut new, &old);
        if self.info.has_generation {
            let generation = object::generation(&old).max(1);
            // A status write never counts as a change of what the user asked for.
            let bumped =
                if sub != Subresource::Status && self.strategy.generation_changes(&new, &old) {
                    generation + 1
                } else {
                    generation
                };
            object::meta_mut(&mut new).insert("generation".into(), Value::from(bumped));
        }
        self.finish_tracking(how, opts, Some(&old), &mut new, requested);
        let old_finalizers = object::finalizers(&old);
        let new_finalizers = object::finalizers(&new);
        if object::deletion_timestamp(&old).is_some() {
            let added: Vec<&String> = new_finalizers
                .iter()
                .filter(|f| !old_finalizers.contains(f))
                .collect();
            if !added.is_empty() {
                causes.push(Cause::forbidden(
                    "metadata.finalizers",
                    &format!("no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"),
                ));
            }
        }
        causes.extend(self.validate_meta(&new));
        causes.extend(match sub {
            Subresource::Status => self.strategy.validate_status_update(&new, &old),
            Subresource::Approval => self.strategy.validate_approval_update(&new, &old),
            Subresource::EphemeralContainers | Subresource::Resize => {
                self.strategy.validate_subresource_update(sub, &new, &old)
            }
            _ => self.strategy.validate_update(&new, &old),
        });
        self.invalid_if_any(name, causes)?;
        if sub == Subresource::Main {
            self.guard_write(&GuardedWrite {
                namespace,
                path_name: name,
                new: &new,
                old: Some(&old),
                user: opts.user.as_ref(),
            })?;
        }
        crate::warning::finalizers(
            new_finalizers
                .iter()
                .filter(|f| !old_finalizers.contains(f))
                .map(String::as_str),
        );
        // Keep the stored version on the result so callers see what they updated from.
        object::meta_mut(&mut new).insert(
            "resourceVersion".into(),
            Value::from(object::resource_version(&old)),
        );
        if self.should_delete_during_update(&new, &old, &new_finalizers) {
            return Ok(Next::Delete(new));
        }
        Ok(Next::Write(new))
    }
}

/// The stored object with only `path` taken from the requested one.
/// `old` with each container's `resources` and `resizePolicy` from `new` (matched by name):
/// what a resize may change.
fn resized(old: &Object, new: &Object) -> Object {
    let mut out = old.clone();
    for list in ["containers", "initContainers"] {
        let wanted = new["spec"][list].as_array().cloned().unwrap_or_default();
        let Some(containers) = out
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in containers.iter_mut() {
            let Some(w) = wanted.iter().find(|w| w["name"] == c["name"]) else {
                continue;
            };
            for field in ["resources", "resizePolicy"] {
                if let Some(map) = c.as_object_mut() {
                    match w.get(field) {
                        Some(v) => map.insert(field.to_string(), v.clone()),
                        None => map.remove(field),
                    };
                }
            }
        }
    }
    out
}

fn replace_part(old: &Object, new: &Object, path: &[&str]) -> Object {
    let mut out = old.clone();
    let value = crate::strategy::at(new, path).cloned();
    let mut cur = &mut out;
    for (i, key) in path.iter().enumerate() {
        let Some(map) = cur.as_object_mut() else {
            return out;
        };
        if i + 1 == path.len() {
            match value {
                Some(v) => map.insert(key.to_string(), v),
                None => map.remove(*key),
            };
            return out;
        }
        cur = map
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    out
}

impl Store {
    /// The stored object a write function works on; a write of what is not there is NotFound.
    pub(crate) fn existing<'a>(
        &self,
        current: Option<&'a Object>,
        name: &str,
    ) -> Result<&'a Object> {
        current.ok_or_else(|| RegistryError::not_found(&self.info.qualified_resource(), name))
    }
}

/// How a write goes: the part of the object it may change, the endpoint it came through and
/// how its managedFields come about.
#[derive(Clone, Copy, Debug)]
pub(crate) struct How {
    pub sub: Subresource,
    pub endpoint: Endpoint,
    pub tracking: Tracking,
}

impl Store {
    /// Sets the managedFields of the object a write leads to.
    pub(super) fn finish_tracking(
        &self,
        how: How,
        opts: &WriteOptions,
        live: Option<&Object>,
        new: &mut Object,
        requested: Option<Value>,
    ) {
        match how.tracking {
            Tracking::Update => self.track_update(how.endpoint, live, new, requested, opts),
            Tracking::Applied => {
                if let Some(managed) = requested {
                    object::meta_mut(new).insert("managedFields".into(), managed);
                }
            }
        }
    }

    /// Upstream's ShouldDeleteDuringUpdate: an update leaving no finalizers on an object whose
    /// deletion was asked (and is not waiting out a grace period) removes it. Kinds with
    /// finalizers of their own (namespaces' `spec.finalizers`) also need those emptied, so
    /// emptying them through `finalize` is what deletes a namespace.
    fn should_delete_during_update(&self, new: &Value, old: &Value, finalizers: &[String]) -> bool {
        if !finalizers.is_empty() || object::deletion_timestamp(old).is_none() {
            return false;
        }
        let grace = object::meta(old)
            .and_then(|m| m.get("deletionGracePeriodSeconds"))
            .and_then(Value::as_i64);
        if grace.is_some_and(|g| g != 0) {
            return false;
        }
        !self.strategy.finalizing(new)
    }
}
