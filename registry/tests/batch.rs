//! Jobs and CronJobs through the Store: the selector generated from the UID, the Job spec
//! rules, what updates may change, and CronJob schedules and time zones.

mod support;

use registry::{RegistryError, Subresource};
use serde_json::json;
use support::workloads::{causes, create_err, cron_job, has, job, NS};
use support::{write, Harness};

test_support::embedded_only!(
    crate::support::Harness;
    job_selector_is_generated_from_the_uid,
    job_rules,
    cron_job_rules,
);

async fn job_selector_is_generated_from_the_uid(h: &Harness) {
    let j = h
        .store("batch", "jobs")
        .create(NS, job("gen"), &write())
        .await
        .expect("job");
    let uid = j["metadata"]["uid"].as_str().expect("uid");
    assert_eq!(
        j["spec"]["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    );
    assert_eq!(
        j["spec"]["template"]["metadata"]["labels"],
        json!({"app": "gen", "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "gen",
               "controller-uid": uid, "job-name": "gen"})
    );
    // A selector of the user's own needs manualSelector.
    let mut own = job("own");
    own["spec"]["selector"] = json!({"matchLabels": {"app": "own"}});
    let err = create_err(h, "batch", "jobs", own.clone()).await;
    has(&err, "spec.selector", r#"Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"own", "batch.kubernetes.io/controller-uid":"UID"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` not auto-generated"#.replace("UID", &uid_of(&err)).as_str());
    own["spec"]["manualSelector"] = json!(true);
    let manual = h
        .store("batch", "jobs")
        .create(NS, own, &write())
        .await
        .expect("manual selector");
    assert_eq!(
        manual["spec"]["selector"],
        json!({"matchLabels": {"app": "own"}})
    );
    assert!(manual["spec"]["template"]["metadata"]["labels"]
        .get("job-name")
        .is_none());
}

/// The UID the server drew for a refused Job, read back from its selector in the message.
fn uid_of(err: &RegistryError) -> String {
    let text = err.to_string();
    let start = text
        .find(r#""batch.kubernetes.io/controller-uid":""#)
        .map(|i| i + 38)
        .unwrap_or(0);
    text[start..].chars().take(36).collect()
}

async fn job_rules(h: &Harness) {
    let mut j = job("bad");
    j["spec"]["parallelism"] = json!(-1);
    j["spec"]["backoffLimit"] = json!(-1);
    j["spec"]["completionMode"] = json!("Sometimes");

    j["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
    let err = create_err(h, "batch", "jobs", j).await;
    has(
        &err,
        "spec.parallelism",
        "Invalid value: -1: must be greater than or equal to 0",
    );
    has(
        &err,
        "spec.backoffLimit",
        "Invalid value: -1: must be greater than or equal to 0",
    );
    has(
        &err,
        "spec.completionMode",
        r#"Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed""#,
    );
    has(
        &err,
        "spec.template.spec.restartPolicy",
        r#"Required value: valid values: "OnFailure", "Never""#,
    );

    let mut unset = job("unset");
    unset["spec"]["template"]["spec"]
        .as_object_mut()
        .map(|s| s.remove("restartPolicy"));
    let err = create_err(h, "batch", "jobs", unset).await;
    has(
        &err,
        "spec.template.spec.restartPolicy",
        r#"Required value: valid values: "OnFailure", "Never""#,
    );

    let mut indexed = job("idx");
    indexed["spec"]["completionMode"] = json!("Indexed");
    indexed["spec"]["parallelism"] = json!(2);
    let err = create_err(h, "batch", "jobs", indexed).await;
    has(
        &err,
        "spec.completions",
        "Required value: when completion mode is Indexed",
    );

    let jobs = h.store("batch", "jobs");
    let mut running = jobs.create(NS, job("run"), &write()).await.expect("create");
    running["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    let err = jobs
        .update(NS, "run", running, Subresource::Main, &write())
        .await
        .expect_err("template");
    assert!(
        causes(&err)
            .iter()
            .any(|(f, m)| f == "spec.template" && m.ends_with("field is immutable")),
        "{err}"
    );

    // A suspended Job that never started may move to other nodes before it runs.
    let mut suspended = job("susp");
    suspended["spec"]["suspend"] = json!(true);
    let mut s = jobs
        .create(NS, suspended, &write())
        .await
        .expect("suspended");
    s["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "b"});
    s["spec"]["suspend"] = json!(false);
    let s = jobs
        .update(NS, "susp", s, Subresource::Main, &write())
        .await
        .expect("scheduling directives")
        .0;
    assert_eq!(
        s["spec"]["template"]["spec"]["nodeSelector"],
        json!({"zone": "b"})
    );
    let mut s = s;
    s["spec"]["completions"] = json!(4);
    let err = jobs
        .update(NS, "susp", s, Subresource::Main, &write())
        .await
        .expect_err("completions");
    has(
        &err,
        "spec.completions",
        "Invalid value: 4: field is immutable",
    );
}

async fn cron_job_rules(h: &Harness) {
    let err = create_err(h, "batch", "cronjobs", cron_job("c1", "every minute")).await;
    has(
        &err,
        "spec.schedule",
        r#"Invalid value: "every minute": expected exactly 5 fields, found 2: [every minute]"#,
    );
    let err = create_err(h, "batch", "cronjobs", cron_job("c2", "61 * * * *")).await;
    has(
        &err,
        "spec.schedule",
        r#"Invalid value: "61 * * * *": end of range (61) above maximum (59): 61"#,
    );
    let err = create_err(h, "batch", "cronjobs", cron_job("c3", "TZ=UTC 0 * * * *")).await;
    has(
        &err,
        "spec.schedule",
        r#"Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"#,
    );
    let err = create_err(h, "batch", "cronjobs", cron_job("c4", "")).await;
    has(&err, "spec.schedule", "Required value");

    let mut zone = cron_job("c5", "@daily");
    zone["spec"]["timeZone"] = json!("Mars/Olympus_Mons");
    zone["spec"]["startingDeadlineSeconds"] = json!(-5);
    zone["spec"]["concurrencyPolicy"] = json!("Sometimes");
    zone["spec"]["jobTemplate"]["spec"]["selector"] = json!({"matchLabels": {"a": "b"}});
    let err = create_err(h, "batch", "cronjobs", zone).await;
    has(
        &err,
        "spec.timeZone",
        r#"Invalid value: "Mars/Olympus_Mons": unknown time zone Mars/Olympus_Mons"#,
    );
    has(
        &err,
        "spec.startingDeadlineSeconds",
        "Invalid value: -5: must be greater than or equal to 0",
    );
    has(
        &err,
        "spec.concurrencyPolicy",
        r#"Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace""#,
    );
    has(
        &err,
        "spec.jobTemplate.spec.selector",
        r#"Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"a":"b"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` will be auto-generated"#,
    );

    let mut always = cron_job("c6", "@hourly");
    always["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
    let err = create_err(h, "batch", "cronjobs", always).await;
    has(
        &err,
        "spec.jobTemplate.spec.template.spec.restartPolicy",
        r#"Required value: valid values: "OnFailure", "Never""#,
    );

    let mut good = cron_job("c7", "@weekly");
    good["spec"]["timeZone"] = json!("Europe/Berlin");
    h.store("batch", "cronjobs")
        .create(NS, good, &write())
        .await
        .expect("valid cronjob");
    let long = "a".repeat(53);
    let err = create_err(h, "batch", "cronjobs", cron_job(&long, "@daily")).await;
    has(
        &err,
        "metadata.name",
        &format!(r#"Invalid value: "{long}": must be no more than 52 characters"#),
    );
}
