//! APIServices (apiregistration.k8s.io/v1; kube-aggregator's validation): which server
//! answers a group-version, named `<version>.<group>`. Local ones (no Service) are the
//! server's own, one per built-in group-version, created at start; the others name a
//! Service to proxy to.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::strategy::Strategy;
use crate::validation::names::{is_dns1035_label, is_dns1123_subdomain};
use crate::validation::net::is_valid_port_num;
use crate::validation::{path_segment_name, quote};

pub struct APIServiceStrategy;

fn text<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj["spec"][field].as_str().unwrap_or_default()
}

/// The name an APIService must have: `<version>.<group>` (`v1.` for the core group).
pub fn apiservice_name(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

impl Strategy for APIServiceStrategy {
    /// The name is checked against the spec in `validate`, as upstream's name function
    /// does.
    fn name_problems(&self, name: &str) -> Vec<String> {
        path_segment_name(name, false)
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(service) = obj
            .get_mut("spec")
            .and_then(|s| s.get_mut("service"))
            .and_then(Value::as_object_mut)
        {
            service.entry("port").or_insert_with(|| json!(443));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.prepare_for_create(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let (group, version) = (text(obj, "group"), text(obj, "version"));
        let required = apiservice_name(group, version);
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        if name != required {
            causes.push(Cause::invalid(
                "metadata.name",
                quote(name),
                &format!(
                    "must be `spec.version+\".\"+spec.group`: {}",
                    quote(&required)
                ),
            ));
        }
        if group.is_empty() && version != "v1" {
            causes.push(Cause::required_because(
                "spec.group",
                "only v1 may have an empty group and it better be legacy kube",
            ));
        }
        if !group.is_empty() {
            for m in is_dns1123_subdomain(group) {
                causes.push(Cause::invalid("spec.group", quote(group), &m));
            }
        }
        for m in is_dns1035_label(version) {
            causes.push(Cause::invalid("spec.version", quote(version), &m));
        }
        let spec = &obj["spec"];
        let group_priority = spec["groupPriorityMinimum"].as_i64().unwrap_or(0);
        if !(1..=20000).contains(&group_priority) {
            causes.push(Cause::invalid(
                "spec.groupPriorityMinimum",
                group_priority,
                "must be positive and less than 20000",
            ));
        }
        let version_priority = spec["versionPriority"].as_i64().unwrap_or(0);
        if !(1..=1000).contains(&version_priority) {
            causes.push(Cause::invalid(
                "spec.versionPriority",
                version_priority,
                "must be positive and less than 1000",
            ));
        }
        let ca_bundle = spec["caBundle"].as_str().unwrap_or_default();
        let insecure = spec["insecureSkipTLSVerify"].as_bool() == Some(true);
        let Some(service) = spec.get("service").filter(|s| !s.is_null()) else {
            if !ca_bundle.is_empty() {
                // Upstream counts the decoded bytes; base64 is 4 characters for 3.
                let bytes = ca_bundle.trim_end_matches('=').len() * 3 / 4;
                causes.push(Cause::invalid(
                    "spec.caBundle",
                    format!("\"{bytes} bytes\""),
                    "local APIServices may not have a caBundle",
                ));
            }
            if insecure {
                causes.push(Cause::invalid(
                    "spec.insecureSkipTLSVerify",
                    true,
                    "local APIServices may not have insecureSkipTLSVerify",
                ));
            }
            return causes;
        };
        for field in ["namespace", "name"] {
            if service[field].as_str().unwrap_or_default().is_empty() {
                causes.push(Cause::required(&format!("spec.service.{field}")));
            }
        }
        let port = service["port"].as_i64().unwrap_or(443);
        let problems = is_valid_port_num(port);
        if !problems.is_empty() {
            causes.push(Cause::invalid(
                "spec.service.port",
                port,
                &format!("port is not valid: {}", problems.join(", ")),
            ));
        }
        if insecure && !ca_bundle.is_empty() {
            causes.push(Cause::invalid(
                "spec.insecureSkipTLSVerify",
                true,
                "may not be true if caBundle is present",
            ));
        }
        causes
    }

    /// Status writes carry conditions only; the spec was checked when it was written.
    fn validate_status_update(&self, _new: &Value, _old: &Value) -> Vec<Cause> {
        Vec::new()
    }
}

/// The label of APIServices the server registers itself: `onstart` for the built-in ones,
/// `true` for custom resources' (kept while a definition serves the group-version).
pub const AUTOMANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";

/// The local APIService of a built-in group-version, as kube-apiserver registers it.
pub fn local_apiservice(group: &str, version: &str, now: &str) -> Value {
    served_locally(
        group,
        version,
        crate::catalogue::group_priority(group),
        crate::catalogue::version_priority(group, version),
        "onstart",
        now,
    )
}

/// The APIService of a group-version custom resources are served in (upstream's
/// crdRegistrationController: low group priority, versions sorted kube-like).
pub fn custom_resource_apiservice(group: &str, version: &str, now: &str) -> Value {
    served_locally(group, version, 1000, 100, "true", now)
}

fn served_locally(
    group: &str,
    version: &str,
    group_priority: u32,
    version_priority: u32,
    managed: &str,
    now: &str,
) -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {
            "name": apiservice_name(group, version),
            "labels": {AUTOMANAGED_LABEL: managed},
        },
        "spec": {
            "group": group,
            "version": version,
            "groupPriorityMinimum": group_priority,
            "versionPriority": version_priority,
        },
        "status": {"conditions": [{
            "type": "Available",
            "status": "True",
            "lastTransitionTime": now,
            "reason": "Local",
            "message": "Local APIServices are always available",
        }]},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(obj: &Value) -> Vec<String> {
        APIServiceStrategy
            .validate(obj)
            .iter()
            .map(Cause::full_message)
            .collect()
    }

    #[test]
    fn local_apiservices_are_valid_and_available() {
        let local = local_apiservice("apps", "v1", "2026-01-01T00:00:00Z");
        assert_eq!(local["metadata"]["name"], "v1.apps");
        assert_eq!(local["spec"]["groupPriorityMinimum"], 17800);
        assert!(messages(&local).is_empty());
        assert!(messages(&local_apiservice("", "v1", "2026-01-01T00:00:00Z")).is_empty());
    }

    #[test]
    fn names_priorities_and_tls_are_checked() {
        let api = json!({"metadata": {"name": "v1.x.example.com"}, "spec": {
            "group": "x.example.com", "version": "v1", "groupPriorityMinimum": 0,
            "versionPriority": 1001, "caBundle": "YWJj"
        }});
        assert_eq!(
            messages(&api),
            [
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
                "spec.caBundle: Invalid value: \"3 bytes\": local APIServices may not have a caBundle",
            ]
        );
        let remote = json!({"metadata": {"name": "v1.x.example.com"}, "spec": {
            "group": "x.example.com", "version": "v1", "groupPriorityMinimum": 10,
            "versionPriority": 10, "caBundle": "YWJj", "insecureSkipTLSVerify": true,
            "service": {"port": 70000}
        }});
        assert_eq!(
            messages(&remote),
            [
                "spec.service.namespace: Required value",
                "spec.service.name: Required value",
                "spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive",
                "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
            ]
        );
        let core = json!({"metadata": {"name": "v2."}, "spec": {
            "version": "v2", "groupPriorityMinimum": 1, "versionPriority": 1
        }});
        assert_eq!(
            messages(&core),
            ["spec.group: Required value: only v1 may have an empty group and it better be legacy kube"]
        );
    }
}
