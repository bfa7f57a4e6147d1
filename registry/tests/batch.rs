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
    job_policy_rules,
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

async fn job_policy_rules(h: &Harness) {
    let mut j = job("policies");
    j["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
    j["spec"]["podReplacementPolicy"] = json!("TerminatingOrFailed");
    j["spec"]["podFailurePolicy"] = json!({"rules": [
        {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3, 0, 3]}},
        {"action": "Explode", "onPodConditions": [{"type": "DisruptionTarget"}]},
        {"action": "Ignore"},
        {"onExitCodes": {"containerName": "nope", "operator": "In", "values": [1]}},
    ]});
    j["spec"]["successPolicy"] = json!({"rules": [{"succeededCount": 1}]});
    let err = create_err(h, "batch", "jobs", j).await;
    let rules = "spec.podFailurePolicy.rules";
    has(
        &err,
        "spec.template.spec.restartPolicy",
        r#"Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified"#,
    );
    has(
        &err,
        "spec.podReplacementPolicy",
        r#"Unsupported value: "TerminatingOrFailed": supported values: "Failed""#,
    );
    has(
        &err,
        &format!("{rules}[0].action"),
        r#"Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set"#,
    );
    has(
        &err,
        &format!("{rules}[0].onExitCodes.values[1]"),
        "Invalid value: 0: must not be 0 for the In operator",
    );
    has(
        &err,
        &format!("{rules}[0].onExitCodes.values[2]"),
        "Duplicate value: 3",
    );
    has(
        &err,
        &format!("{rules}[0].onExitCodes.values"),
        "Invalid value: []int32{3, 0, 3}: must be ordered",
    );
    has(
        &err,
        &format!("{rules}[1].action"),
        r#"Unsupported value: "Explode": supported values: "Count", "FailIndex", "FailJob", "Ignore""#,
    );
    has(
        &err,
        &format!("{rules}[1].onPodConditions[0].status"),
        r#"Required value: valid values: ["False" "True" "Unknown"]"#,
    );
    has(
        &err,
        &format!("{rules}[2]"),
        "Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
    );
    has(
        &err,
        &format!("{rules}[3].action"),
        r#"Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]"#,
    );
    has(
        &err,
        &format!("{rules}[3].onExitCodes.containerName"),
        r#"Invalid value: "nope": must be one of the container or initContainer names in the pod template"#,
    );
    assert!(
        causes(&err)
            .iter()
            .any(|(f, m)| f == "spec.successPolicy"
                && m.ends_with("requires indexed completion mode")),
        "{err}"
    );

    let mut indexed = job("indexed-policies");
    indexed["spec"]["completionMode"] = json!("Indexed");
    indexed["spec"]["completions"] = json!(3);
    indexed["spec"]["successPolicy"] = json!({"rules": [
        {"succeededIndexes": "0-1,1", "succeededCount": 5},
        {},
    ]});
    let err = create_err(h, "batch", "jobs", indexed).await;
    let rules = "spec.successPolicy.rules";
    has(
        &err,
        &format!("{rules}[0].succeededIndexes"),
        r#"Invalid value: "0-1,1": error parsing succeededIndexes: non-increasing order, previous: 1, current: 1"#,
    );
    has(
        &err,
        &format!("{rules}[0].succeededCount"),
        "Invalid value: 5: must be less than or equal to 3 (the number of specified completions)",
    );
    has(
        &err,
        &format!("{rules}[1]"),
        "Required value: at least one of succeededCount or succeededIndexes must be specified",
    );

    let mut good = job("good-policies");
    good["spec"]["completionMode"] = json!("Indexed");
    good["spec"]["completions"] = json!(3);
    good["spec"]["backoffLimitPerIndex"] = json!(1);
    good["spec"]["podFailurePolicy"] = json!({"rules": [
        {"action": "FailIndex", "onExitCodes": {"operator": "NotIn", "values": [0, 1]}},
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
    ]});
    good["spec"]["successPolicy"] =
        json!({"rules": [{"succeededIndexes": "0,2", "succeededCount": 1}]});
    let created = h
        .store("batch", "jobs")
        .create(NS, good, &write())
        .await
        .expect("valid policies");
    assert_eq!(created["spec"]["podReplacementPolicy"], "Failed");
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
