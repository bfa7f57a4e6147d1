//! Lists: merged by key, unioned, replaced, ordered.

use serde_json::{json, Value};

use super::{assert_no_directives, names, smp, smp_ok};

fn pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "finalizers": ["a.example/f", "b.example/f"]},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1.24",
                    "args": ["--a", "--b"],
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}]
                },
                {"name": "sidecar", "image": "envoy:1"},
                {"name": "logger", "image": "fluent:1"}
            ]
        }
    })
}

fn containers(v: &Value) -> &Value {
    &v["spec"]["containers"]
}

#[test]
fn containers_merge_by_name() {
    let patch = json!({"spec": {"containers": [
        {"name": "app", "image": "nginx:1.25"},
        {"name": "extra", "image": "busybox"},
        {"name": "logger", "$patch": "delete"}
    ]}});
    let out = smp_ok("", "Pod", &pod(), &patch);
    let list = containers(&out);
    // Upstream's order: patch items in the patch's order, the new one right after `app`
    // because it is not in the object to be compared with `sidecar`.
    assert_eq!(names(list), ["app", "extra", "sidecar"]);
    assert_eq!(list[0]["image"], "nginx:1.25");
    assert_eq!(
        list[0]["args"],
        json!(["--a", "--b"]),
        "untouched fields stay"
    );
    assert_eq!(list[2]["image"], "envoy:1");
    assert_no_directives(&out);
}

#[test]
fn an_item_added_alone_goes_first() {
    let patch = json!({"spec": {"containers": [{"name": "extra", "image": "busybox"}]}});
    let out = smp_ok("", "Pod", &pod(), &patch);
    assert_eq!(
        names(containers(&out)),
        ["extra", "app", "sidecar", "logger"]
    );
}

#[test]
fn patched_items_keep_the_objects_order() {
    let patch = json!({"spec": {"containers": [
        {"name": "logger", "image": "fluent:2"},
        {"name": "app", "image": "nginx:2"}
    ]}});
    let out = smp_ok("", "Pod", &pod(), &patch);
    // The patch's relative order wins for the items it names; `sidecar` goes before `logger`
    // because it did in the object.
    assert_eq!(names(containers(&out)), ["sidecar", "logger", "app"]);
}

#[test]
fn env_merges_by_name() {
    let patch = json!({"spec": {"containers": [{"name": "app", "env": [
        {"name": "B", "value": "two"},
        {"name": "C", "value": "3"},
        {"name": "A", "$patch": "delete"}
    ]}]}});
    let out = smp_ok("", "Pod", &pod(), &patch);
    let env = &containers(&out)[0]["env"];
    assert_eq!(
        env,
        &json!([{"name": "B", "value": "two"}, {"name": "C", "value": "3"}])
    );
}

#[test]
fn ports_merge_by_container_port() {
    let patch = json!({"spec": {"containers": [{"name": "app", "ports": [
        {"containerPort": 80, "name": "http"},
        {"containerPort": 8080}
    ]}]}});
    let out = smp_ok("", "Pod", &pod(), &patch);
    assert_eq!(
        containers(&out)[0]["ports"],
        json!([
            {"containerPort": 80, "protocol": "TCP", "name": "http"},
            {"containerPort": 8080},
            {"containerPort": 443}
        ])
    );
}

#[test]
fn finalizers_are_unioned() {
    let patch = json!({"metadata": {"finalizers": ["b.example/f", "c.example/f"]}});
    let out = smp_ok("", "Pod", &pod(), &patch);
    assert_eq!(
        out["metadata"]["finalizers"],
        json!(["a.example/f", "b.example/f", "c.example/f"])
    );
}

#[test]
fn delete_from_primitive_list() {
    let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.example/f"]}});
    let out = smp_ok("", "Pod", &pod(), &patch);
    assert_eq!(out["metadata"]["finalizers"], json!(["b.example/f"]));
    assert_no_directives(&out);

    // A list the object lacks is left alone.
    let patch = json!({"spec": {"$deleteFromPrimitiveList/podCIDRs": ["10.0.0.0/24"]}});
    let node = json!({"metadata": {"name": "n"}, "spec": {}});
    assert_eq!(smp_ok("", "Node", &node, &patch), node);
}

#[test]
fn set_element_order_orders_the_merged_list() {
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "logger"}, {"name": "app"}, {"name": "new"}],
        "containers": [{"name": "new", "image": "x"}]
    }});
    let out = smp_ok("", "Pod", &pod(), &patch);
    // Named items in the given order; `sidecar`, not named, goes before `logger` as it did in
    // the object (upstream's best effort).
    assert_eq!(names(containers(&out)), ["sidecar", "logger", "app", "new"]);
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "logger"}, {"name": "sidecar"}, {"name": "app"}]
    }});
    let out = smp_ok("", "Pod", &pod(), &patch);
    assert_eq!(names(containers(&out)), ["logger", "sidecar", "app"]);
    assert_no_directives(&out);
}

#[test]
fn set_element_order_on_primitives_with_deletions() {
    let patch = json!({"metadata": {
        "$setElementOrder/finalizers": ["c.example/f", "a.example/f"],
        "$deleteFromPrimitiveList/finalizers": ["b.example/f"],
        "finalizers": ["c.example/f"]
    }});
    let out = smp_ok("", "Pod", &pod(), &patch);
    assert_eq!(
        out["metadata"]["finalizers"],
        json!(["c.example/f", "a.example/f"])
    );
}

#[test]
fn set_element_order_must_agree_with_the_patch() {
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "app"}],
        "containers": [{"name": "sidecar", "image": "x"}]
    }});
    let err = smp("", "Pod", &pod(), &patch).unwrap_err();
    assert_eq!(err.code(), 400);
    assert!(
        err.to_string().starts_with("The order in patch list:"),
        "{err}"
    );
}

#[test]
fn list_without_strategy_is_replaced() {
    let patch = json!({"spec": {"containers": [{"name": "app", "args": ["--c"]}]}});
    let out = smp_ok("", "Pod", &pod(), &patch);
    assert_eq!(containers(&out)[0]["args"], json!(["--c"]));
}

#[test]
fn patch_replace_on_a_list() {
    let patch = json!({"spec": {"containers": [
        {"name": "only", "image": "x"},
        {"$patch": "replace"}
    ]}});
    let out = smp_ok("", "Pod", &pod(), &patch);
    assert_eq!(containers(&out), &json!([{"name": "only", "image": "x"}]));
}

#[test]
fn directives_in_a_list_the_object_lacks_do_not_leak() {
    let original = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}});
    let patch = json!({"spec": {"initContainers": [
        {"name": "gone", "$patch": "delete"},
        {"name": "init", "image": "x", "env": [{"name": "E", "$patch": "delete"}]}
    ]}});
    let out = smp_ok("", "Pod", &original, &patch);
    assert_eq!(
        out["spec"]["initContainers"],
        json!([{"name": "init", "image": "x", "env": []}])
    );
    assert_no_directives(&out);
}

#[test]
fn owner_references_merge_by_uid_and_conditions_by_type() {
    let original = json!({
        "metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]},
        "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Initialized", "status": "True"}]}
    });
    let patch = json!({
        "metadata": {"ownerReferences": [{"uid": "1", "controller": true}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}
    });
    let out = smp_ok("apps", "Deployment", &original, &patch);
    assert_eq!(
        out["metadata"]["ownerReferences"],
        json!([{"uid": "1", "name": "a", "controller": true}])
    );
    assert_eq!(
        out["status"]["conditions"],
        json!([{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}])
    );
}

#[test]
fn service_ports_merge_by_port() {
    let original = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}});
    let patch = json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}});
    let out = smp_ok("", "Service", &original, &patch);
    assert_eq!(
        out["spec"]["ports"],
        json!([{"port": 80, "targetPort": 9090}, {"port": 443}])
    );
}

#[test]
fn templates_nest_the_pod_spec() {
    let template = |image: &str| json!({"template": {"spec": {"containers": [{"name": "a", "image": image}, {"name": "b", "image": "b"}]}}});
    let patch_spec = json!({"template": {"spec": {"containers": [{"name": "a", "image": "new"}]}}});
    for (group, kind, original, patch) in [
        (
            "apps",
            "Deployment",
            json!({"spec": template("old")}),
            json!({"spec": patch_spec}),
        ),
        (
            "apps",
            "StatefulSet",
            json!({"spec": template("old")}),
            json!({"spec": patch_spec}),
        ),
        (
            "batch",
            "Job",
            json!({"spec": template("old")}),
            json!({"spec": patch_spec}),
        ),
        (
            "",
            "ReplicationController",
            json!({"spec": template("old")}),
            json!({"spec": patch_spec}),
        ),
        (
            "batch",
            "CronJob",
            json!({"spec": {"jobTemplate": {"spec": template("old")}}}),
            json!({"spec": {"jobTemplate": {"spec": patch_spec}}}),
        ),
    ] {
        let out = smp_ok(group, kind, &original, &patch);
        let text = out.to_string();
        assert!(
            text.contains(r#""image":"new""#) && text.contains(r#""image":"b""#),
            "{kind}: {text}"
        );
    }
}
