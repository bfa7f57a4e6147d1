//! ControllerRevision history over a real registry (embedded store and etcd): creation with
//! name collisions, claiming by selector, renumbering and truncation.

mod support;

use std::collections::HashSet;
use std::sync::Arc;

use client::informer::{wait_for_sync, InformerConfig, InformerFactory};
use controllers::history::{
    hash_revision, new_revision, next_revision, revision_name, revision_number, History,
};
use registry::options::{ListOptions, WriteOptions};
use registry::selector::labels::LabelSelector;
use registry::{object, Store};
use serde_json::{json, Value};
use support::batch::wait_for;
use support::Harness;

const NS: &str = "history";

fn revisions(h: &Harness) -> Arc<Store> {
    h.store("apps", "controllerrevisions")
}

async fn setup(h: &Harness) -> (History, Value, LabelSelector) {
    h.namespace(NS).await;
    let sets = h.store("apps", "statefulsets");
    let set = sets
        .create(
            Some(NS),
            json!({
                "apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": "web", "namespace": NS},
                "spec": {
                    "selector": {"matchLabels": {"app": "web"}},
                    "serviceName": "web",
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
                },
            }),
            &WriteOptions::default(),
        )
        .await
        .expect("create statefulset");
    let informers = InformerFactory::new(h.registry.clone(), InformerConfig::default());
    let history = History::new(&informers, sets).expect("history");
    assert!(wait_for_sync(&[history.informer()]).await);
    let selector =
        LabelSelector::from_label_selector_json(&set["spec"]["selector"]).expect("selector");
    (history, set, selector)
}

fn data(image: &str) -> Value {
    json!({"spec": {"template": {"$patch": "replace",
        "spec": {"containers": [{"name": "c", "image": image}]}}}})
}

async fn count_in_informer(history: &History, n: usize) {
    wait_for(&format!("{n} revisions in the informer"), || async {
        history.informer().indexer().len() == n
    })
    .await;
}

async fn create_is_idempotent_and_resolves_collisions(h: &Harness) {
    let (history, set, _) = setup(h).await;
    let labels = json!({"app": "web"});
    let revision = new_revision(&set, &labels, data("nginx"), 1, Some(0));
    let mut collisions = 0;
    let first = history
        .create(&set, &revision, &mut collisions)
        .await
        .expect("create");
    assert_eq!(object::name(&first), object::name(&revision));
    // The same data again: the stored revision is the one wanted.
    let again = history
        .create(&set, &revision, &mut collisions)
        .await
        .expect("create again");
    assert_eq!(object::uid(&again), object::uid(&first));
    assert_eq!(collisions, 0);

    // Another revision's data stored under the name this one hashes to: a collision.
    let other = new_revision(&set, &labels, data("nginx:2"), 2, Some(0));
    let mut taken = new_revision(&set, &labels, data("busybox"), 3, Some(0));
    taken["metadata"]["name"] = json!(object::name(&other));
    taken["metadata"]["labels"] = json!({"app": "web"});
    revisions(h)
        .create(Some(NS), taken, &WriteOptions::default())
        .await
        .expect("squat the name");
    let created = history
        .create(&set, &other, &mut collisions)
        .await
        .expect("create after collision");
    assert_eq!(collisions, 1);
    assert_eq!(
        object::name(&created),
        revision_name("web", &hash_revision(&other, Some(1)))
    );
}

async fn list_claims_by_selector_and_sorts(h: &Harness) {
    let (history, set, selector) = setup(h).await;
    let store = revisions(h);
    let mut collisions = 0;
    for (i, image) in ["a", "b"].iter().enumerate() {
        let r = new_revision(
            &set,
            &json!({"app": "web"}),
            data(image),
            2 - i as i64,
            None,
        );
        history
            .create(&set, &r, &mut collisions)
            .await
            .expect("create");
    }
    // A matching orphan, an orphan that does not match, and one another parent controls.
    let orphan = |name: &str, app: &str| {
        json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
               "metadata": {"name": name, "namespace": NS, "labels": {"app": app}},
               "data": data(name), "revision": 7})
    };
    let mut foreign = orphan("foreign", "web");
    foreign["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1",
        "kind": "StatefulSet", "name": "other", "uid": "other-uid", "controller": true}]);
    for r in [orphan("stray", "web"), orphan("unrelated", "db"), foreign] {
        store
            .create(Some(NS), r, &WriteOptions::default())
            .await
            .expect("create");
    }
    count_in_informer(&history, 5).await;
    let listed = history.list(&set, &selector).await.expect("list");
    let names: Vec<(&str, i64)> = listed
        .iter()
        .map(|r| (object::name(r), revision_number(r)))
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert_eq!(names[2], ("stray", 7));
    assert_eq!((names[0].1, names[1].1), (1, 2));
    let adopted = store
        .get(Some(NS), "stray", &ListOptions::default())
        .await
        .expect("get");
    assert_eq!(
        adopted["metadata"]["ownerReferences"][0]["uid"],
        set["metadata"]["uid"]
    );
    assert_eq!(next_revision(&listed), 8);

    // Relabelled away from the selector: released.
    let mut relabelled = adopted.clone();
    relabelled["metadata"]["labels"] = json!({"app": "gone"});
    store
        .update(
            Some(NS),
            "stray",
            relabelled,
            registry::Subresource::Main,
            &WriteOptions::default(),
        )
        .await
        .expect("relabel");
    wait_for("the relabel seen", || async {
        history
            .informer()
            .indexer()
            .get(&format!("{NS}/stray"))
            .is_some_and(|r| r["metadata"]["labels"]["app"] == "gone")
    })
    .await;
    assert_eq!(history.list(&set, &selector).await.expect("list").len(), 2);
    let released = store
        .get(Some(NS), "stray", &ListOptions::default())
        .await
        .expect("get");
    assert!(released["metadata"]["ownerReferences"]
        .as_array()
        .is_none_or(|refs| refs.is_empty()));
}

async fn renumber_and_truncate_keep_live_revisions(h: &Harness) {
    let (history, set, selector) = setup(h).await;
    let mut collisions = 0;
    for (i, image) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        let r = new_revision(
            &set,
            &json!({"app": "web"}),
            data(image),
            i as i64 + 1,
            Some(0),
        );
        history
            .create(&set, &r, &mut collisions)
            .await
            .expect("create");
    }
    count_in_informer(&history, 5).await;
    let listed = history.list(&set, &selector).await.expect("list");
    // Roll back to the first: it becomes the newest.
    let renumbered = history
        .update_revision(&listed[0], 6)
        .await
        .expect("renumber");
    assert_eq!(revision_number(&renumbered), 6);
    wait_for("the renumbering seen", || async {
        let listed = history.list(&set, &selector).await.expect("list");
        listed.last().map(|r| object::name(r)) == Some(object::name(&renumbered))
    })
    .await;
    let listed = history.list(&set, &selector).await.expect("list");
    // Live: the newest and revision 2 (a pod still runs it). Keep one more.
    let live: HashSet<String> = [object::name(&listed[4]), object::name(&listed[0])]
        .into_iter()
        .map(str::to_string)
        .collect();
    history.truncate(&listed, &live, 1).await.expect("truncate");
    let left: Vec<String> = revisions(h)
        .list(Some(NS), &ListOptions::default())
        .await
        .expect("list")["items"]
        .as_array()
        .map(|items| items.iter().map(|r| object::name(r).to_string()).collect())
        .unwrap_or_default();
    let mut expected: Vec<String> = live.into_iter().collect();
    expected.push(object::name(&listed[3]).to_string());
    expected.sort();
    let mut left = left;
    left.sort();
    assert_eq!(left, expected);
}

test_support::both_backends!(
    crate::support::Harness, worker_threads = 2;
    create_is_idempotent_and_resolves_collisions,
    list_claims_by_selector_and_sorts,
    renumber_and_truncate_keep_live_revisions,
);
