//! Watch through the registry: selectors with ADDED/DELETED transitions, initial events,
//! bookmarks.

mod support;

use std::time::Duration;

use futures::StreamExt;
use registry::options::{ListOptions, ResourceVersionMatch};
use registry::store::{Decoder, EncodedEvent, EncodedEvents};
use registry::{Store, Subresource, WatchEvent, WatchEventType};
use serde_json::{json, Value};
use support::{write, Harness};

test_support::both_backends!(
    crate::support::Harness;
    selector_transitions_and_initial_events,
    encoded_reads_decode_as_served,
);

async fn next(w: &mut registry::store::watch::WatchEvents) -> WatchEvent {
    loop {
        let e = tokio::time::timeout(Duration::from_secs(10), w.next())
            .await
            .expect("event in time")
            .expect("stream open");
        if e.kind != WatchEventType::Bookmark {
            return e;
        }
    }
}

async fn selector_transitions_and_initial_events(h: &Harness) {
    let cms = h.store("", "configmaps");
    let c = cms
        .create(
            Some("default"),
            json!({"metadata": {"name": "x", "labels": {"hot": "no"}}}),
            &write(),
        )
        .await
        .expect("create");
    let rv = c["metadata"]["resourceVersion"]
        .as_str()
        .map(str::to_string);
    let mut w = cms
        .watch(
            Some("default"),
            None,
            &ListOptions {
                label_selector: Some("hot=yes".into()),
                resource_version: rv,
                ..Default::default()
            },
        )
        .await
        .expect("watch");
    let set = |hot: &'static str| {
        let cms = cms.clone();
        async move {
            let mut cm = cms
                .get(Some("default"), "x", &ListOptions::default())
                .await
                .expect("get");
            cm["metadata"]["labels"]["hot"] = json!(hot);
            cms.update(Some("default"), "x", cm, Subresource::Main, &write())
                .await
                .expect("update")
                .0
        }
    };
    let hot = set("yes").await;
    set("no").await;
    let e = next(&mut w).await;
    assert_eq!(e.kind, WatchEventType::Added, "starts matching");
    assert_eq!(
        e.object["metadata"]["resourceVersion"],
        hot["metadata"]["resourceVersion"]
    );
    let e = next(&mut w).await;
    assert_eq!(e.kind, WatchEventType::Deleted, "stops matching");
    assert_eq!(
        e.object["metadata"]["labels"]["hot"], "yes",
        "with its last matching state"
    );
    assert_eq!(e.to_json()["type"], "DELETED");

    // sendInitialEvents: the current state, then a bookmark marking its end.
    let mut w = cms
        .watch(
            Some("default"),
            None,
            &ListOptions {
                send_initial_events: Some(true),
                allow_watch_bookmarks: true,
                resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
                ..Default::default()
            },
        )
        .await
        .expect("watch");
    let first = tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .expect("in time")
        .expect("open");
    assert_eq!(
        (first.kind, first.object["metadata"]["name"].as_str()),
        (WatchEventType::Added, Some("x"))
    );
    let end = tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .expect("in time")
        .expect("open");
    assert_eq!(end.kind, WatchEventType::Bookmark);
    assert_eq!(
        end.object["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    cms.delete(Some("default"), "x", Default::default())
        .await
        .expect("delete");
    let gone = next(&mut w).await;
    assert_eq!(
        (gone.kind, gone.object["metadata"]["name"].as_str()),
        (WatchEventType::Deleted, Some("x"))
    );
}

/// The next event of an encoded watch that is not a bookmark, decoded.
async fn next_decoded(w: &mut EncodedEvents, decoder: &Decoder) -> (WatchEventType, String, Value) {
    loop {
        let e = tokio::time::timeout(Duration::from_secs(10), w.next())
            .await
            .expect("event in time")
            .expect("stream open");
        let (kind, object) = match e {
            EncodedEvent::Added(o) => (WatchEventType::Added, o),
            EncodedEvent::Modified(o) => (WatchEventType::Modified, o),
            EncodedEvent::Deleted(o) => (WatchEventType::Deleted, o),
            EncodedEvent::Bookmark { .. } => continue,
            EncodedEvent::Error(e) => panic!("watch failed: {e}"),
        };
        let decoded = decoder.decode(&object).expect("decodes");
        return (kind, object.key, decoded);
    }
}

/// Lists `store` both ways and checks they agree; returns the list's resourceVersion.
async fn lists_agree(store: &Store, opts: &ListOptions, keys: &[&str]) -> String {
    let served = store.list(None, opts).await.expect("list");
    let encoded = store.list_encoded(None, opts).await.expect("list encoded");
    let rv = served["metadata"]["resourceVersion"].as_str().expect("rv");
    assert_eq!(encoded.revision.to_string(), rv);
    let listed: Vec<&str> = encoded.items.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(listed, keys);
    let decoder = store.decoder();
    let decoded: Vec<Value> = encoded
        .items
        .iter()
        .map(|e| decoder.decode(e).expect("decodes"))
        .collect();
    assert_eq!(json!(decoded), served["items"]);
    rv.to_string()
}

/// What in-process informers read (stored bytes and a decoder) decodes to exactly what list
/// and watch serve, selectors and conversion to the served version included.
async fn encoded_reads_decode_as_served(h: &Harness) {
    let cms = h.store("", "configmaps");
    let mut last = Value::Null;
    for (name, hot) in [("a", "yes"), ("b", "no")] {
        last = cms
            .create(
                Some("default"),
                json!({"metadata": {"name": name, "labels": {"hot": hot}}, "data": {"v": "1"}}),
                &write(),
            )
            .await
            .expect("create");
    }
    // Served by the watch cache once it has seen the creations.
    let hot = ListOptions {
        label_selector: Some("hot=yes".into()),
        resource_version: last["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_string),
        ..Default::default()
    };
    let rv = lists_agree(&cms, &hot, &["default/a"]).await;

    let from = ListOptions {
        resource_version: Some(rv),
        allow_watch_bookmarks: true,
        ..hot
    };
    let mut served = cms.watch(None, None, &from).await.expect("watch");
    let mut encoded = cms.watch_encoded(None, &from).await.expect("watch encoded");
    let mut b = cms
        .get(Some("default"), "b", &ListOptions::default())
        .await
        .expect("get");
    b["metadata"]["labels"]["hot"] = json!("yes");
    cms.update(Some("default"), "b", b, Subresource::Main, &write())
        .await
        .expect("update");
    cms.delete(Some("default"), "a", Default::default())
        .await
        .expect("delete");
    let decoder = cms.decoder();
    for (kind, key) in [
        (WatchEventType::Added, "default/b"),
        (WatchEventType::Deleted, "default/a"),
    ] {
        let want = next(&mut served).await;
        let got = next_decoded(&mut encoded, &decoder).await;
        assert_eq!((got.0, got.1.as_str()), (kind, key));
        assert_eq!((want.kind, &want.object), (kind, &got.2));
    }

    // events.k8s.io/v1 Events are stored in the core shape and served in their own.
    let events = h.store("events.k8s.io", "events");
    let event = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "e", "namespace": "default"},
        "regarding": {"kind": "Pod", "name": "web", "namespace": "default"},
        "reason": "Scheduled", "note": "assigned web", "type": "Normal",
        "eventTime": "2024-01-01T00:00:00.000000Z", "action": "Binding",
        "reportingController": "default-scheduler", "reportingInstance": "scheduler-1",
    });
    let created = events
        .create(Some("default"), event, &write())
        .await
        .expect("create event");
    assert_eq!(created["note"], "assigned web");
    lists_agree(&events, &ListOptions::default(), &["default/e"]).await;
    let all = ListOptions {
        resource_version: Some("0".into()),
        ..Default::default()
    };
    let mut encoded = events.watch_encoded(None, &all).await.expect("watch");
    let got = next_decoded(&mut encoded, &events.decoder()).await;
    assert_eq!(got.2, created);
}
