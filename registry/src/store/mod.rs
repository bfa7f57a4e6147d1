//! The generic registry Store (upstream's genericregistry.Store): one per resource, the same
//! for every resource, parametrised by the resource's catalogue entry and its Strategy.

mod apply;
pub mod binding;
mod convert;
mod create;
mod delete;
mod delete_collection;
pub mod encoded;
mod field_validation;
pub mod hooks;
mod list_stream;
mod managed;
mod meta;
mod raw;
mod read;
mod scheme;
pub mod subresources;
pub mod update;
pub mod watch;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use storage::{Interface, KeyValue};

use crate::admission::Admission;
use crate::catalogue::ResourceInfo;
use crate::error::{RegistryError, Result};
use crate::field_validation::FieldSchemas;
use crate::object::{self, Object};
use crate::strategy::{Conversion, Converter, Strategy};

use self::hooks::{Finish, GuardedWrite, StoreHooks, WriteGuard};

pub use self::apply::parse_config as parse_apply_config;
pub use self::delete::{DeleteOutcome, DeletePlan};
pub use self::encoded::{Decoder, Encoded, EncodedEvent, EncodedEvents, EncodedList};
pub use self::list_stream::ListStream;
pub use self::managed::DEFAULT_MANAGER;
pub use self::raw::JsonPieces;
pub use self::watch::{ServedEvent, ServedEvents, WatchEvent, WatchEventType};

pub struct Store {
    pub info: Arc<ResourceInfo>,
    strategy: Box<dyn Strategy>,
    storage: Arc<dyn Interface>,
    /// The registry's admission chain, as configured when a request comes.
    admission: Arc<Admission>,
    fields: Arc<FieldSchemas>,
    /// Between the shape stored and the shape served, when they differ.
    conversion: Option<Arc<dyn Conversion>>,
    /// A conversion awaited per request, which may fail (a conversion webhook); when set,
    /// `conversion` is None and decoded objects are in the version they were stored in until
    /// converted (`store/convert.rs`).
    converter: Option<Arc<dyn Converter>>,
    /// How long written objects live (the strategy's ttl).
    ttl: Option<Duration>,
    /// What the resource does around writes (Services' allocations), in the order added.
    hooks: Vec<Arc<dyn StoreHooks>>,
    /// Who may write what (RBAC's escalation checks), set once the judge exists.
    guard: OnceLock<Arc<dyn WriteGuard>>,
    /// The kind's strategic-merge-patch metadata, generated from the built-in definitions;
    /// None for custom resources, which upstream refuses strategic merge patches for.
    patch_schema: Option<&'static crate::patch::PatchSchema>,
    /// The kind's Go struct, whose field order its JSON follows (see `wire`); None for
    /// custom resources, written as maps with their keys sorted.
    wire_type: Option<&'static openapi::wire_order::Def>,
    /// This Store's own number: the bytes its watchers make of a change (the object in its
    /// served shape) are shared under it (see `watch.rs`), apart from those of other Stores
    /// over the same storage (another version, another shape).
    shape: u64,
}

/// The next Store's [`Store::shape`].
static NEXT_SHAPE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Store {
    pub fn new(
        info: Arc<ResourceInfo>,
        strategy: Box<dyn Strategy>,
        storage: Arc<dyn Interface>,
        admission: Arc<Admission>,
    ) -> Self {
        let converter = strategy.converter(&info);
        let conversion = match converter {
            Some(_) => None,
            None => strategy.conversion(&info),
        };
        let ttl = strategy.ttl();
        let patch_schema =
            openapi::patch_meta::patch_schema(&info.group, &info.version, &info.kind);
        let wire_type = crate::wire::kind(&info.api_version(), &info.kind);
        Self {
            patch_schema,
            wire_type,
            conversion,
            converter,
            ttl,
            info,
            strategy,
            storage,
            admission,
            fields: Arc::default(),
            hooks: Vec::new(),
            guard: OnceLock::new(),
            shape: NEXT_SHAPE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Judges every later create and update of the main object with `guard`. A Store has
    /// one judge for its life: a second is refused (false) and the first stays.
    pub fn set_guard(&self, guard: Arc<dyn WriteGuard>) -> bool {
        self.guard.set(guard).is_ok()
    }

    /// The guard's judgement of a write; without a guard every write passes.
    fn guard_write(&self, write: &GuardedWrite<'_>) -> Result<()> {
        match self.guard.get() {
            Some(guard) => guard.admit(write),
            None => Ok(()),
        }
    }

    /// Runs `hooks` around every create, update and removal, after the hooks added before.
    pub fn with_hooks(mut self, hooks: Arc<dyn StoreHooks>) -> Self {
        self.hooks.push(hooks);
        self
    }

    /// Checks written objects against the schemas `fields` compiles (the registry's own,
    /// shared by every Store).
    pub fn with_field_schemas(mut self, fields: Arc<FieldSchemas>) -> Self {
        self.fields = fields;
        self
    }

    /// The Go struct of the kind served, whose field order its JSON follows; None for custom
    /// resources (maps, keys sorted).
    pub fn wire_type(&self) -> Option<&'static openapi::wire_order::Def> {
        self.wire_type
    }

    /// Where a stored object's resourceVersion belongs among its metadata keys.
    pub(crate) fn meta_order(&self) -> raw::MetaOrder {
        match self.wire_type {
            Some(_) => raw::MetaOrder::Typed,
            None => raw::MetaOrder::Sorted,
        }
    }

    /// The storage this Store writes to (the resource's watch cache).
    pub fn storage(&self) -> &Arc<dyn Interface> {
        &self.storage
    }

    /// The namespace a request works in: required for namespaced resources, ignored for
    /// cluster-scoped ones.
    fn scope<'a>(&self, namespace: Option<&'a str>) -> Result<Option<&'a str>> {
        match (self.info.namespaced, namespace.filter(|n| !n.is_empty())) {
            (true, Some(ns)) => Ok(Some(ns)),
            (true, None) => Err(RegistryError::BadRequest(
                "the namespace of the object must be specified".into(),
            )),
            (false, _) => Ok(None),
        }
    }

    /// Upstream's key layout: `<path>/<namespace>/<name>` or `<path>/<name>`.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace {
            Some(ns) => format!("{}/{ns}/{name}", self.info.storage_path),
            None => format!("{}/{name}", self.info.storage_path),
        }
    }

    /// The prefix of a list: one namespace, or all of the resource.
    fn list_prefix(&self, namespace: Option<&str>) -> String {
        match namespace.filter(|n| !n.is_empty()) {
            Some(ns) if self.info.namespaced => format!("{}/{ns}/", self.info.storage_path),
            _ => format!("{}/", self.info.storage_path),
        }
    }

    /// Maps a storage error about `name`; allocates only when there is an error.
    fn storage_err<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Fn(storage::StorageError) -> RegistryError + 'a {
        move |e| RegistryError::from_storage(e, &self.info.qualified_resource(), name)
    }

    /// A stored object as clients see it: resourceVersion is the revision that wrote it.
    fn decode(&self, kv: &KeyValue) -> Result<Object> {
        self.decode_bytes(&kv.value, kv.mod_revision)
    }

    /// A stored object in the shape this Store serves.
    pub(crate) fn decode_bytes(&self, value: &[u8], revision: i64) -> Result<Object> {
        encoded::served(value, revision, self.conversion.as_deref())
    }

    /// How every write of this Store goes to storage: with the kind's ttl, if it has one.
    pub(crate) fn write_options(&self) -> storage::UpdateOptions {
        storage::UpdateOptions {
            ttl: self.ttl,
            ..Default::default()
        }
    }

    /// The bytes to store for `obj` (see [`encode`]); `obj` becomes what reading them back
    /// shows, so a write answers with the object as stored.
    pub(crate) fn encode(&self, obj: &mut Object) -> Result<Bytes> {
        let Some(conversion) = &self.conversion else {
            return encode(obj);
        };
        let mut stored = obj.clone();
        conversion.to_stored(&mut stored);
        let bytes = encode(&mut stored)?;
        conversion.to_served(&mut stored);
        *obj = stored;
        Ok(bytes)
    }
}

/// Ends a hooked write, telling each hook whether it landed.
pub(crate) async fn finish<T>(finishes: Vec<Finish>, result: Result<T>) -> Result<T> {
    for f in finishes {
        f(result.is_ok()).await;
    }
    result
}

/// Parses stored bytes and stamps the resourceVersion they were read at.
pub(crate) fn decode_at(value: &[u8], revision: i64) -> Result<Object> {
    let mut obj: Value = serde_json::from_slice(value)
        .map_err(|e| RegistryError::Internal(format!("stored object is not JSON: {e}")))?;
    stamp(&mut obj, revision);
    Ok(obj)
}

pub(crate) fn stamp(obj: &mut Object, revision: i64) {
    object::meta_mut(obj).insert("resourceVersion".into(), Value::from(revision.to_string()));
}

/// What is stored: the object without resourceVersion (the store's revision is the version,
/// stamped again on every read), in the wire order a response has (`wire`), so that a get
/// answers with the stored bytes as they are, the resourceVersion spliced in.
pub(crate) fn encode(obj: &mut Object) -> Result<Bytes> {
    object::meta_mut(obj).remove("resourceVersion");
    if !obj.is_object() {
        return Err(RegistryError::Internal("objects are JSON objects".into()));
    }
    ENCODE_BUFFER.with_borrow_mut(|out| {
        out.clear();
        crate::wire::write(out, obj, crate::wire::Style::Compact)?;
        // The stored bytes are what the watch cache, informers and lists share for the
        // object's life: an exact copy, not a buffer grown by doubling (a 1.4 KB ConfigMap
        // kept a 2 KiB block, which the allocator does not shrink in place).
        let bytes = Bytes::copy_from_slice(out);
        if out.capacity() > KEPT_ENCODE_BUFFER {
            *out = Vec::new();
        }
        Ok(bytes)
    })
}

/// A thread's encoding buffer is kept up to this size (most objects are a few KiB); a larger
/// object's buffer is dropped after it, and the next one grows from nothing.
const KEPT_ENCODE_BUFFER: usize = 16 * 1024;

thread_local! {
    static ENCODE_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}
