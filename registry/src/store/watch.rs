//! Watch: storage events become API watch events (ADDED / MODIFIED / DELETED / BOOKMARK /
//! ERROR) carrying objects stamped with the event's resourceVersion.

use futures::stream::BoxStream;
use futures::StreamExt;
use serde_json::{json, Value};
use storage::{EventKind, WatchOptions, WatchStream};

use super::encoded::served;
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

impl Store {
    /// Watches the resource in `namespace` (or everywhere), or the one object `name`.
    pub async fn watch(
        &self,
        namespace: Option<&str>,
        name: Option<&str>,
        opts: &ListOptions,
    ) -> Result<WatchEvents> {
        let stream = self.open_watch(namespace, name, opts).await?;
        let api_version = self.info.api_version();
        let kind = self.info.kind.clone();
        let resource = self.info.qualified_resource();
        let conversion = self.conversion.clone();
        let events = stream.map(move |event| match event {
            Err(e) => WatchEvent {
                kind: WatchEventType::Error,
                object: serde_json::to_value(
                    RegistryError::from_storage(e, &resource, "").status(),
                )
                .unwrap_or(Value::Null),
            },
            Ok(e) if e.kind == EventKind::Bookmark => {
                let mut meta = json!({"resourceVersion": e.revision.to_string()});
                if e.initial_events_end {
                    meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
                }
                WatchEvent {
                    kind: WatchEventType::Bookmark,
                    object: json!({"apiVersion": api_version, "kind": kind, "metadata": meta}),
                }
            }
            Ok(e) => {
                let kind = match e.kind {
                    EventKind::Added => WatchEventType::Added,
                    EventKind::Modified => WatchEventType::Modified,
                    _ => WatchEventType::Deleted,
                };
                match served(&e.value, e.revision, conversion.as_deref()) {
                    Ok(object) => WatchEvent { kind, object },
                    Err(err) => WatchEvent {
                        kind: WatchEventType::Error,
                        object: serde_json::to_value(err.status()).unwrap_or(Value::Null),
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
                if !matches!(
                    event.kind,
                    WatchEventType::Added | WatchEventType::Modified | WatchEventType::Deleted
                ) {
                    return event;
                }
                match converting.convert_one(event.object).await {
                    Ok(object) => WatchEvent {
                        kind: event.kind,
                        object,
                    },
                    Err(err) => WatchEvent {
                        kind: WatchEventType::Error,
                        object: serde_json::to_value(err.status()).unwrap_or(Value::Null),
                    },
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
