//! Pods: upstream's defaults for pod specs (shared with every pod template) and graceful
//! deletion of pods bound to a node.

use crate::types::{PodPhase, RestartPolicy};
use serde_json::{json, Value};

use super::{at, at_mut, default_at, Strategy};
use crate::error::Cause;
use crate::validation::names::is_dns1123_label;

pub struct PodStrategy;

/// Defaults of a PodSpec that clients rely on (SetDefaults_PodSpec, SetDefaults_Container).
pub fn default_pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default_at(spec, &["restartPolicy"], json!("Always"));
    default_at(spec, &["terminationGracePeriodSeconds"], json!(30));
    default_at(spec, &["dnsPolicy"], json!("ClusterFirst"));
    default_at(spec, &["schedulerName"], json!("default-scheduler"));
    default_at(spec, &["securityContext"], json!({}));
    default_at(spec, &["enableServiceLinks"], json!(true));
    for list in ["containers", "initContainers"] {
        if let Some(Value::Array(containers)) = spec.get_mut(list) {
            for c in containers.iter_mut().filter(|c| c.is_object()) {
                default_container(c);
            }
        }
    }
    if let Some(Value::Array(volumes)) = spec.get_mut("volumes") {
        for v in volumes.iter_mut() {
            default_volume(v);
        }
    }
}

/// SetDefaults_Volume: a volume that names no source is an emptyDir.
fn default_volume(v: &mut Value) {
    let Some(map) = v.as_object_mut() else {
        return;
    };
    if map.iter().all(|(k, value)| k == "name" || value.is_null()) {
        map.insert("emptyDir".into(), json!({}));
    }
}

fn default_container(c: &mut Value) {
    default_at(
        c,
        &["terminationMessagePath"],
        json!("/dev/termination-log"),
    );
    default_at(c, &["terminationMessagePolicy"], json!("File"));
    default_at(c, &["resources"], json!({}));
    let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
    // Untagged or :latest images are pulled every time, pinned ones only if missing.
    let last = image.rsplit('/').next().unwrap_or_default();
    let policy = if image.contains('@') {
        "IfNotPresent"
    } else {
        match last.split_once(':') {
            Some((_, "latest")) | None => "Always",
            Some(_) => "IfNotPresent",
        }
    };
    default_at(c, &["imagePullPolicy"], json!(policy));
    if let Some(Value::Array(ports)) = c.get_mut("ports") {
        for p in ports.iter_mut().filter(|p| p.is_object()) {
            default_at(p, &["protocol"], json!("TCP"));
        }
    }
    // SetDefaults_ObjectFieldSelector: a field reference names v1 unless it says otherwise.
    if let Some(Value::Array(env)) = c.get_mut("env") {
        for e in env.iter_mut() {
            if let Some(field_ref) = e
                .get_mut("valueFrom")
                .and_then(|v| v.get_mut("fieldRef"))
                .filter(|f| f.is_object())
            {
                default_at(field_ref, &["apiVersion"], json!("v1"));
            }
        }
    }
}

/// Field problems of a PodSpec at `field` (e.g. `spec.template.spec`).
pub fn validate_pod_spec(spec: Option<&Value>, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let containers = spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array);
    let Some(containers) = containers.filter(|c| !c.is_empty()) else {
        causes.push(Cause::required(&format!("{field}.containers")));
        return causes;
    };
    let mut seen = std::collections::HashSet::new();
    for (i, c) in containers.iter().enumerate() {
        let base = format!("{field}.containers[{i}]");
        match c.get("name").and_then(Value::as_str) {
            None | Some("") => causes.push(Cause::required(&format!("{base}.name"))),
            Some(name) => {
                for why in is_dns1123_label(name) {
                    causes.push(Cause::invalid(
                        &format!("{base}.name"),
                        format!("\"{name}\""),
                        &why,
                    ));
                }
                if !seen.insert(name.to_string()) {
                    causes.push(Cause::duplicate(
                        &format!("{base}.name"),
                        format!("\"{name}\""),
                    ));
                }
            }
        }
        if c.get("image")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            causes.push(Cause::required(&format!("{base}.image")));
        }
    }
    if let Some(policy) = spec
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
    {
        if policy.parse::<RestartPolicy>().is_err() {
            causes.push(Cause::not_supported(
                &format!("{field}.restartPolicy"),
                policy,
                &["Always", "Never", "OnFailure"],
            ));
        }
    }
    causes
}

/// Upstream's validateOnlyAddedTolerations: an update may add tolerations and change their
/// tolerationSeconds, but every toleration the pod had must still be there.
fn only_added_tolerations(new: &Value, old: &Value) -> Option<Cause> {
    let list = |pod: &Value| {
        at(pod, &["spec", "tolerations"])
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let without_seconds = |t: &Value| {
        let mut t = t.clone();
        if let Some(m) = t.as_object_mut() {
            m.remove("tolerationSeconds");
        }
        t
    };
    let new = list(new);
    let kept = list(old).iter().all(|o| {
        let o = without_seconds(o);
        new.iter().any(|n| without_seconds(n) == o)
    });
    (!kept).then(|| {
        Cause::forbidden(
            "spec.tolerations",
            "existing toleration can not be modified except its tolerationSeconds",
        )
    })
}

/// Fields an ephemeral container may not set (upstream's validateEphemeralContainers).
const EPHEMERAL_FORBIDDEN: &[&str] = &[
    "ports",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "resources",
    "resizePolicy",
];

/// upstream's ValidatePodEphemeralContainersUpdate: ephemeral containers are only added, each
/// named once in the pod, with an image, without what a debugging container may not have.
fn validate_ephemeral_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let list = |pod: &Value, key: &str| pod["spec"][key].as_array().cloned().unwrap_or_default();
    let (added, before) = (
        list(new, "ephemeralContainers"),
        list(old, "ephemeralContainers"),
    );
    for o in &before {
        let name = o["name"].as_str().unwrap_or_default();
        match added.iter().find(|n| n["name"] == o["name"]) {
            None => causes.push(Cause::forbidden(
                "spec.ephemeralContainers",
                &format!("existing ephemeral containers {name:?} may not be removed\n"),
            )),
            Some(n) if n != o => causes.push(Cause::forbidden(
                &format!("spec.ephemeralContainers[{name}]"),
                &format!("existing ephemeral containers {name:?} may not be changed\n"),
            )),
            Some(_) => {}
        }
    }
    let mut names: std::collections::HashSet<String> = ["containers", "initContainers"]
        .iter()
        .flat_map(|k| list(new, k))
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect();
    let app_names: Vec<String> = list(new, "containers")
        .iter()
        .chain(list(new, "initContainers").iter())
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect();
    for (i, c) in added.iter().enumerate() {
        let base = format!("spec.ephemeralContainers[{i}]");
        match c["name"].as_str() {
            None | Some("") => causes.push(Cause::required(&format!("{base}.name"))),
            Some(name) => {
                for why in is_dns1123_label(name) {
                    causes.push(Cause::invalid(
                        &format!("{base}.name"),
                        format!("\"{name}\""),
                        &why,
                    ));
                }
                if !names.insert(name.to_string()) {
                    causes.push(Cause::duplicate(
                        &format!("{base}.name"),
                        format!("\"{name}\""),
                    ));
                }
            }
        }
        if c["image"].as_str().is_none_or(str::is_empty) {
            causes.push(Cause::required(&format!("{base}.image")));
        }
        for field in EPHEMERAL_FORBIDDEN {
            if c.get(*field)
                .is_some_and(|v| !v.is_null() && *v != json!({}) && *v != json!([]))
            {
                causes.push(Cause::forbidden(
                    &format!("{base}.{field}"),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
        if let Some(target) = c["targetContainerName"].as_str().filter(|t| !t.is_empty()) {
            if !app_names.iter().any(|n| n == target) {
                causes.push(Cause::new(
                    "FieldValueNotFound",
                    &format!("{base}.targetContainerName"),
                    format!("Not found: \"{target}\""),
                ));
            }
        }
    }
    causes
}

/// A pod's QoS class (upstream's GetPodQOS): Guaranteed when every container limits cpu and
/// memory to what it requests, BestEffort when none asks for either, else Burstable.
fn qos_class(pod: &Value) -> &'static str {
    let containers: Vec<Value> = ["containers", "initContainers"]
        .iter()
        .flat_map(|k| pod["spec"][*k].as_array().cloned().unwrap_or_default())
        .collect();
    let names = |c: &Value, which: &str| -> Vec<(String, String)> {
        ["cpu", "memory"]
            .iter()
            .filter_map(|r| {
                let v = &c["resources"][which][*r];
                v.as_str().map(|q| (r.to_string(), q.to_string()))
            })
            .collect()
    };
    if containers
        .iter()
        .all(|c| names(c, "requests").is_empty() && names(c, "limits").is_empty())
    {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let limits = names(c, "limits");
        limits.len() == 2 && names(c, "requests").iter().all(|r| limits.contains(r))
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

impl Strategy for PodStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(spec) = at_mut(obj, &["spec"]) {
            default_pod_spec(spec);
        }
        default_at(obj, &["status", "phase"], json!("Pending"));
        default_at(obj, &["status", "qosClass"], json!("BestEffort"));
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        validate_pod_spec(obj.get("spec"), "spec")
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = self.validate(new);
        // A pod's spec is immutable but for images, activeDeadlineSeconds and tolerations.
        let strip = |v: &Value| {
            let mut s = v.get("spec").cloned().unwrap_or(Value::Null);
            for list in ["containers", "initContainers"] {
                if let Some(Value::Array(cs)) = s.get_mut(list) {
                    for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                        c.remove("image");
                    }
                }
            }
            if let Some(m) = s.as_object_mut() {
                m.remove("activeDeadlineSeconds");
                m.remove("tolerations");
            }
            s
        };
        causes.extend(only_added_tolerations(new, old));
        if strip(new) != strip(old) {
            causes.push(Cause::forbidden(
                "spec",
                "pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations)",
            ));
        }
        causes
    }

    fn validate_subresource_update(
        &self,
        sub: crate::store::update::Subresource,
        new: &Value,
        old: &Value,
    ) -> Vec<Cause> {
        use crate::store::update::Subresource;
        let mut causes = self.validate(new);
        match sub {
            Subresource::EphemeralContainers => causes.extend(validate_ephemeral_update(new, old)),
            Subresource::Resize => {
                if qos_class(new) != qos_class(old) {
                    causes.push(Cause::forbidden(
                        "spec",
                        "Pod QOS Class may not change as a result of resizing",
                    ));
                }
            }
            _ => causes.extend(self.validate_update(new, old)),
        }
        causes
    }

    fn deletes_gracefully(&self) -> bool {
        true
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }

    fn graceful_period(&self, obj: &Value, requested: Option<i64>) -> Option<i64> {
        let mut period = requested
            .or_else(|| at(obj, &["spec", "terminationGracePeriodSeconds"]).and_then(Value::as_i64))
            .unwrap_or(0);
        // An unscheduled pod has nothing to stop, a finished one nothing left to stop.
        let node = at(obj, &["spec", "nodeName"])
            .and_then(Value::as_str)
            .unwrap_or_default();
        if node.is_empty() || PodPhase::terminal(obj) {
            period = 0;
        }
        Some(period)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{default_pod_spec, qos_class, PodStrategy};
    use crate::strategy::Strategy;

    #[test]
    fn ephemeral_containers_are_only_added_and_resizes_keep_the_qos_class() {
        use crate::store::update::Subresource;
        let old = json!({"spec": {"containers": [{"name": "app", "image": "nginx"}],
            "ephemeralContainers": [{"name": "debug-1", "image": "busybox"}]}});
        let mut new = old.clone();
        new["spec"]["ephemeralContainers"] = json!([
            {"name": "debug-1", "image": "busybox:2"},
            {"name": "app", "image": "busybox", "ports": [{"containerPort": 80}],
             "targetContainerName": "nope"}
        ]);
        let said: Vec<String> = PodStrategy
            .validate_subresource_update(Subresource::EphemeralContainers, &new, &old)
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        assert_eq!(
            said,
            [
                "spec.ephemeralContainers[debug-1]: Forbidden: existing ephemeral containers \"debug-1\" may not be changed\n",
                "spec.ephemeralContainers[1].name: Duplicate value: \"app\"",
                "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container",
                "spec.ephemeralContainers[1].targetContainerName: Not found: \"nope\"",
            ]
        );
        let guaranteed = json!({"spec": {"containers": [{"name": "app", "image": "nginx",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]}});
        let mut burstable = guaranteed.clone();
        burstable["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("500m");
        assert_eq!(qos_class(&guaranteed), "Guaranteed");
        assert_eq!(qos_class(&burstable), "Burstable");
        let said =
            PodStrategy.validate_subresource_update(Subresource::Resize, &burstable, &guaranteed);
        assert_eq!(said.len(), 1, "{said:?}");
    }

    #[test]
    fn field_references_name_v1_and_sourceless_volumes_are_empty_dirs() {
        let mut spec = json!({
            "containers": [{"name": "c", "image": "nginx", "env": [
                {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                {"name": "OTHER", "valueFrom": {"fieldRef": {"apiVersion": "v2", "fieldPath": "x"}}},
                {"name": "PLAIN", "value": "1"},
            ]}],
            "volumes": [{"name": "scratch"}, {"name": "config", "configMap": {"name": "cm"}}],
        });
        default_pod_spec(&mut spec);
        let env = &spec["containers"][0]["env"];
        assert_eq!(env[0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(env[1]["valueFrom"]["fieldRef"]["apiVersion"], "v2");
        assert!(env[2].get("valueFrom").is_none());
        assert_eq!(
            spec["volumes"][0],
            json!({"name": "scratch", "emptyDir": {}})
        );
        assert_eq!(
            spec["volumes"][1],
            json!({"name": "config", "configMap": {"name": "cm"}})
        );
    }
}
