//! VolumeAttachments: a request that a driver attach a volume (named, or inline) to a node;
//! the spec never changes, the attacher reports through the status.

use serde_json::Value;

use super::{csi_driver_name, immutable};
use crate::error::Cause;
use crate::strategy::Strategy;
use crate::validation::names::name_is_dns_subdomain;
use crate::validation::quote;

const MAX_ERROR_MESSAGE: usize = 1024;
const MAX_METADATA_SIZE: usize = 256 * 1024;

pub struct VolumeAttachmentStrategy;

fn validate_attachment(obj: &Value) -> Vec<Cause> {
    let spec = &obj["spec"];
    let mut causes = Vec::new();
    let attacher = spec["attacher"].as_str().unwrap_or_default();
    if attacher.is_empty() {
        causes.push(Cause::required("spec.attacher"));
    }
    let source = &spec["source"];
    let named = source["persistentVolumeName"].as_str();
    let inline = source.get("inlineVolumeSpec").filter(|v| !v.is_null());
    match (named, inline) {
        (None, None) => causes.push(Cause::required_because(
            "spec.source",
            "must specify exactly one of inlineVolumeSpec and persistentVolumeName",
        )),
        (Some(_), Some(_)) => causes.push(Cause::forbidden(
            "spec.source",
            "must specify exactly one of inlineVolumeSpec and persistentVolumeName",
        )),
        (Some(""), None) => causes.push(Cause::required_because(
            "spec.source.persistentVolumeName",
            "must specify non empty persistentVolumeName",
        )),
        _ => {}
    }
    let node = spec["nodeName"].as_str().unwrap_or_default();
    for m in name_is_dns_subdomain(node, false) {
        causes.push(Cause::invalid("spec.nodeName", quote(node), &m));
    }
    let metadata_size: usize = obj["status"]["attachmentMetadata"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
                .sum()
        })
        .unwrap_or(0);
    if metadata_size > MAX_METADATA_SIZE {
        causes.push(Cause::too_long(
            "status.attachmentMetadata",
            MAX_METADATA_SIZE,
        ));
    }
    for which in ["attachError", "detachError"] {
        let error = &obj["status"][which];
        if error["message"]
            .as_str()
            .is_some_and(|m| m.len() > MAX_ERROR_MESSAGE)
        {
            // Upstream states the metadata limit here, not the message's.
            causes.push(Cause::too_long(
                &format!("status.{which}.message"),
                MAX_METADATA_SIZE,
            ));
        }
        if let Some(code) = error["errorCode"].as_i64().filter(|c| *c < 0) {
            causes.push(Cause::invalid(
                &format!("status.{which}.errorCode"),
                code,
                "must be between 0 and 2147483647, inclusive",
            ));
        }
    }
    // The v1 rules on top (ValidateVolumeAttachmentV1).
    causes.extend(csi_driver_name(attacher, "spec.attacher"));
    if let Some(pv) = named.filter(|n| !n.is_empty()) {
        for m in name_is_dns_subdomain(pv, false) {
            causes.push(Cause::invalid(
                "spec.source.persistentVolumeName",
                quote(pv),
                &m,
            ));
        }
    }
    causes
}

impl Strategy for VolumeAttachmentStrategy {
    fn validate(&self, obj: &Value) -> Vec<Cause> {
        validate_attachment(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = validate_attachment(new);
        if new.get("spec") != old.get("spec") {
            causes.push(immutable("spec", new.get("spec")));
        }
        causes
    }
}
