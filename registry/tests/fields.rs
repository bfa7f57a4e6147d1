//! Server-side field validation: unknown fields under each fieldValidation directive, and
//! wrong types, on create, update, patch and the status and scale subresources.

mod support;

use registry::options::{DryRun, FieldValidation, WriteOptions};
use registry::patch::PatchType;
use registry::store::subresources::ScaleChange;
use registry::{warning, Subresource};
use serde_json::{json, Value};
use support::{list, Harness};

test_support::embedded_only!(
    crate::support::Harness;
    create_under_each_directive,
    update_and_status_drop_or_refuse,
    patches_are_judged_on_their_result,
    scale_bodies_are_scales,
    wrong_types_are_invalid_whatever_the_directive,
    duplicates_from_the_decoder_come_first,
);

fn opts(validation: FieldValidation) -> WriteOptions {
    WriteOptions {
        field_validation: validation,
        ..Default::default()
    }
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                          "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
        }
    })
}

fn with_unknown(name: &str) -> Value {
    let mut obj = deployment(name);
    obj["spec"]["bogus"] = json!(1);
    obj["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = json!("Never");
    obj
}

const UNKNOWN: [&str; 2] = [
    r#"unknown field "spec.bogus""#,
    r#"unknown field "spec.template.spec.containers[0].imagePullPolicyy""#,
];

fn assert_clean(obj: &Value) {
    assert!(obj["spec"].get("bogus").is_none(), "{obj}");
    let container = &obj["spec"]["template"]["spec"]["containers"][0];
    assert!(container.get("imagePullPolicyy").is_none(), "{obj}");
}

async fn create_under_each_directive(h: &Harness) {
    let store = h.store("apps", "deployments");
    let ns = Some("default");

    let (err, warnings) =
        warning::collect(store.create(ns, with_unknown("strict"), &opts(FieldValidation::Strict)))
            .await;
    let err = err.expect_err("strict refuses");
    assert_eq!((err.code(), err.reason()), (400, "BadRequest"));
    assert_eq!(
        err.to_string(),
        format!(
            r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: {}"#,
            UNKNOWN.join(", ")
        )
    );
    assert!(warnings.is_empty());
    assert!(
        store.get(ns, "strict", &list()).await.is_err(),
        "not stored"
    );

    let (created, warnings) =
        warning::collect(store.create(ns, with_unknown("warn"), &opts(FieldValidation::Warn)))
            .await;
    assert_clean(&created.expect("warn stores"));
    assert_eq!(warnings, UNKNOWN);
    assert_clean(&store.get(ns, "warn", &list()).await.expect("stored"));

    let (created, warnings) =
        warning::collect(store.create(ns, with_unknown("ignore"), &opts(FieldValidation::Ignore)))
            .await;
    assert_clean(&created.expect("ignore stores"));
    assert!(warnings.is_empty());
    assert_clean(&store.get(ns, "ignore", &list()).await.expect("stored"));

    // Dry run checks as much as a real write.
    let dry = WriteOptions {
        dry_run: DryRun::All,
        ..opts(FieldValidation::Strict)
    };
    let err = store
        .create(ns, with_unknown("dry"), &dry)
        .await
        .expect_err("dry run refuses too");
    assert_eq!(err.code(), 400);
}

async fn update_and_status_drop_or_refuse(h: &Harness) {
    let store = h.store("apps", "deployments");
    let ns = Some("default");
    store
        .create(ns, deployment("u"), &opts(FieldValidation::Strict))
        .await
        .expect("create");

    let err = store
        .update(
            ns,
            "u",
            with_unknown("u"),
            Subresource::Main,
            &opts(FieldValidation::Strict),
        )
        .await
        .expect_err("strict");
    assert_eq!(err.code(), 400);
    assert!(err.to_string().ends_with(&UNKNOWN.join(", ")), "{err}");

    let mut body = with_unknown("u");
    body["spec"]["replicas"] = json!(2);
    let (updated, warnings) = warning::collect(store.update(
        ns,
        "u",
        body,
        Subresource::Main,
        &opts(FieldValidation::Warn),
    ))
    .await;
    let (updated, _) = updated.expect("warn updates");
    assert_eq!(updated["spec"]["replicas"], 2);
    assert_clean(&updated);
    assert_eq!(warnings, UNKNOWN);

    let mut status = store.get(ns, "u", &list()).await.expect("get");
    status["status"] = json!({"replicas": 1, "bogus": true});
    let err = store
        .update(
            ns,
            "u",
            status.clone(),
            Subresource::Status,
            &opts(FieldValidation::Strict),
        )
        .await
        .expect_err("strict status");
    assert!(
        err.to_string()
            .ends_with(r#"strict decoding error: unknown field "status.bogus""#),
        "{err}"
    );
    let (updated, _) = store
        .update(
            ns,
            "u",
            status,
            Subresource::Status,
            &opts(FieldValidation::Ignore),
        )
        .await
        .expect("ignore status");
    assert_eq!(updated["status"], json!({"replicas": 1}));
}

async fn patches_are_judged_on_their_result(h: &Harness) {
    let store = h.store("apps", "deployments");
    let ns = Some("default");
    store
        .create(ns, deployment("p"), &opts(FieldValidation::Strict))
        .await
        .expect("create");
    let patch = |kind, body: &'static str, validation| {
        let store = store.clone();
        async move {
            warning::collect(store.patch(
                ns,
                "p",
                kind,
                body.as_bytes(),
                Subresource::Main,
                &opts(validation),
            ))
            .await
        }
    };

    let (err, _) = patch(
        PatchType::Merge,
        r#"{"spec":{"bogus":1,"replicas":5}}"#,
        FieldValidation::Strict,
    )
    .await;
    let err = err.expect_err("strict");
    assert_eq!((err.code(), err.reason()), (422, "Invalid"));
    let status = err.status();
    let cause = &status.details.as_ref().expect("details").causes[0];
    assert_eq!(cause.field, "patch");
    assert!(
        cause
            .message
            .ends_with(r#": strict decoding error: unknown field "spec.bogus""#),
        "{}",
        cause.message
    );
    assert!(
        cause.message.contains(r#"\"bogus\":1"#),
        "names the document"
    );
    let stored = store.get(ns, "p", &list()).await.expect("get");
    assert_eq!(stored["spec"]["replicas"], 1, "nothing written");

    let (patched, warnings) = patch(
        PatchType::Strategic,
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"web","imagePullPolicyy":"Never"}]}}}}"#,
        FieldValidation::Warn,
    )
    .await;
    assert_clean(&patched.expect("warn patches"));
    assert_eq!(warnings, [UNKNOWN[1]]);

    let (patched, warnings) = patch(
        PatchType::Json,
        r#"[{"op":"add","path":"/spec/bogus","value":1},{"op":"replace","path":"/spec/replicas","value":3}]"#,
        FieldValidation::Ignore,
    )
    .await;
    let patched = patched.expect("ignore patches");
    assert_clean(&patched);
    assert_eq!(patched["spec"]["replicas"], 3);
    assert!(warnings.is_empty());
    assert_clean(&store.get(ns, "p", &list()).await.expect("get"));
}

async fn scale_bodies_are_scales(h: &Harness) {
    let store = h.store("apps", "deployments");
    let ns = Some("default");
    store
        .create(ns, deployment("s"), &opts(FieldValidation::Strict))
        .await
        .expect("create");
    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                       "metadata": {"name": "s"}, "spec": {"replicas": 4, "bogus": 1}});
    let err = store
        .update_scale(
            ns,
            "s",
            ScaleChange::Replace(scale.clone()),
            &opts(FieldValidation::Strict),
        )
        .await
        .expect_err("strict");
    assert_eq!(
        err.to_string(),
        r#"Scale in version "v1" cannot be handled as a Scale: strict decoding error: unknown field "spec.bogus""#
    );
    let (scaled, warnings) = warning::collect(store.update_scale(
        ns,
        "s",
        ScaleChange::Replace(scale),
        &opts(FieldValidation::Warn),
    ))
    .await;
    assert_eq!(scaled.expect("warn scales")["spec"]["replicas"], 4);
    assert_eq!(warnings, [r#"unknown field "spec.bogus""#]);
    let err = store
        .update_scale(
            ns,
            "s",
            ScaleChange::Patch(PatchType::Merge, br#"{"spec":{"replicas":"five"}}"#),
            &opts(FieldValidation::Ignore),
        )
        .await
        .expect_err("a wrong type");
    assert_eq!(err.code(), 422);
    assert!(
        err.to_string().starts_with(
            r#"Scale.autoscaling "s" is invalid: spec.replicas: Invalid value: "string""#
        ),
        "{err}"
    );
}

async fn wrong_types_are_invalid_whatever_the_directive(h: &Harness) {
    let store = h.store("apps", "deployments");
    let ns = Some("default");
    let mut bad = with_unknown("t");
    bad["spec"]["replicas"] = json!("three");
    bad["spec"]["template"]["spec"]["containers"][0]["ports"] = json!([{"containerPort": "80"}]);
    for validation in [
        FieldValidation::Strict,
        FieldValidation::Warn,
        FieldValidation::Ignore,
    ] {
        let (err, warnings) =
            warning::collect(store.create(ns, bad.clone(), &opts(validation))).await;
        let err = err.expect_err("wrong types");
        assert_eq!(
            (err.code(), err.reason()),
            (422, "Invalid"),
            "{validation:?}"
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let status = err.status();
        let details = status.details.expect("details");
        let fields: Vec<(&str, &str)> = details
            .causes
            .iter()
            .map(|c| (c.field.as_str(), c.kind.as_str()))
            .collect();
        assert_eq!(
            fields,
            [
                ("spec.replicas", "FieldValueTypeInvalid"),
                (
                    "spec.template.spec.containers[0].ports[0].containerPort",
                    "FieldValueTypeInvalid"
                ),
            ]
        );
        assert_eq!(details.kind.as_deref(), Some("Deployment"));
        assert_eq!(details.group.as_deref(), Some("apps"));
    }
    store
        .create(ns, deployment("t"), &opts(FieldValidation::Strict))
        .await
        .expect("create");
    let err = store
        .patch(
            ns,
            "t",
            PatchType::Merge,
            br#"{"spec":{"replicas":3000000000}}"#,
            Subresource::Main,
            &opts(FieldValidation::Strict),
        )
        .await
        .expect_err("out of range");
    assert_eq!(
        err.to_string(),
        r#"Deployment.apps "t" is invalid: spec.replicas: Invalid value: 3000000000: spec.replicas in body should be less than or equal to 2147483647"#
    );
}

async fn duplicates_from_the_decoder_come_first(h: &Harness) {
    let store = h.store("apps", "deployments");
    let strict = WriteOptions {
        decode_errors: vec![r#"duplicate field "spec.replicas""#.into()],
        ..opts(FieldValidation::Strict)
    };
    let err = store
        .create(Some("default"), with_unknown("d"), &strict)
        .await
        .expect_err("strict");
    assert_eq!(
        err.to_string(),
        format!(
            r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: duplicate field "spec.replicas", {}"#,
            UNKNOWN.join(", ")
        )
    );
    // Only duplicates, on a clean body: still refused.
    let err = store
        .create(Some("default"), deployment("d"), &strict)
        .await
        .expect_err("strict duplicates");
    assert!(err
        .to_string()
        .ends_with(r#"duplicate field "spec.replicas""#));
    let warn = WriteOptions {
        field_validation: FieldValidation::Warn,
        ..strict
    };
    let (created, warnings) =
        warning::collect(store.create(Some("default"), with_unknown("d"), &warn)).await;
    created.expect("warn");
    assert_eq!(warnings[0], r#"duplicate field "spec.replicas""#);
    assert_eq!(warnings[1..], UNKNOWN);
}
