//! The converter against an in-process webhook: what is sent, what comes back, and how a bad
//! answer or a failed call reads.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{ConversionWebhook, Failure, Observation, WebhookConverter};
use crate::definition::Definition;
use registry::strategy::Converter;

/// Converts v1 `spec.host` + `spec.port` to v2 `spec.address`, after `tamper` had its way
/// with each converted object; keeps every review it got.
struct Hook {
    reviews: Mutex<Vec<Value>>,
    tamper: fn(&mut Value),
    down: bool,
    observed: Mutex<Vec<(String, String, Option<Failure>)>>,
}

#[async_trait]
impl ConversionWebhook for Hook {
    async fn post(&self, _config: &Value, body: Vec<u8>) -> Result<Vec<u8>, String> {
        if self.down {
            return Err("Post \"https://127.0.0.1:1/convert?timeout=30s\": dial tcp 127.0.0.1:1: connect: connection refused".into());
        }
        let review: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
        self.reviews
            .lock()
            .map_err(|e| e.to_string())?
            .push(review.clone());
        let request = &review["request"];
        let objects: Vec<Value> = request["objects"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| {
                let mut o = o.clone();
                let spec = &o["spec"];
                o["spec"] = json!({"address": format!("{}:{}", spec["host"].as_str().unwrap_or_default(), spec["port"])});
                o["apiVersion"] = request["desiredAPIVersion"].clone();
                (self.tamper)(&mut o);
                o
            })
            .collect();
        let answer = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": request["uid"], "result": {"status": "Success"}, "convertedObjects": objects}});
        Ok(answer.to_string().into_bytes())
    }

    fn observe(&self, call: &Observation<'_>) {
        if let Ok(mut observed) = self.observed.lock() {
            observed.push((call.from.into(), call.to.into(), call.failure));
        }
    }
}

fn converter(tamper: fn(&mut Value), down: bool) -> (WebhookConverter, Arc<Hook>) {
    let crd = Definition::parse(&json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true}, {"name": "v2", "served": true}],
            "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                "clientConfig": {"url": "https://127.0.0.1:1/convert"}}}}
    }));
    let hook = Arc::new(Hook {
        reviews: Mutex::default(),
        tamper,
        down,
        observed: Mutex::default(),
    });
    let converter = WebhookConverter::of(&crd, hook.clone()).expect("a webhook definition");
    (converter, hook)
}

fn widget(name: &str, version: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget",
        "metadata": {"name": name, "namespace": "d", "uid": format!("uid-{name}")}, "spec": spec})
}

#[tokio::test]
async fn a_list_sends_only_what_is_in_another_version_in_one_review() {
    let (converter, hook) = converter(|_| {}, false);
    assert_eq!(converter.storage_api_version(), "example.com/v1");
    let objects = vec![
        widget("a", "v2", json!({"address": "x:1"})),
        widget("b", "v1", json!({"host": "h", "port": 80})),
        widget("c", "v1", json!({"host": "i", "port": 81})),
    ];
    let out = converter
        .convert(objects, "example.com/v2", true)
        .await
        .expect("converted");
    let addresses: Vec<&Value> = out.iter().map(|o| &o["spec"]["address"]).collect();
    assert_eq!(addresses, [&json!("x:1"), &json!("h:80"), &json!("i:81")]);
    let reviews = hook.reviews.lock().expect("reviews").clone();
    assert_eq!(reviews.len(), 1);
    assert_eq!(
        reviews[0]["request"]["objects"].as_array().map(Vec::len),
        Some(2)
    );
    // Nothing to convert: nothing sent.
    converter
        .convert(out, "example.com/v2", true)
        .await
        .expect("as they are");
    assert_eq!(hook.reviews.lock().expect("reviews").len(), 1);
}

#[tokio::test]
async fn bad_answers_and_failed_calls_read_as_upstreams() {
    let one = || vec![widget("a", "v1", json!({"host": "h", "port": 80}))];
    let (renaming, hook) = converter(|o| o["metadata"]["name"] = json!("x"), false);
    let err = renaming
        .convert(one(), "example.com/v2", false)
        .await
        .expect_err("refused");
    assert_eq!(err.status().code, 500);
    assert_eq!(
        err.to_string(),
        "conversion webhook for example.com/v1, Kind=Widget returned invalid object: must have the same name: a != x"
    );
    assert_eq!(
        hook.observed.lock().expect("observed").clone(),
        [(
            "v1".into(),
            "v2".into(),
            Some(Failure::InvalidConvertedObject)
        )]
    );
    let (regrouping, _) = converter(|o| o["apiVersion"] = json!("example.com/v3"), false);
    let err = regrouping
        .convert(one(), "example.com/v2", true)
        .await
        .expect_err("refused");
    assert_eq!(
        err.to_string(),
        "conversion webhook for example.com/v1, Kind=WidgetList returned invalid converted object at index 0: invalid groupVersion (expected example.com/v2, received example.com/v3)"
    );
    let (relabelling, _) = converter(|o| o["metadata"]["generation"] = json!(5), false);
    let out = relabelling
        .convert(one(), "example.com/v2", false)
        .await
        .expect("metadata restored");
    assert_eq!(out[0]["metadata"].get("generation"), None);
    let (down, hook) = converter(|_| {}, true);
    let err = down
        .convert(one(), "example.com/v2", false)
        .await
        .expect_err("unreachable");
    assert_eq!(
        err.to_string(),
        "conversion webhook for example.com/v1, Kind=Widget failed: Post \"https://127.0.0.1:1/convert?timeout=30s\": dial tcp 127.0.0.1:1: connect: connection refused"
    );
    assert_eq!(
        hook.observed.lock().expect("observed").clone(),
        [("v1".into(), "v2".into(), Some(Failure::Call))]
    );
}
