//! Upstream's defaults and messages for the CSI kinds.

use serde_json::{json, Value};

use super::*;
use crate::strategy::Strategy;

fn messages(causes: Vec<Cause>) -> Vec<String> {
    causes.iter().map(|c| c.full_message()).collect()
}

#[test]
fn csi_drivers_are_defaulted_and_keep_what_attaches() {
    let mut driver = json!({"spec": {}});
    CSIDriverStrategy.prepare_for_create(&mut driver);
    assert_eq!(
        driver["spec"],
        json!({
            "attachRequired": true, "podInfoOnMount": false, "storageCapacity": false,
            "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": false,
            "seLinuxMount": false, "volumeLifecycleModes": ["Persistent"]
        })
    );
    assert!(CSIDriverStrategy.validate(&driver).is_empty());
    let mut changed = driver.clone();
    changed["spec"]["attachRequired"] = json!(false);
    changed["spec"]["tokenRequests"] =
        json!([{"audience": "a", "expirationSeconds": 60}, {"audience": "a"}]);
    changed["spec"]["volumeLifecycleModes"] = json!(["Forever"]);
    assert_eq!(
        messages(CSIDriverStrategy.validate_update(&changed, &driver)),
        [
            "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
            "spec.tokenRequests[1].audience: Duplicate value: \"a\"",
            "spec.volumeLifecycleModes: Unsupported value: \"Forever\": supported values: \"Persistent\", \"Ephemeral\"",
            "spec.attachedRequired: Invalid value: false: field is immutable",
            "spec.volumeLifecycleModes: Invalid value: [\"Forever\"]: field is immutable",
        ]
    );
}

#[test]
fn csi_nodes_list_unique_drivers_fixed_but_for_their_count() {
    let node = |count: i64, id: &str| {
        json!({"spec": {"drivers": [{"name": "csi.example.com", "nodeID": id,
            "topologyKeys": ["topology.example.com/zone"], "allocatable": {"count": count}}]}})
    };
    assert!(CSINodeStrategy.validate(&node(3, "n1")).is_empty());
    assert!(CSINodeStrategy
        .validate_update(&node(5, "n1"), &node(3, "n1"))
        .is_empty());
    assert_eq!(
        CSINodeStrategy.validate_update(&node(3, "n2"), &node(3, "n1"))[0].field,
        "spec.drivers"
    );
    let bad = json!({"spec": {"drivers": [
        {"name": "d.example.com", "nodeID": ""},
        {"name": "d.example.com", "nodeID": "x".repeat(193), "allocatable": {"count": -1}}
    ]}});
    assert_eq!(
        messages(CSINodeStrategy.validate(&bad)),
        [
            "spec.drivers[0].nodeID: Required value".to_string(),
            format!("spec.drivers[1].nodeID: Invalid value: \"{}\": must be 192 characters or less", "x".repeat(193)),
            "spec.drivers[1].allocatable.count: Invalid value: -1: must be greater than or equal to 0".to_string(),
            "spec.drivers[1].name: Duplicate value: \"d.example.com\"".to_string(),
        ]
    );
}

#[test]
fn volume_attachments_name_one_source_and_never_change() {
    let attachment = |source: Value| json!({"spec": {"attacher": "csi.example.com", "nodeName": "node-1", "source": source}});
    let pv = attachment(json!({"persistentVolumeName": "pv-1"}));
    assert!(VolumeAttachmentStrategy.validate(&pv).is_empty());
    assert_eq!(
        messages(VolumeAttachmentStrategy.validate(&attachment(json!({})))),
        ["spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"]
    );
    assert_eq!(
        messages(VolumeAttachmentStrategy.validate(&attachment(
            json!({"persistentVolumeName": "pv", "inlineVolumeSpec": {}})
        ))),
        ["spec.source: Forbidden: must specify exactly one of inlineVolumeSpec and persistentVolumeName"]
    );
    let moved = json!({"spec": {"attacher": "csi.example.com", "nodeName": "node-2",
        "source": {"persistentVolumeName": "pv-1"}}});
    assert_eq!(
        VolumeAttachmentStrategy.validate_update(&moved, &pv)[0].field,
        "spec"
    );
}

#[test]
fn capacities_and_attribute_classes() {
    let capacity = json!({"storageClassName": "fast", "capacity": "-1Gi",
        "nodeTopology": {"matchLabels": {"zone": "a"}}});
    assert_eq!(
        messages(CSIStorageCapacityStrategy.validate(&capacity)),
        ["capacity: Invalid value: \"-1Gi\": must be greater than or equal to 0"]
    );
    let mut moved = capacity.clone();
    moved["storageClassName"] = json!("slow");
    assert_eq!(
        messages(CSIStorageCapacityStrategy.validate_update(&moved, &capacity)),
        ["storageClassName: Invalid value: \"slow\": field is immutable"]
    );
    let class = json!({"driverName": "csi.example.com", "parameters": {"iops": "100"}});
    assert!(VolumeAttributesClassStrategy.validate(&class).is_empty());
    assert_eq!(
        messages(VolumeAttributesClassStrategy.validate(&json!({"driverName": ""}))),
        [
            "driverName: Required value",
            "parameters: Required value: must contain at least one key/value pair"
        ]
    );
    let mut changed = class.clone();
    changed["parameters"]["iops"] = json!("200");
    assert_eq!(
        messages(VolumeAttributesClassStrategy.validate_update(&changed, &class)),
        ["parameters: Forbidden: updates to parameters are forbidden."]
    );
}
