//! Dynamic resource allocation (resource.k8s.io/v1, GA in 1.34; upstream's
//! pkg/apis/resource/validation and pkg/registry/resource): DeviceClasses, ResourceClaims
//! (whose spec is fixed once made, and whose allocation is set once, by the scheduler, through
//! `status`), ResourceClaimTemplates, and the ResourceSlices drivers publish. Their v1
//! defaults (a request asks for one device unless it says otherwise) are upstream's.
//!
//! Not checked here: CEL selectors compile (the scheduler reports one that does not), and the
//! opaque driver parameters' contents.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::error::Cause;
use crate::strategy::Strategy;
use crate::validation::names::{is_dns1123_label, is_dns1123_subdomain};
use crate::validation::quote;

const ALLOCATION_MODES: &[&str] = &["All", "ExactCount"];
/// upstream's ResourceClaimReservedForMaxSize.
const RESERVED_FOR_MAX: usize = 256;
/// upstream's DeviceRequestsMaxSize, ResourceSliceMaxDevices.
const REQUESTS_MAX: usize = 32;
const DEVICES_MAX: usize = 128;

fn items<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value[key].as_array().map(Vec::as_slice).unwrap_or_default()
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_default()
}

/// v1's defaults of one device request (SetDefaults_ExactDeviceRequest, of subrequests too).
fn default_request(request: &mut Value) {
    let Some(map) = request.as_object_mut() else {
        return;
    };
    let mode = map
        .entry("allocationMode")
        .or_insert_with(|| json!("ExactCount"))
        .clone();
    if mode == "ExactCount" {
        map.entry("count").or_insert(json!(1));
    }
    if let Some(tolerations) = map.get_mut("tolerations").and_then(Value::as_array_mut) {
        for t in tolerations.iter_mut().filter_map(Value::as_object_mut) {
            t.entry("operator").or_insert(json!("Equal"));
        }
    }
}

/// The defaults of a claim spec (in a claim, or a template's).
fn default_claim_spec(spec: &mut Value) {
    let Some(requests) = spec
        .pointer_mut("/devices/requests")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for request in requests {
        if let Some(exactly) = request.get_mut("exactly") {
            default_request(exactly);
        }
        if let Some(subs) = request
            .get_mut("firstAvailable")
            .and_then(Value::as_array_mut)
        {
            subs.iter_mut().for_each(default_request);
        }
    }
}

fn validate_selectors(selectors: &[Value], field: &str, causes: &mut Vec<Cause>) {
    for (i, s) in selectors.iter().enumerate() {
        let path = format!("{field}[{i}].cel.expression");
        match s.pointer("/cel/expression").and_then(Value::as_str) {
            None | Some("") => causes.push(Cause::required(&path)),
            Some(_) => {}
        }
    }
}

/// One exact request or subrequest: a class, a mode and its count, its selectors.
fn validate_exact(request: &Value, field: &str, causes: &mut Vec<Cause>) {
    let class = text(request, "deviceClassName");
    if class.is_empty() {
        causes.push(Cause::required(&format!("{field}.deviceClassName")));
    } else {
        for m in is_dns1123_subdomain(class) {
            causes.push(Cause::invalid(
                &format!("{field}.deviceClassName"),
                quote(class),
                &m,
            ));
        }
    }
    let mode = text(request, "allocationMode");
    if !ALLOCATION_MODES.contains(&mode) {
        causes.push(Cause::not_supported(
            &format!("{field}.allocationMode"),
            mode,
            ALLOCATION_MODES,
        ));
    }
    let count = request["count"].as_i64();
    match (mode, count) {
        ("ExactCount", Some(c)) if c <= 0 => causes.push(Cause::invalid(
            &format!("{field}.count"),
            c,
            "must be greater than zero",
        )),
        ("All", Some(c)) if c != 0 => causes.push(Cause::invalid(
            &format!("{field}.count"),
            c,
            "must not be specified when allocationMode is 'All'",
        )),
        _ => {}
    }
    validate_selectors(
        items(request, "selectors"),
        &format!("{field}.selectors"),
        causes,
    );
}

fn validate_claim_spec(spec: &Value, field: &str, causes: &mut Vec<Cause>) {
    let requests = spec
        .pointer("/devices/requests")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let path = format!("{field}.devices.requests");
    if requests.len() > REQUESTS_MAX {
        causes.push(Cause::too_many(&path, requests.len(), REQUESTS_MAX));
    }
    let mut names = BTreeSet::new();
    for (i, request) in requests.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let name = text(request, "name");
        if name.is_empty() {
            causes.push(Cause::required(&format!("{at}.name")));
        } else {
            for m in is_dns1123_label(name) {
                causes.push(Cause::invalid(&format!("{at}.name"), quote(name), &m));
            }
            if !names.insert(name) {
                causes.push(Cause::duplicate(&format!("{at}.name"), quote(name)));
            }
        }
        match (request.get("exactly"), request.get("firstAvailable")) {
            (Some(exactly), None) => validate_exact(exactly, &format!("{at}.exactly"), causes),
            (None, Some(subs)) => {
                let subs = subs.as_array().map(Vec::as_slice).unwrap_or_default();
                if subs.is_empty() {
                    causes.push(Cause::required(&format!("{at}.firstAvailable")));
                }
                for (j, sub) in subs.iter().enumerate() {
                    let sub_at = format!("{at}.firstAvailable[{j}]");
                    let sub_name = text(sub, "name");
                    if sub_name.is_empty() {
                        causes.push(Cause::required(&format!("{sub_at}.name")));
                    }
                    validate_exact(sub, &sub_at, causes);
                }
            }
            (Some(_), Some(_)) => causes.push(Cause::invalid(
                &at,
                "{...}",
                "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
            )),
            (None, None) => causes.push(Cause::required_because(
                &at,
                "exactly one of `exactly` or `firstAvailable` is required",
            )),
        }
    }
}

/// A claim's (or a template's) spec is fixed once made.
fn spec_immutable(new: &Value, old: &Value) -> Option<Cause> {
    (new["spec"] != old["spec"]).then(|| Cause::invalid("spec", "{...}", "field is immutable"))
}

pub struct DeviceClassStrategy;

impl Strategy for DeviceClassStrategy {
    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        validate_selectors(
            items(&obj["spec"], "selectors"),
            "spec.selectors",
            &mut causes,
        );
        causes
    }

    fn generation_changes(&self, new: &Value, old: &Value) -> bool {
        new["spec"] != old["spec"]
    }
}

pub struct ResourceClaimStrategy;

impl Strategy for ResourceClaimStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec") {
            default_claim_spec(spec);
        }
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        validate_claim_spec(&obj["spec"], "spec", &mut causes);
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = self.validate(new);
        causes.extend(spec_immutable(new, old));
        causes
    }

    /// The allocation is set once and only dropped when nothing uses the claim; consumers are
    /// recorded only on an allocated claim, each once.
    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let (allocation, before) = (&new["status"]["allocation"], &old["status"]["allocation"]);
        let reserved = items(&new["status"], "reservedFor");
        if !before.is_null() && !allocation.is_null() && allocation != before {
            causes.push(Cause::invalid(
                "status.allocation",
                "{...}",
                "field is immutable",
            ));
        }
        if allocation.is_null() && !reserved.is_empty() {
            causes.push(Cause::forbidden(
                "status.reservedFor",
                "may not be specified when `allocated` is not set",
            ));
        }
        if reserved.len() > RESERVED_FOR_MAX {
            causes.push(Cause::too_many(
                "status.reservedFor",
                reserved.len(),
                RESERVED_FOR_MAX,
            ));
        }
        let mut uids = BTreeSet::new();
        for (i, consumer) in reserved.iter().enumerate() {
            let uid = text(consumer, "uid");
            if uid.is_empty() {
                causes.push(Cause::required(&format!("status.reservedFor[{i}].uid")));
            } else if !uids.insert(uid) {
                causes.push(Cause::duplicate(
                    &format!("status.reservedFor[{i}].uid"),
                    quote(uid),
                ));
            }
            if text(consumer, "resource").is_empty() {
                causes.push(Cause::required(&format!(
                    "status.reservedFor[{i}].resource"
                )));
            }
            if text(consumer, "name").is_empty() {
                causes.push(Cause::required(&format!("status.reservedFor[{i}].name")));
            }
        }
        causes
    }
}

pub struct ResourceClaimTemplateStrategy;

impl Strategy for ResourceClaimTemplateStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(spec) = obj.pointer_mut("/spec/spec") {
            default_claim_spec(spec);
        }
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        validate_claim_spec(&obj["spec"]["spec"], "spec.spec", &mut causes);
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = self.validate(new);
        causes.extend(spec_immutable(new, old));
        causes
    }
}

pub struct ResourceSliceStrategy;

/// Which of the node choices a slice makes.
const NODE_CHOICES: &[&str] = &[
    "nodeName",
    "nodeSelector",
    "allNodes",
    "perDeviceNodeSelection",
];

impl Strategy for ResourceSliceStrategy {
    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let spec = &obj["spec"];
        let driver = text(spec, "driver");
        if driver.is_empty() {
            causes.push(Cause::required("spec.driver"));
        } else {
            for m in is_dns1123_subdomain(driver) {
                causes.push(Cause::invalid("spec.driver", quote(driver), &m));
            }
        }
        let pool = &spec["pool"];
        if text(pool, "name").is_empty() {
            causes.push(Cause::required("spec.pool.name"));
        }
        match pool["resourceSliceCount"].as_i64() {
            Some(n) if n > 0 => {}
            Some(n) => causes.push(Cause::invalid(
                "spec.pool.resourceSliceCount",
                n,
                "must be greater than zero",
            )),
            None => causes.push(Cause::required("spec.pool.resourceSliceCount")),
        }
        let chosen: Vec<&str> = NODE_CHOICES
            .iter()
            .copied()
            .filter(|c| match &spec[*c] {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::String(s) => !s.is_empty(),
                _ => true,
            })
            .collect();
        if chosen.len() != 1 {
            let why = if chosen.is_empty() {
                "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
            } else {
                "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"
            };
            causes.push(Cause::invalid("spec", "{...}", why));
        }
        let devices = items(spec, "devices");
        if devices.len() > DEVICES_MAX {
            causes.push(Cause::too_many("spec.devices", devices.len(), DEVICES_MAX));
        }
        let mut names = BTreeSet::new();
        for (i, device) in devices.iter().enumerate() {
            let field = format!("spec.devices[{i}].name");
            let name = text(device, "name");
            if name.is_empty() {
                causes.push(Cause::required(&field));
                continue;
            }
            for m in is_dns1123_label(name) {
                causes.push(Cause::invalid(&field, quote(name), &m));
            }
            if !names.insert(name) {
                causes.push(Cause::duplicate(&field, quote(name)));
            }
        }
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = self.validate(new);
        for field in ["driver", "nodeName"] {
            if new["spec"][field] != old["spec"][field] {
                causes.push(Cause::invalid(
                    &format!("spec.{field}"),
                    quote(text(&new["spec"], field)),
                    "field is immutable",
                ));
            }
        }
        causes
    }

    fn generation_changes(&self, new: &Value, old: &Value) -> bool {
        new["spec"] != old["spec"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn claims_get_v1_defaults_and_upstreams_checks() {
        let mut claim = json!({"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}},
            {"name": "gpu", "exactly": {"deviceClassName": "Bad_Class", "allocationMode": "ExactCount", "count": 0}},
            {"name": "none"}
        ]}}});
        ResourceClaimStrategy.prepare_for_create(&mut claim);
        assert_eq!(
            claim["spec"]["devices"]["requests"][0]["exactly"],
            json!({"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1})
        );
        let said = messages(&ResourceClaimStrategy.validate(&claim));
        assert!(
            said.contains(&"spec.devices.requests[1].name: Duplicate value: \"gpu\"".to_string()),
            "{said:?}"
        );
        assert!(
            said.iter().any(|m| m.starts_with(
                "spec.devices.requests[1].exactly.deviceClassName: Invalid value: \"Bad_Class\""
            )),
            "{said:?}"
        );
        assert!(said.contains(&"spec.devices.requests[1].exactly.count: Invalid value: 0: must be greater than zero".to_string()), "{said:?}");
        assert!(said.contains(&"spec.devices.requests[2]: Required value: exactly one of `exactly` or `firstAvailable` is required".to_string()), "{said:?}");
    }

    #[test]
    fn an_allocation_is_set_once_and_consumers_need_one() {
        let old = json!({"status": {}});
        let reserved =
            json!({"status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "1"}]}});
        let said = messages(&ResourceClaimStrategy.validate_status_update(&reserved, &old));
        assert_eq!(
            said,
            ["status.reservedFor: Forbidden: may not be specified when `allocated` is not set"]
        );
        let allocated =
            json!({"status": {"allocation": {"devices": {"results": [{"device": "a"}]}}}});
        assert!(ResourceClaimStrategy
            .validate_status_update(&allocated, &old)
            .is_empty());
        let changed =
            json!({"status": {"allocation": {"devices": {"results": [{"device": "b"}]}}}});
        let said = messages(&ResourceClaimStrategy.validate_status_update(&changed, &allocated));
        assert_eq!(
            said,
            ["status.allocation: Invalid value: {...}: field is immutable"]
        );
    }

    #[test]
    fn slices_choose_one_node_scope_and_name_devices_once() {
        let slice = json!({"spec": {"driver": "gpu.example.com", "pool": {"name": "n", "resourceSliceCount": 1},
            "nodeName": "node-0", "allNodes": true,
            "devices": [{"name": "gpu-0"}, {"name": "gpu-0"}]}});
        let said = messages(&ResourceSliceStrategy.validate(&slice));
        assert!(
            said.iter()
                .any(|m| m.ends_with("but multiple fields are set")),
            "{said:?}"
        );
        assert!(
            said.contains(&"spec.devices[1].name: Duplicate value: \"gpu-0\"".to_string()),
            "{said:?}"
        );
    }
}
