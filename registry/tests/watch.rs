//! Watch through the registry: selectors with ADDED/DELETED transitions, initial events,
//! bookmarks.

mod support;

use std::time::Duration;

use futures::StreamExt;
use registry::options::{ListOptions, ResourceVersionMatch};
use registry::{Subresource, WatchEvent, WatchEventType};
use serde_json::json;
use support::{write, Harness};

test_support::both_backends!(crate::support::Harness; selector_transitions_and_initial_events);

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
