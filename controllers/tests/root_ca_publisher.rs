//! The root CA certificate publisher over a real registry (embedded store and etcd): every
//! active namespace gets `kube-root-ca.crt`, and a changed or deleted one is put back.

mod support;

use controllers::root_ca_publisher::{RootCaPublisher, CONFIG_MAP, DATA_KEY};
use serde_json::Value;
use support::batch::{get, informers, wait_for};
use support::{delete_configmap, update_configmap, Harness};
use tokio_util::sync::CancellationToken;

const BUNDLE: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

test_support::both_backends!(crate::Harness; every_namespace_holds_the_bundle_and_keeps_it);

async fn published(h: &Harness, ns: &str) -> Option<Value> {
    get(&h.configmaps(), ns, CONFIG_MAP).await
}

fn bundle_of(cm: &Option<Value>) -> Option<&str> {
    cm.as_ref()?.get("data")?.get(DATA_KEY)?.as_str()
}

async fn every_namespace_holds_the_bundle_and_keeps_it(h: &Harness) {
    h.namespace("one").await;
    let factory = informers(h);
    let stop = CancellationToken::new();
    let publisher = RootCaPublisher::new(&factory, BUNDLE.to_string()).expect("publisher");
    tokio::spawn(publisher.run(stop.clone()));

    // A namespace that was there and one made later both get it.
    h.namespace("two").await;
    for ns in ["one", "two"] {
        wait_for(&format!("the bundle in {ns}"), || async {
            bundle_of(&published(h, ns).await) == Some(BUNDLE)
        })
        .await;
    }
    let cm = published(h, "one").await.unwrap_or_default();
    assert!(cm["metadata"]["annotations"]["kubernetes.io/description"]
        .as_str()
        .is_some_and(|d| d.contains("kube-apiserver")));
    let managers: Vec<&str> = cm["metadata"]["managedFields"]
        .as_array()
        .map(|e| e.iter().filter_map(|m| m["manager"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(managers, ["kube-controller-manager"]);

    // Tampered with: the data goes back to the bundle alone.
    update_configmap(&h.configmaps(), "one", CONFIG_MAP, "forged").await;
    wait_for("the tampered bundle put back", || async {
        let cm = published(h, "one").await;
        bundle_of(&cm) == Some(BUNDLE)
            && cm
                .as_ref()
                .is_some_and(|c| c["data"].get("value").is_none())
    })
    .await;

    // Deleted: made again.
    delete_configmap(&h.configmaps(), "two", CONFIG_MAP).await;
    wait_for("the deleted bundle made again", || async {
        bundle_of(&published(h, "two").await) == Some(BUNDLE)
    })
    .await;
    stop.cancel();
}
