//! A scripted ListerWatcher for unit tests of the reflector and the informer. Its objects are
//! encoded as the registry stores them: JSON without the resourceVersion, which the revision
//! carries.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use futures::StreamExt;
use registry::options::ListOptions;
use registry::store::{Decoder, Encoded, EncodedEvent, EncodedEvents, EncodedList};
use registry::{RegistryError, WatchEventType};
use serde_json::{json, Value};

use super::{object_key, ListerWatcher};

/// A watch the fake hands out: events, then either the end of the stream or silence.
pub struct Script {
    pub events: Vec<EncodedEvent>,
    pub then_close: bool,
}

/// Answers lists and watches from scripts, recording what was asked.
#[derive(Default)]
pub struct Fake {
    lists: Mutex<VecDeque<registry::Result<EncodedList>>>,
    watches: Mutex<VecDeque<registry::Result<Script>>>,
    calls: Mutex<Vec<String>>,
}

impl Fake {
    pub fn script_list(&self, result: registry::Result<EncodedList>) {
        self.lists.lock().expect("lock").push_back(result);
    }

    pub fn script_watch(&self, result: registry::Result<Script>) {
        self.watches.lock().expect("lock").push_back(result);
    }

    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().expect("lock").clone()
    }
}

#[async_trait]
impl ListerWatcher for Fake {
    async fn list(&self, opts: &ListOptions) -> registry::Result<EncodedList> {
        let rv = opts
            .resource_version
            .clone()
            .unwrap_or_else(|| "latest".into());
        self.calls.lock().expect("lock").push(format!("list {rv}"));
        let next = self.lists.lock().expect("lock").pop_front();
        next.unwrap_or_else(|| Err(RegistryError::ServiceUnavailable("no more lists".into())))
    }

    async fn watch(&self, opts: &ListOptions) -> registry::Result<EncodedEvents> {
        let rv = opts.resource_version.clone().unwrap_or_default();
        assert!(opts.allow_watch_bookmarks);
        self.calls.lock().expect("lock").push(format!("watch {rv}"));
        let next = self.watches.lock().expect("lock").pop_front();
        let Some(script) = next else {
            return Ok(futures::stream::pending().boxed());
        };
        let script = script?;
        let events = futures::stream::iter(script.events);
        Ok(if script.then_close {
            events.boxed()
        } else {
            events.chain(futures::stream::pending()).boxed()
        })
    }

    fn decoder(&self) -> Decoder {
        Decoder::default()
    }

    fn describe(&self) -> String {
        "fakes".into()
    }
}

pub fn obj(name: &str, rv: u32) -> Value {
    json!({"metadata": {"namespace": "ns", "name": name, "resourceVersion": rv.to_string()}})
}

/// `obj` as stored: the resourceVersion taken out into the revision.
pub fn encode(obj: &Value) -> Encoded {
    let mut stored = obj.clone();
    let revision = stored["metadata"]
        .as_object_mut()
        .and_then(|m| m.remove("resourceVersion"))
        .and_then(|rv| rv.as_str().and_then(|rv| rv.parse().ok()))
        .unwrap_or_default();
    Encoded {
        key: object_key(obj).unwrap_or_default(),
        value: serde_json::to_vec(&stored).expect("JSON").into(),
        revision,
    }
}

pub fn list_of(rv: u32, items: Vec<Value>) -> EncodedList {
    EncodedList {
        revision: rv.into(),
        items: items.iter().map(encode).collect(),
        continue_token: None,
    }
}

pub fn event(kind: WatchEventType, object: Value) -> EncodedEvent {
    let object = encode(&object);
    match kind {
        WatchEventType::Added => EncodedEvent::Added(object),
        WatchEventType::Modified => EncodedEvent::Modified(object),
        WatchEventType::Deleted => EncodedEvent::Deleted(object),
        other => panic!("{other:?} carries no object"),
    }
}

pub fn bookmark(rv: u32) -> EncodedEvent {
    EncodedEvent::Bookmark {
        revision: rv.into(),
        initial_events_end: false,
    }
}

pub fn expired_event() -> EncodedEvent {
    EncodedEvent::Error(gone())
}

pub fn gone() -> RegistryError {
    RegistryError::Expired {
        message: "too old resource version".into(),
    }
}
