//! The event recorder over a real registry: events land as core/v1 Events about their object,
//! and a repeat of the same event bumps the count of the one already written.

mod support;

use std::time::Duration;

use client::events::{EventRecorder, EventType};
use serde_json::{json, Value};
use support::*;

async fn events_in(h: &Harness, ns: &str) -> Vec<Value> {
    let list = h
        .store("", "events")
        .list(Some(ns), &registry::options::ListOptions::default())
        .await
        .expect("list events");
    list["items"].as_array().cloned().unwrap_or_default()
}

async fn repeats_are_aggregated(h: &Harness) {
    h.namespace("app").await;
    let owner = create_configmap(&h.configmaps(), "app", "web", "1").await;
    let recorder = EventRecorder::new(h.registry.clone(), "test-controller");
    recorder.event(&owner, EventType::Normal, "Scaled", "Scaled to 3");
    recorder.event(&owner, EventType::Normal, "Scaled", "Scaled to 3");
    recorder.event(&owner, EventType::Warning, "Failed", "Failed once");
    recorder.event(&owner, EventType::Normal, "Scaled", "Scaled to 3");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let settled = loop {
        let events = events_in(h, "app").await;
        let counts: Vec<(String, i64)> = events
            .iter()
            .map(|e| {
                (
                    e["reason"].as_str().unwrap_or_default().to_string(),
                    e["count"].as_i64().unwrap_or_default(),
                )
            })
            .collect();
        let mut sorted = counts.clone();
        sorted.sort();
        if sorted == [("Failed".to_string(), 1), ("Scaled".to_string(), 3)] {
            break events;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "events not aggregated: {counts:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let scaled = settled
        .iter()
        .find(|e| e["reason"] == "Scaled")
        .expect("scaled event");
    assert_eq!(
        scaled["involvedObject"],
        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "web", "namespace": "app",
               "uid": owner["metadata"]["uid"]})
    );
    assert_eq!(scaled["type"], "Normal");
    assert_eq!(scaled["source"]["component"], "test-controller");
    assert_eq!(scaled["message"], "Scaled to 3");
    assert!(scaled["metadata"]["name"]
        .as_str()
        .is_some_and(|n| n.starts_with("web.")));
    assert!(scaled["lastTimestamp"].as_str() >= scaled["firstTimestamp"].as_str());
}

test_support::both_backends!(
    crate::support::Harness, worker_threads = 2;
    repeats_are_aggregated,
);
