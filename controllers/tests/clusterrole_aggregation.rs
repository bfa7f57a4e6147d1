//! The ClusterRole aggregation controller over a real registry (embedded store and etcd): the
//! bootstrap admin, edit and view roles get their carriers' rules along the chain view → edit
//! → admin, a role labelled to aggregate into view adds its rules to all three, and removing
//! the label takes them away.

mod support;

use controllers::clusterrole_aggregation::{ClusterRoleAggregationController, FIELD_MANAGER};
use registry::options::{ListOptions, WriteOptions};
use registry::{RegistryError, Subresource};
use serde_json::{json, Value};
use support::batch::{informers, wait_for};
use support::Harness;
use tokio_util::sync::CancellationToken;

test_support::both_backends!(crate::Harness; aggregates_along_the_chain_and_follows_labels);

const GROUP: &str = "rbac.authorization.k8s.io";

async fn role(h: &Harness, name: &str) -> Option<Value> {
    match h
        .store(GROUP, "clusterroles")
        .get(None, name, &ListOptions::default())
        .await
    {
        Ok(r) => Some(r),
        Err(RegistryError::NotFound { .. }) => None,
        Err(e) => panic!("get {name}: {e}"),
    }
}

async fn rules(h: &Harness, name: &str) -> Vec<Value> {
    role(h, name)
        .await
        .and_then(|r| r["rules"].as_array().cloned())
        .unwrap_or_default()
}

/// Whether every rule of `part` is among `whole`'s.
fn holds(whole: &[Value], part: &[Value]) -> bool {
    part.iter().all(|r| whole.contains(r))
}

async fn aggregates_along_the_chain_and_follows_labels(h: &Harness) {
    let report = registry::rbac::bootstrap::reconcile(&h.registry)
        .await
        .expect("bootstrap policy");
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let to_view = rules(h, "system:aggregate-to-view").await;
    let to_edit = rules(h, "system:aggregate-to-edit").await;
    let to_admin = rules(h, "system:aggregate-to-admin").await;
    assert!(!to_view.is_empty() && !to_edit.is_empty() && !to_admin.is_empty());
    // Before the controller runs, the aggregated roles hold nothing.
    assert!(rules(h, "view").await.is_empty());

    let stop = CancellationToken::new();
    let controller = ClusterRoleAggregationController::new(&informers(h)).expect("controller");
    tokio::spawn(controller.run(stop.clone()));

    wait_for("view to hold the rules labelled for it", || async {
        rules(h, "view").await == to_view
    })
    .await;
    wait_for("edit to hold its own and view's rules", || async {
        let edit = rules(h, "edit").await;
        holds(&edit, &to_edit) && holds(&edit, &to_view)
    })
    .await;
    wait_for("admin to hold its own, edit's and view's rules", || async {
        let admin = rules(h, "admin").await;
        holds(&admin, &to_admin) && holds(&admin, &to_edit) && holds(&admin, &to_view)
    })
    .await;
    // Upstream's order: the matching roles by name, each rule once.
    let edit = rules(h, "edit").await;
    let mut expected = to_edit.clone();
    expected.extend(to_view.iter().filter(|r| !to_edit.contains(r)).cloned());
    assert_eq!(edit, expected);
    let view = role(h, "view").await.unwrap_or_default();
    let managers: Vec<&str> = view["metadata"]["managedFields"]
        .as_array()
        .map(|e| e.iter().filter_map(|m| m["manager"].as_str()).collect())
        .unwrap_or_default();
    assert!(managers.contains(&FIELD_MANAGER), "{managers:?}");

    // A new role labelled to aggregate into view reaches view, edit and admin.
    let widgets = json!({"verbs": ["get", "list", "watch"], "apiGroups": ["example.com"], "resources": ["widgets"]});
    let created = h
        .store(GROUP, "clusterroles")
        .create(
            None,
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "widget-viewer", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
                "rules": [widgets],
            }),
            &WriteOptions::default(),
        )
        .await
        .expect("create widget-viewer");
    for name in ["view", "edit", "admin"] {
        wait_for(&format!("{name} to hold the widget rule"), || async {
            rules(h, name).await.contains(&widgets)
        })
        .await;
    }

    // Without the label, the rule leaves all three again.
    let mut unlabelled = created;
    unlabelled["metadata"]["labels"] = json!({});
    h.store(GROUP, "clusterroles")
        .update(
            None,
            "widget-viewer",
            unlabelled,
            Subresource::Main,
            &WriteOptions::default(),
        )
        .await
        .expect("unlabel widget-viewer");
    for name in ["view", "edit", "admin"] {
        wait_for(&format!("{name} to lose the widget rule"), || async {
            !rules(h, name).await.contains(&widgets)
        })
        .await;
    }
    assert_eq!(rules(h, "view").await, to_view);
    stop.cancel();
}
