//! The workload kinds through the Store: upstream's v1 defaults, validation with upstream's
//! field paths and messages (422), and what main and status writes may change.

mod support;

use registry::Subresource;
use serde_json::json;
use support::workloads::{apps, causes, create_err, cron_job, has, job, template, NS};
use support::{write, Harness};

test_support::embedded_only!(
    crate::support::Harness;
    defaults_of_each_kind,
    selector_rules,
    numeric_and_rollout_rules,
    stateful_set_updates,
    status_and_generation,
);

async fn defaults_of_each_kind(h: &Harness) {
    let d = h
        .store("apps", "deployments")
        .create(NS, apps("Deployment", "d"), &write())
        .await
        .expect("deployment");
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(
        d["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(
        (
            d["spec"]["revisionHistoryLimit"].clone(),
            d["spec"]["progressDeadlineSeconds"].clone()
        ),
        (json!(10), json!(600))
    );
    assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
    let mut recreate = apps("Deployment", "r");
    recreate["spec"]["strategy"] = json!({"type": "Recreate"});
    let r = h
        .store("apps", "deployments")
        .create(NS, recreate, &write())
        .await
        .expect("recreate");
    assert_eq!(r["spec"]["strategy"], json!({"type": "Recreate"}));

    let rs = h
        .store("apps", "replicasets")
        .create(NS, apps("ReplicaSet", "rs"), &write())
        .await
        .expect("rs");
    assert_eq!(rs["spec"]["replicas"], 1);

    let rc =
        json!({"metadata": {"name": "rc"}, "spec": {"template": template(json!({"app": "rc"}))}});
    let rc = h
        .store("", "replicationcontrollers")
        .create(NS, rc, &write())
        .await
        .expect("rc");
    assert_eq!(rc["spec"]["selector"], json!({"app": "rc"}));
    assert_eq!(rc["metadata"]["labels"], json!({"app": "rc"}));
    assert_eq!(rc["spec"]["replicas"], 1);

    let sts = h
        .store("apps", "statefulsets")
        .create(NS, apps("StatefulSet", "s"), &write())
        .await
        .expect("sts");
    assert_eq!(sts["spec"]["podManagementPolicy"], "OrderedReady");
    assert_eq!(
        sts["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    );
    assert_eq!(
        sts["spec"]["persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
    );
    assert_eq!(
        (
            sts["spec"]["replicas"].clone(),
            sts["spec"]["revisionHistoryLimit"].clone()
        ),
        (json!(1), json!(10))
    );
    assert!(
        sts["spec"].get("serviceName").is_none(),
        "serviceName is optional"
    );

    let ds = h
        .store("apps", "daemonsets")
        .create(NS, apps("DaemonSet", "ds"), &write())
        .await
        .expect("ds");
    assert_eq!(
        ds["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    );
    assert_eq!(ds["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(
        ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "1"
    );

    let j = h
        .store("batch", "jobs")
        .create(NS, job("j"), &write())
        .await
        .expect("job");
    let spec = &j["spec"];
    assert_eq!(
        (
            spec["parallelism"].clone(),
            spec["completions"].clone(),
            spec["backoffLimit"].clone()
        ),
        (json!(1), json!(1), json!(6))
    );
    assert_eq!(
        (spec["completionMode"].clone(), spec["suspend"].clone()),
        (json!("NonIndexed"), json!(false))
    );
    assert_eq!(
        (
            spec["podReplacementPolicy"].clone(),
            spec["manualSelector"].clone()
        ),
        (json!("TerminatingOrFailed"), json!(false))
    );
    assert_eq!(
        j["metadata"]["labels"],
        json!({"app": "j"}),
        "labels come from the template"
    );
    // Parallelism alone leaves completions unset (a work queue); a per-index limit lifts the global one.
    let mut queue = job("q");
    queue["spec"]["parallelism"] = json!(3);
    let q = h
        .store("batch", "jobs")
        .create(NS, queue, &write())
        .await
        .expect("queue");
    assert!(q["spec"].get("completions").is_none(), "{q}");
    let mut per_index = job("pi");
    per_index["spec"]["completionMode"] = json!("Indexed");
    per_index["spec"]["completions"] = json!(2);
    per_index["spec"]["backoffLimitPerIndex"] = json!(1);

    let pi = h
        .store("batch", "jobs")
        .create(NS, per_index, &write())
        .await
        .expect("per index");
    assert_eq!(pi["spec"]["backoffLimit"], 2147483647);

    let cj = h
        .store("batch", "cronjobs")
        .create(NS, cron_job("cj", "*/5 * * * *"), &write())
        .await
        .expect("cronjob");
    let spec = &cj["spec"];
    assert_eq!(
        (spec["concurrencyPolicy"].clone(), spec["suspend"].clone()),
        (json!("Allow"), json!(false))
    );
    assert_eq!(
        (
            spec["successfulJobsHistoryLimit"].clone(),
            spec["failedJobsHistoryLimit"].clone()
        ),
        (json!(3), json!(1))
    );
    assert_eq!(
        spec["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"],
        "ClusterFirst"
    );
}

async fn selector_rules(h: &Harness) {
    let mut missing = apps("Deployment", "m");
    missing["spec"]
        .as_object_mut()
        .map(|s| s.remove("selector"));
    let err = create_err(h, "apps", "deployments", missing).await;
    has(&err, "spec.selector", "Required value");
    has(
        &err,
        "spec.template.metadata.labels",
        r#"Invalid value: map[string]string{"app":"m"}: `selector` does not match template `labels`"#,
    );

    let mut empty = apps("Deployment", "e");
    empty["spec"]["selector"] = json!({"matchLabels": {}});
    let err = create_err(h, "apps", "deployments", empty).await;
    has(&err, "spec.selector", "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment");

    let mut other = apps("ReplicaSet", "o");
    other["spec"]["selector"] = json!({"matchLabels": {"app": "else"}});
    let err = create_err(h, "apps", "replicasets", other).await;
    assert_eq!(
        err.to_string(),
        r#"ReplicaSet.apps "o" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{"app":"o"}: `selector` does not match template `labels`"#
    );

    let mut bad = apps("StatefulSet", "b");
    bad["spec"]["selector"] = json!({"matchExpressions": [{"key": "app", "operator": "Like"}]});
    let err = create_err(h, "apps", "statefulsets", bad).await;
    assert!(
        causes(&err).iter().all(|(f, _)| f == "spec.selector"),
        "{err}"
    );

    let mut ds = apps("DaemonSet", "ds-empty");
    ds["spec"]["selector"] = json!({});
    let err = create_err(h, "apps", "daemonsets", ds).await;
    has(&err, "spec.selector", "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for daemonset");

    let rc = json!({"metadata": {"name": "rc-none"}, "spec": {"template": template(json!({}))}});
    let err = create_err(h, "", "replicationcontrollers", rc).await;
    has(&err, "spec.selector", "Required value");

    let deploys = h.store("apps", "deployments");
    let mut d = deploys
        .create(NS, apps("Deployment", "imm"), &write())
        .await
        .expect("create");
    d["spec"]["selector"] = json!({"matchLabels": {"app": "imm", "x": "y"}});
    d["spec"]["template"]["metadata"]["labels"]["x"] = json!("y");
    let err = deploys
        .update(NS, "imm", d, Subresource::Main, &write())
        .await
        .expect_err("immutable");
    has(
        &err,
        "spec.selector",
        r#"Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"imm", "x":"y"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"#,
    );
}

async fn numeric_and_rollout_rules(h: &Harness) {
    let mut d = apps("Deployment", "n");
    d["spec"]["replicas"] = json!(-1);
    d["spec"]["minReadySeconds"] = json!(700);
    d["spec"]["revisionHistoryLimit"] = json!(-2);

    let err = create_err(h, "apps", "deployments", d).await;
    has(
        &err,
        "spec.replicas",
        "Invalid value: -1: must be greater than or equal to 0",
    );
    has(
        &err,
        "spec.revisionHistoryLimit",
        "Invalid value: -2: must be greater than or equal to 0",
    );
    has(
        &err,
        "spec.progressDeadlineSeconds",
        "Invalid value: 600: must be greater than minReadySeconds",
    );

    let mut zero = apps("Deployment", "z");
    zero["spec"]["strategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}});
    let err = create_err(h, "apps", "deployments", zero).await;
    has(
        &err,
        "spec.strategy.rollingUpdate.maxUnavailable",
        r#"Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"0%"}: may not be 0 when `maxSurge` is 0"#,
    );

    let mut pct = apps("Deployment", "p");
    pct["spec"]["strategy"] =
        json!({"rollingUpdate": {"maxSurge": "ten", "maxUnavailable": "150%"}});
    let err = create_err(h, "apps", "deployments", pct).await;
    has(
        &err,
        "spec.strategy.rollingUpdate.maxSurge",
        r#"Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"ten"}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"#,
    );
    has(
        &err,
        "spec.strategy.rollingUpdate.maxUnavailable",
        r#"Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: must not be greater than 100%"#,
    );

    let mut recreate = apps("Deployment", "rc");
    recreate["spec"]["strategy"] = json!({"type": "Recreate", "rollingUpdate": {"maxSurge": 1}});
    let err = create_err(h, "apps", "deployments", recreate).await;
    has(
        &err,
        "spec.strategy.rollingUpdate",
        "Forbidden: may not be specified when strategy `type` is 'Recreate'",
    );

    let mut ds = apps("DaemonSet", "ds");
    ds["spec"]["updateStrategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}});
    let err = create_err(h, "apps", "daemonsets", ds).await;
    has(
        &err,
        "spec.updateStrategy.rollingUpdate.maxSurge",
        r#"Invalid value: intstr.IntOrString{Type:0, IntVal:1, StrVal:""}: may not be set when maxUnavailable is non-zero"#,
    );

    let mut always_deadline = apps("ReplicaSet", "ad");
    always_deadline["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(5);
    always_deadline["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
    let err = create_err(h, "apps", "replicasets", always_deadline).await;
    has(
        &err,
        "spec.template.spec.restartPolicy",
        r#"Unsupported value: "Never": supported values: "Always""#,
    );
    has(
        &err,
        "spec.template.spec.activeDeadlineSeconds",
        "Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported",
    );
}

async fn stateful_set_updates(h: &Harness) {
    let sets = h.store("apps", "statefulsets");
    let mut s = sets
        .create(NS, apps("StatefulSet", "web"), &write())
        .await
        .expect("create");
    s["spec"]["replicas"] = json!(3);
    s["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.27");
    let mut s = sets
        .update(NS, "web", s, Subresource::Main, &write())
        .await
        .expect("replicas and template")
        .0;
    s["spec"]["serviceName"] = json!("other");
    let err = sets
        .update(NS, "web", s, Subresource::Main, &write())
        .await
        .expect_err("frozen");
    has(&err, "spec", "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden");
    let mut bad = apps("StatefulSet", "bad");
    bad["spec"]["podManagementPolicy"] = json!("Random");
    bad["spec"]["updateStrategy"] = json!({"type": "OnDelete", "rollingUpdate": {"partition": 1}});
    let err = create_err(h, "apps", "statefulsets", bad).await;
    has(
        &err,
        "spec.podManagementPolicy",
        r#"Invalid value: "Random": must be 'OrderedReady' or 'Parallel'"#,
    );
    assert!(
        causes(&err)
            .iter()
            .any(|(f, m)| f == "spec.updateStrategy.rollingUpdate"
                && m.ends_with("only allowed for updateStrategy 'RollingUpdate'")),
        "{err}"
    );
}

async fn status_and_generation(h: &Harness) {
    let deploys = h.store("apps", "deployments");
    let created = deploys
        .create(NS, apps("Deployment", "st"), &write())
        .await
        .expect("create");
    // The main resource ignores status; the status subresource ignores spec.
    let mut main = created.clone();
    main["status"] = json!({"replicas": 5});
    let after_main = deploys
        .update(NS, "st", main, Subresource::Main, &write())
        .await
        .expect("main")
        .0;
    assert!(
        after_main
            .get("status")
            .is_none_or(|s| s.get("replicas").is_none()),
        "{after_main}"
    );
    assert_eq!(after_main["metadata"]["generation"], 1, "no spec change");
    let mut status = after_main.clone();
    status["status"] =
        json!({"replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "observedGeneration": 1});
    status["spec"]["replicas"] = json!(9);
    let after_status = deploys
        .update(NS, "st", status, Subresource::Status, &write())
        .await
        .expect("status")
        .0;
    assert_eq!(after_status["status"]["replicas"], 2);
    assert_eq!(after_status["spec"]["replicas"], 1);
    assert_eq!(after_status["metadata"]["generation"], 1);

    let mut negative = after_status.clone();
    negative["status"] = json!({"replicas": -1, "readyReplicas": 3});
    let err = deploys
        .update(NS, "st", negative, Subresource::Status, &write())
        .await
        .expect_err("negative");
    has(
        &err,
        "status.replicas",
        "Invalid value: -1: must be greater than or equal to 0",
    );
    has(
        &err,
        "status.readyReplicas",
        "Invalid value: 3: cannot be greater than status.replicas",
    );

    // Deployments count annotation changes as generations: the controller copies them on.
    let mut annotated = after_status.clone();
    annotated["metadata"]["annotations"] = json!({"note": "x"});
    let annotated = deploys
        .update(NS, "st", annotated, Subresource::Main, &write())
        .await
        .expect("annotate")
        .0;
    assert_eq!(annotated["metadata"]["generation"], 2);
    let mut labelled = h
        .store("apps", "replicasets")
        .create(NS, apps("ReplicaSet", "rs-st"), &write())
        .await
        .expect("rs");
    labelled["metadata"]["annotations"] = json!({"note": "x"});
    let labelled = h
        .store("apps", "replicasets")
        .update(NS, "rs-st", labelled, Subresource::Main, &write())
        .await
        .expect("rs annotate")
        .0;
    assert_eq!(labelled["metadata"]["generation"], 1);

    let sets = h.store("apps", "daemonsets");
    let mut ds = sets
        .create(NS, apps("DaemonSet", "gen"), &write())
        .await
        .expect("ds");
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    let ds = sets
        .update(NS, "gen", ds, Subresource::Main, &write())
        .await
        .expect("template")
        .0;
    assert_eq!(
        ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "2"
    );
    assert_eq!(ds["metadata"]["generation"], 2);
    let mut collide = ds.clone();
    collide["status"] = json!({"collisionCount": 2});
    let ds = sets
        .update(NS, "gen", collide, Subresource::Status, &write())
        .await
        .expect("collision")
        .0;
    let mut lower = ds.clone();
    lower["status"] = json!({"collisionCount": 1});
    let err = sets
        .update(NS, "gen", lower, Subresource::Status, &write())
        .await
        .expect_err("decrement");
    has(
        &err,
        "status.collisionCount",
        "Invalid value: 1: cannot be decremented",
    );
}
