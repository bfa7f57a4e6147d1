//! The PersistentVolume controller and its simulated provisioner over a real registry
//! (embedded store and etcd), with the DefaultStorageClass admission of the registry.

mod support;

use controllers::volume::{PersistentVolumeController, PROVISIONER};
use registry::options::DeleteOptions;
use registry::{object, Store};
use serde_json::{json, Value};
use support::batch::{create, event_reasons, get, informers, wait_for};
use support::Harness;
use tokio_util::sync::CancellationToken;

const NS: &str = "vol";

test_support::both_backends!(crate::Harness;
    claims_of_the_default_class_get_provisioned_volumes,
    retained_external_and_prebound_volumes);

fn start(h: &Harness) -> CancellationToken {
    let factory = informers(h);
    let stop = CancellationToken::new();
    let controller = PersistentVolumeController::new(&factory).expect("pv controller");
    tokio::spawn(controller.run(stop.clone()));
    stop
}

fn class(name: &str, provisioner: &str, policy: &str, default: bool) -> Value {
    let mut class = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                           "metadata": {"name": name},
                           "provisioner": provisioner, "reclaimPolicy": policy});
    if default {
        class["metadata"]["annotations"] =
            json!({"storageclass.kubernetes.io/is-default-class": "true"});
    }
    class
}

fn claim(name: &str, class: Option<&str>) -> Value {
    let mut claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                           "metadata": {"name": name},
                           "spec": {"accessModes": ["ReadWriteOnce"],
                                    "resources": {"requests": {"storage": "1Gi"}}}});
    if let Some(class) = class {
        claim["spec"]["storageClassName"] = json!(class);
    }
    claim
}

async fn phase(store: &Store, ns: &str, name: &str) -> String {
    get(store, ns, name)
        .await
        .and_then(|o| o["status"]["phase"].as_str().map(String::from))
        .unwrap_or_default()
}

async fn claims_of_the_default_class_get_provisioned_volumes(h: &Harness) {
    h.namespace(NS).await;
    let stop = start(h);
    let (claims, volumes) = (
        h.store("", "persistentvolumeclaims"),
        h.store("", "persistentvolumes"),
    );
    let classes = h.store("storage.k8s.io", "storageclasses");
    let standard = create(&classes, "", class("standard", PROVISIONER, "Delete", true)).await;
    assert_eq!(standard["volumeBindingMode"], "Immediate");

    // DefaultStorageClass admission: no class named, the default one given; "" stays "".
    let data = create(&claims, NS, claim("data", None)).await;
    assert_eq!(data["spec"]["storageClassName"], "standard");
    let none = create(&claims, NS, claim("none", Some(""))).await;
    assert_eq!(none["spec"]["storageClassName"], "");

    let volume_name = format!("pvc-{}", object::uid(&data));
    wait_for("the claim bound", || async {
        phase(&claims, NS, "data").await == "Bound"
            && phase(&volumes, "", &volume_name).await == "Bound"
    })
    .await;
    let bound = get(&claims, NS, "data").await.unwrap_or_default();
    assert_eq!(bound["spec"]["volumeName"], volume_name.as_str());
    let annotations = &bound["metadata"]["annotations"];
    assert_eq!(annotations["pv.kubernetes.io/bind-completed"], "yes");
    assert_eq!(annotations["pv.kubernetes.io/bound-by-controller"], "yes");
    assert_eq!(
        annotations["volume.kubernetes.io/storage-provisioner"],
        PROVISIONER
    );
    assert_eq!(bound["status"]["capacity"], json!({"storage": "1Gi"}));
    assert_eq!(bound["status"]["accessModes"], json!(["ReadWriteOnce"]));

    let volume = get(&volumes, "", &volume_name).await.unwrap_or_default();
    assert_eq!(volume["spec"]["claimRef"]["uid"], data["metadata"]["uid"]);
    assert_eq!(volume["spec"]["claimRef"]["name"], "data");
    assert_eq!(volume["spec"]["storageClassName"], "standard");
    assert_eq!(volume["spec"]["persistentVolumeReclaimPolicy"], "Delete");
    assert_eq!(volume["spec"]["capacity"], json!({"storage": "1Gi"}));
    assert_eq!(
        volume["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"],
        PROVISIONER
    );
    assert!(volume["spec"]["hostPath"]["path"]
        .as_str()
        .is_some_and(|p| p.ends_with(&volume_name)));
    wait_for("ProvisioningSucceeded", || async {
        event_reasons(h, NS, "data")
            .await
            .contains(&"ProvisioningSucceeded".to_string())
    })
    .await;

    // A claim asking for no class waits for a volume someone makes.
    wait_for("FailedBinding for the classless claim", || async {
        event_reasons(h, NS, "none")
            .await
            .contains(&"FailedBinding".to_string())
    })
    .await;
    assert_eq!(phase(&claims, NS, "none").await, "Pending");

    // The claim goes: its Delete-policy volume goes with it.
    claims
        .delete(Some(NS), "data", DeleteOptions::default())
        .await
        .expect("delete claim");
    wait_for("the volume deleted", || async {
        get(&volumes, "", &volume_name).await.is_none()
    })
    .await;
    stop.cancel();
}

async fn retained_external_and_prebound_volumes(h: &Harness) {
    h.namespace(NS).await;
    let stop = start(h);
    let (claims, volumes) = (
        h.store("", "persistentvolumeclaims"),
        h.store("", "persistentvolumes"),
    );
    let classes = h.store("storage.k8s.io", "storageclasses");
    create(&classes, "", class("keep", PROVISIONER, "Retain", false)).await;
    create(
        &classes,
        "",
        class("cloud", "ebs.csi.aws.com", "Delete", false),
    )
    .await;

    // Retain: the volume outlives its claim, Released.
    let kept = create(&claims, NS, claim("kept", Some("keep"))).await;
    let kept_volume = format!("pvc-{}", object::uid(&kept));
    wait_for("the retained claim bound", || async {
        phase(&claims, NS, "kept").await == "Bound"
    })
    .await;
    claims
        .delete(Some(NS), "kept", DeleteOptions::default())
        .await
        .expect("delete claim");
    wait_for("the retained volume released", || async {
        phase(&volumes, "", &kept_volume).await == "Released"
    })
    .await;

    // Another provisioner's class: the claim waits, saying for whom.
    create(&claims, NS, claim("external", Some("cloud"))).await;
    wait_for("ExternalProvisioning", || async {
        event_reasons(h, NS, "external")
            .await
            .contains(&"ExternalProvisioning".to_string())
    })
    .await;
    assert_eq!(phase(&claims, NS, "external").await, "Pending");

    // A volume made by hand for a claim by name binds to that claim when it comes.
    create(
        &volumes,
        "",
        json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "manual"},
               "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
                        "storageClassName": "", "hostPath": {"path": "/tmp/manual"},
                        "claimRef": {"namespace": NS, "name": "mine"}}}),
    )
    .await;
    wait_for("the pre-bound volume available", || async {
        phase(&volumes, "", "manual").await == "Available"
    })
    .await;
    let mine = create(&claims, NS, claim("mine", Some(""))).await;
    wait_for("the pre-bound pair bound", || async {
        phase(&claims, NS, "mine").await == "Bound"
            && phase(&volumes, "", "manual").await == "Bound"
    })
    .await;
    let volume = get(&volumes, "", "manual").await.unwrap_or_default();
    assert_eq!(volume["spec"]["claimRef"]["uid"], mine["metadata"]["uid"]);
    let bound = get(&claims, NS, "mine").await.unwrap_or_default();
    assert_eq!(bound["spec"]["volumeName"], "manual");
    assert_eq!(bound["status"]["capacity"], json!({"storage": "5Gi"}));
    // A hand-made volume with the Retain default is released, not deleted.
    claims
        .delete(Some(NS), "mine", DeleteOptions::default())
        .await
        .expect("delete claim");
    wait_for("the manual volume released", || async {
        phase(&volumes, "", "manual").await == "Released"
    })
    .await;
    stop.cancel();
}
