//! Watch: storage events become API watch events (ADDED / MODIFIED / DELETED / BOOKMARK /
//! ERROR) carrying objects stamped with the event's resourceVersion.

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use serde_json::{json, Value};
use storage::{EventKind, SharedEncodings, WatchOptions, WatchStream};

use super::encoded::Decoder;
use super::Store;
use crate::error::{RegistryError, Result};
use crate::options::{parse_resource_version, ListOptions};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchEventType {
    Added,
    Modified,
    Deleted,
    Bookmark,
    Error,
}

impl WatchEventType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
            Self::Bookmark => "BOOKMARK",
            Self::Error => "ERROR",
        }
    }
}

/// metav1.WatchEvent: the type and the object (a Status for ERROR).
#[derive(Clone, Debug)]
pub struct WatchEvent {
    pub kind: WatchEventType,
    pub object: Value,
}

impl WatchEvent {
    pub fn to_json(&self) -> Value {
        json!({"type": self.kind.as_str(), "object": self.object})
    }
}

pub type WatchEvents = BoxStream<'static, WatchEvent>;

/// A [`WatchEvent`] as a Store hands it to a client's stream: its object may still be the
/// watch cache's bytes, decoded only when the sender needs the object. An event made from a
/// change of the watch cache tells where the bytes made of it are kept for every watcher
/// ([`ServedEvent::shared`]), so that a change sent to thousands of watchers is decoded and
/// encoded once, not once per watcher.
pub struct ServedEvent {
    pub kind: WatchEventType,
    object: Served,
}

enum Served {
    Decoded(Value),
    Stored {
        value: Bytes,
        revision: i64,
        decoder: Decoder,
        /// The change's encodings, and this event's key among them.
        shared: Option<(SharedEncodings, u64)>,
    },
}

pub type ServedEvents = BoxStream<'static, ServedEvent>;

impl ServedEvent {
    fn decoded(kind: WatchEventType, object: Value) -> Self {
        Self {
            kind,
            object: Served::Decoded(object),
        }
    }

    /// The event with its object decoded; an ERROR event when the stored bytes do not
    /// decode.
    pub fn into_event(self) -> WatchEvent {
        match self.object {
            Served::Decoded(object) => WatchEvent {
                kind: self.kind,
                object,
            },
            Served::Stored {
                value,
                revision,
                decoder,
                ..
            } => match decoder.decode_bytes(&value, revision) {
                Ok(object) => WatchEvent {
                    kind: self.kind,
                    object,
                },
                Err(err) => WatchEvent {
                    kind: WatchEventType::Error,
                    object: serde_json::to_value(err.status()).unwrap_or(Value::Null),
                },
            },
        }
    }

    /// Where bytes made of this event are kept for every watcher of the Store that receives
    /// it as the same event, and the key that stands for the Store's served shape and the
    /// event's type: a sender adds to it what else its bytes depend on (its encoding). None
    /// when the event is this watcher's own (an initial state, a bookmark, an error, an
    /// object converted by a webhook).
    pub fn shared(&self) -> Option<(&SharedEncodings, u64)> {
        match &self.object {
            Served::Stored {
                shared: Some((encodings, key)),
                ..
            } => Some((encodings, *key)),
            _ => None,
        }
    }
}

/// The key of a Store's event type among a change's encodings: the Store's shape, then the
/// type, in the low byte a sender leaves free for its own part.
fn shared_key(shape: u64, kind: WatchEventType) -> u64 {
    (shape << 16) | ((kind as u64) << 8)
}

impl Store {
    /// Watches the resource in `namespace` (or everywhere), or the one object `name`.
    pub async fn watch(
        &self,
        namespace: Option<&str>,
        name: Option<&str>,
        opts: &ListOptions,
    ) -> Result<WatchEvents> {
        let served = self.watch_served(namespace, name, opts).await?;
        Ok(served.map(ServedEvent::into_event).boxed())
    }

    /// [`Store::watch`] for a sender: objects decoded when the sender asks, and the bytes
    /// made of a change of the watch cache shared among its watchers.
    pub async fn watch_served(
        &self,
        namespace: Option<&str>,
        name: Option<&str>,
        opts: &ListOptions,
    ) -> Result<ServedEvents> {
        let stream = self.open_watch(namespace, name, opts).await?;
        let api_version = self.info.api_version();
        let kind = self.info.kind.clone();
        let resource = self.info.qualified_resource();
        let decoder = Decoder::new(self.conversion.clone());
        let shape = self.shape;
        let events = stream.map(move |event| match event {
            Err(e) => ServedEvent::decoded(
                WatchEventType::Error,
                serde_json::to_value(RegistryError::from_storage(e, &resource, "").status())
                    .unwrap_or(Value::Null),
            ),
            Ok(e) if e.kind == EventKind::Bookmark => {
                let mut meta = json!({"resourceVersion": e.revision.to_string()});
                if e.initial_events_end {
                    meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
                }
                ServedEvent::decoded(
                    WatchEventType::Bookmark,
                    json!({"apiVersion": api_version, "kind": kind, "metadata": meta}),
                )
            }
            Ok(e) => {
                let kind = match e.kind {
                    EventKind::Added => WatchEventType::Added,
                    EventKind::Modified => WatchEventType::Modified,
                    _ => WatchEventType::Deleted,
                };
                ServedEvent {
                    kind,
                    object: Served::Stored {
                        value: e.value,
                        revision: e.revision,
                        decoder: decoder.clone(),
                        shared: e.shared.map(|s| (s, shared_key(shape, kind))),
                    },
                }
            }
        });
        let Some(converting) = self.converting() else {
            return Ok(events.boxed());
        };
        // Each event's object converted on its own, as upstream converts each event it sends.
        let converted = events.then(move |event| {
            let converting = converting.clone();
            async move {
                let event = event.into_event();
                if !matches!(
                    event.kind,
                    WatchEventType::Added | WatchEventType::Modified | WatchEventType::Deleted
                ) {
                    return ServedEvent::decoded(event.kind, event.object);
                }
                match converting.convert_one(event.object).await {
                    Ok(object) => ServedEvent::decoded(event.kind, object),
                    Err(err) => ServedEvent::decoded(
                        WatchEventType::Error,
                        serde_json::to_value(err.status()).unwrap_or(Value::Null),
                    ),
                }
            }
        });
        Ok(converted.boxed())
    }

    /// The storage watch behind a watch of `namespace` (or everywhere), or of the one
    /// object `name`.
    pub(super) async fn open_watch(
        &self,
        namespace: Option<&str>,
        name: Option<&str>,
        opts: &ListOptions,
    ) -> Result<WatchStream> {
        let namespace = namespace.filter(|n| !n.is_empty() && self.info.namespaced);
        let selection = self.selection(opts)?;
        let name = name.map(str::to_string).or_else(|| selection.single_name());
        let (key, recursive) = match (&name, namespace, self.info.namespaced) {
            (Some(n), Some(ns), true) => (self.key(Some(ns), n), false),
            (Some(n), None, false) => (self.key(None, n), false),
            _ => (self.list_prefix(namespace), true),
        };
        let revision = match opts.resource_version.as_deref() {
            None | Some("") | Some("0") => 0,
            Some(rv) => parse_resource_version(rv)?,
        };
        // Legacy semantics (sendInitialEvents unset): no resourceVersion (or "0") starts with
        // the current state, and no bookmark marks its end (upstream sends that one only to
        // watches that ask for initial events).
        let send_initial_events = opts.send_initial_events;
        self.storage
            .watch(
                &key,
                WatchOptions {
                    revision,
                    recursive,
                    predicate: self.predicate(selection),
                    bookmarks: opts.allow_watch_bookmarks,
                    send_initial_events,
                },
            )
            .await
            .map_err(self.storage_err(name.as_deref().unwrap_or_default()))
    }
}
