//! Get and list: label and field selectors, paging, resourceVersion semantics.

mod support;

use registry::options::{ListOptions, ResourceVersionMatch};
use serde_json::json;
use support::{list, write, Harness};
use test_support::names;

test_support::both_backends!(
    crate::support::Harness;
    selectors_filter_lists,
    paging_and_resource_versions,
);

fn selecting(labels: &str, fields: &str) -> ListOptions {
    ListOptions {
        label_selector: Some(labels.into()),
        field_selector: Some(fields.into()),
        ..Default::default()
    }
}

async fn selectors_filter_lists(h: &Harness) {
    let pods = h.store("", "pods");
    for (name, labels, node, phase) in [
        ("a", json!({"app": "web", "tier": "front"}), "n1", "Running"),
        ("b", json!({"app": "web", "tier": "back"}), "n2", "Pending"),
        ("c", json!({"app": "db"}), "n1", "Running"),
        ("d", json!({}), "", "Pending"),
    ] {
        let mut pod = json!({"metadata": {"name": name, "labels": labels},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}});
        if !node.is_empty() {
            pod["spec"]["nodeName"] = json!(node);
        }
        pods.create(Some("default"), pod, &write())
            .await
            .expect("create");
        if phase == "Running" {
            let status = json!({"metadata": {"name": name}, "status": {"phase": "Running"}});
            pods.update(
                Some("default"),
                name,
                status,
                registry::Subresource::Status,
                &write(),
            )
            .await
            .expect("status");
        }
    }
    let cases = [
        ("app=web", "", vec!["a", "b"]),
        ("app==web", "", vec!["a", "b"]),
        ("app!=web", "", vec!["c", "d"]),
        ("app in (web, db)", "", vec!["a", "b", "c"]),
        ("app notin (web)", "", vec!["c", "d"]),
        ("tier", "", vec!["a", "b"]),
        ("!tier", "", vec!["c", "d"]),
        ("app=web,tier=back", "", vec!["b"]),
        ("", "spec.nodeName=n1", vec!["a", "c"]),
        ("", "status.phase=Running", vec!["a", "c"]),
        ("", "metadata.name=d", vec!["d"]),
        (
            "",
            "metadata.namespace=default,spec.nodeName!=n1",
            vec!["b", "d"],
        ),
        ("app=web", "spec.nodeName=n1", vec!["a"]),
    ];
    for (labels, fields, expected) in cases {
        let got = pods
            .list(Some("default"), &selecting(labels, fields))
            .await
            .expect("list");
        assert_eq!(names(&got), expected, "labels {labels:?} fields {fields:?}");
    }
    let bad = pods
        .list(Some("default"), &selecting("", "spec.unknown=x"))
        .await
        .expect_err("unsupported field");
    assert_eq!(bad.code(), 400);
    assert!(bad
        .to_string()
        .contains("field label not supported: spec.unknown"));
    let bad = pods
        .list(Some("default"), &selecting("a in (", ""))
        .await
        .expect_err("bad selector");
    assert_eq!(bad.code(), 400);
    // All namespaces, and a get.
    h.namespace("other").await;
    let mut other =
        json!({"metadata": {"name": "z"}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
    other["metadata"]["labels"] = json!({"app": "web"});
    pods.create(Some("other"), other, &write())
        .await
        .expect("create");
    let everywhere = pods
        .list(None, &selecting("app=web", ""))
        .await
        .expect("list");
    assert_eq!(names(&everywhere), vec!["a", "b", "z"]);
    assert_eq!(everywhere["kind"], "PodList");
    assert_eq!(everywhere["apiVersion"], "v1");
    let missing = pods
        .get(Some("default"), "nope", &list())
        .await
        .expect_err("missing");
    assert_eq!(missing.to_string(), "pods \"nope\" not found");
}

async fn paging_and_resource_versions(h: &Harness) {
    let cms = h.store("", "configmaps");
    let mut first_rv = String::new();
    for i in 0..12 {
        let c = cms
            .create(
                Some("default"),
                json!({"metadata": {"name": format!("c{i:02}")}, "data": {"v": "1"}}),
                &write(),
            )
            .await
            .expect("create");
        if i == 0 {
            first_rv = c["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string();
        }
    }
    let page = |limit, token: Option<String>| ListOptions {
        limit,
        continue_token: token,
        ..Default::default()
    };
    let p1 = cms
        .list(Some("default"), &page(5, None))
        .await
        .expect("page 1");
    assert_eq!(names(&p1).len(), 5);
    assert_eq!(p1["metadata"]["remainingItemCount"], 7);
    let token = p1["metadata"]["continue"].as_str().map(str::to_string);
    assert!(token.is_some());
    let p2 = cms
        .list(Some("default"), &page(5, token))
        .await
        .expect("page 2");
    assert_eq!(
        p2["metadata"]["resourceVersion"],
        p1["metadata"]["resourceVersion"]
    );
    let p3 = cms
        .list(
            Some("default"),
            &page(5, p2["metadata"]["continue"].as_str().map(str::to_string)),
        )
        .await
        .expect("page 3");
    assert_eq!(names(&p3), vec!["c10", "c11"]);
    assert!(p3["metadata"].get("continue").is_none());
    // Exact: the list as it was when only the first existed.
    let exact = cms
        .list(
            Some("default"),
            &ListOptions {
                resource_version: Some(first_rv.clone()),
                resource_version_match: Some(ResourceVersionMatch::Exact),
                ..Default::default()
            },
        )
        .await
        .expect("exact");
    assert_eq!(names(&exact), vec!["c00"]);
    assert_eq!(exact["metadata"]["resourceVersion"], first_rv);
    // rv=0 may come from the cache; it is complete.
    let any = cms
        .list(
            Some("default"),
            &ListOptions {
                resource_version: Some("0".into()),
                ..Default::default()
            },
        )
        .await
        .expect("rv=0");
    assert_eq!(names(&any).len(), 12);
    let bad = cms
        .list(
            Some("default"),
            &ListOptions {
                resource_version_match: Some(ResourceVersionMatch::Exact),
                ..Default::default()
            },
        )
        .await
        .expect_err("match without rv");
    assert_eq!(bad.code(), 422);
    let bad = cms
        .list(Some("default"), &page(5, Some("garbage".into())))
        .await
        .expect_err("bad token");
    assert_eq!(bad.code(), 400);
}
