//! CSIDrivers: what the cluster knows of an installed CSI driver, with upstream's defaults
//! for every switch; whether it attaches and which volume lifecycles it serves never change.

use serde_json::{json, Value};

use super::immutable;
use crate::error::Cause;
use crate::strategy::{at, default_at, Strategy};

const FS_GROUP_POLICIES: &[&str] = &["File", "None", "ReadWriteOnceWithFSType"];
const LIFECYCLE_MODES: &[&str] = &["Persistent", "Ephemeral"];
const MIN_TOKEN_SECONDS: i64 = 600;
const MAX_TOKEN_SECONDS: i64 = 1 << 32;

pub struct CSIDriverStrategy;

impl Strategy for CSIDriverStrategy {
    /// SetDefaults_CSIDriver (with SELinuxMountReadWriteOncePod on, as in 1.35).
    fn prepare_for_create(&self, obj: &mut Value) {
        for (field, value) in [
            ("attachRequired", json!(true)),
            ("podInfoOnMount", json!(false)),
            ("storageCapacity", json!(false)),
            ("fsGroupPolicy", json!("ReadWriteOnceWithFSType")),
            ("requiresRepublish", json!(false)),
            ("seLinuxMount", json!(false)),
        ] {
            default_at(obj, &["spec", field], value);
        }
        let modes = at(obj, &["spec", "volumeLifecycleModes"])
            .and_then(Value::as_array)
            .is_some_and(|m| !m.is_empty());
        if !modes {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
            }
        }
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.prepare_for_create(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let spec = &obj["spec"];
        let mut causes = Vec::new();
        // Upstream's path says "attachedRequired".
        for (field, path) in [
            ("attachRequired", "spec.attachedRequired"),
            ("podInfoOnMount", "spec.podInfoOnMount"),
            ("storageCapacity", "spec.storageCapacity"),
        ] {
            if spec.get(field).is_none_or(Value::is_null) {
                causes.push(Cause::required(path));
            }
        }
        if let Some(policy) = spec.get("fsGroupPolicy").and_then(Value::as_str) {
            if !FS_GROUP_POLICIES.contains(&policy) {
                causes.push(Cause::not_supported(
                    "spec.fsGroupPolicy",
                    policy,
                    FS_GROUP_POLICIES,
                ));
            }
        }
        let mut audiences = Vec::new();
        for (i, request) in spec["tokenRequests"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let path = format!("spec.tokenRequests[{i}]");
            let audience = request["audience"].as_str().unwrap_or_default();
            if audiences.contains(&audience) {
                causes.push(Cause::duplicate(
                    &format!("{path}.audience"),
                    crate::validation::quote(audience),
                ));
                continue;
            }
            audiences.push(audience);
            if let Some(seconds) = request["expirationSeconds"].as_i64() {
                if seconds < MIN_TOKEN_SECONDS {
                    causes.push(Cause::invalid(
                        &format!("{path}.expirationSeconds"),
                        seconds,
                        "may not specify a duration less than 10 minutes",
                    ));
                }
                if seconds > MAX_TOKEN_SECONDS {
                    causes.push(Cause::invalid(
                        &format!("{path}.expirationSeconds"),
                        seconds,
                        "may not specify a duration larger than 2^32 seconds",
                    ));
                }
            }
        }
        for mode in spec["volumeLifecycleModes"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let mode = mode.as_str().unwrap_or_default();
            if !LIFECYCLE_MODES.contains(&mode) {
                causes.push(Cause::not_supported(
                    "spec.volumeLifecycleModes",
                    mode,
                    LIFECYCLE_MODES,
                ));
            }
        }
        if spec.get("seLinuxMount").is_none_or(Value::is_null) {
            causes.push(Cause::required("spec.seLinuxMount"));
        }
        if let Some(period) = spec["nodeAllocatableUpdatePeriodSeconds"].as_i64() {
            if period < 10 {
                causes.push(Cause::invalid(
                    "spec.nodeAllocatableUpdatePeriodSeconds",
                    period,
                    "must be greater than or equal to 10 seconds",
                ));
            }
        }
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = self.validate(new);
        let attach = |o: &Value| o["spec"]["attachRequired"].clone();
        if attach(new) != attach(old) {
            causes.push(immutable("spec.attachedRequired", Some(&attach(new))));
        }
        let modes = |o: &Value| o["spec"]["volumeLifecycleModes"].clone();
        if modes(new) != modes(old) {
            causes.push(immutable("spec.volumeLifecycleModes", Some(&modes(new))));
        }
        causes
    }
}
