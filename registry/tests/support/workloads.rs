//! Objects of the workload kinds and assertions on the 422s they draw.

use registry::RegistryError;
use serde_json::{json, Value};

use super::{write, Harness};

pub const NS: Option<&str> = Some("default");

pub fn template(labels: Value) -> Value {
    json!({"metadata": {"labels": labels},
           "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}})
}

pub fn apps(kind: &str, name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
           "spec": {"selector": {"matchLabels": {"app": name}}, "template": template(json!({"app": name}))}})
}

pub fn job(name: &str) -> Value {
    let mut t = template(json!({"app": name}));
    t["spec"]["restartPolicy"] = json!("Never");
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {"template": t}})
}

pub fn cron_job(name: &str, schedule: &str) -> Value {
    let mut t = template(json!({}));
    t["spec"]["restartPolicy"] = json!("OnFailure");
    json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
           "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": t}}}})
}

/// (field, message) of each cause of a 422.
pub fn causes(err: &RegistryError) -> Vec<(String, String)> {
    assert_eq!((err.code(), err.reason()), (422, "Invalid"), "{err}");
    let status = serde_json::to_value(err.status()).expect("status");
    status["details"]["causes"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    let text = |k: &str| c[k].as_str().unwrap_or_default().to_string();
                    (text("field"), text("message"))
                })
                .collect()
        })
        .unwrap_or_default()
}

pub fn has(err: &RegistryError, field: &str, message: &str) {
    let found = causes(err);
    assert!(
        found.iter().any(|(f, m)| f == field && m == message),
        "no `{field}: {message}` in {found:?}"
    );
}

pub async fn create_err(h: &Harness, group: &str, plural: &str, obj: Value) -> RegistryError {
    h.store(group, plural)
        .create(NS, obj, &write())
        .await
        .expect_err("invalid")
}
