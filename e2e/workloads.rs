//! The workload kinds over HTTP against the real binary: bad input is a 422 metav1.Status
//! naming upstream's fields and messages.

mod support;

use serde_json::{json, Value};
use support::start;

fn post(s: &support::Server, path: &str, body: Value) -> Value {
    let r = s.request(
        "POST",
        path,
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let status = r.json();
    assert_eq!(
        (status["kind"].clone(), status["reason"].clone()),
        (json!("Status"), json!("Invalid"))
    );
    assert_eq!(status["code"], 422);
    status
}

#[test]
fn invalid_workloads_are_422_with_upstream_causes() {
    let s = start();
    let template = json!({"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "c", "image": "nginx"}]}});

    let status = post(
        &s,
        "/apis/apps/v1/namespaces/default/deployments",
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"replicas": -1, "selector": {"matchLabels": {"app": "other"}}, "template": template}}),
    );
    assert_eq!(
        status["message"],
        r#"Deployment.apps "web" is invalid: [spec.replicas: Invalid value: -1: must be greater than or equal to 0, spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: `selector` does not match template `labels`]"#
    );
    assert_eq!(status["details"]["kind"], "Deployment");
    assert_eq!(status["details"]["group"], "apps");
    let cause = &status["details"]["causes"][0];
    assert_eq!(cause["field"], "spec.replicas");
    assert_eq!(
        cause["message"],
        "Invalid value: -1: must be greater than or equal to 0"
    );

    let mut job_template = template.clone();
    job_template["spec"]["restartPolicy"] = json!("OnFailure");
    let status = post(
        &s,
        "/apis/batch/v1/namespaces/default/cronjobs",
        json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
               "spec": {"schedule": "0 25 * * *", "jobTemplate": {"spec": {"template": job_template}}}}),
    );
    assert_eq!(
        status["message"],
        r#"CronJob.batch "nightly" is invalid: spec.schedule: Invalid value: "0 25 * * *": end of range (25) above maximum (23): 25"#
    );
    assert_eq!(status["details"]["causes"][0]["field"], "spec.schedule");
}
