//! LimitRanger (upstream's plugin/pkg/admission/limitranger): the LimitRanges of a namespace
//! default the resources of the pods created there (`default` limits, `defaultRequest`
//! requests, noted in the `kubernetes.io/limit-ranger` annotation) and hold pods and claims
//! within their `min`, `max` and `maxLimitRequestRatio`, refusing in upstream's words.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};
use storage::{Interface, ReadRevision};

use super::{namespaced_list, on_main, watched, Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::{RegistryError, Result};
use crate::object::{self, Object};
use crate::types::parse_quantity;
use crate::Registry;

const ANNOTATION: &str = "kubernetes.io/limit-ranger";

pub(super) fn build(registry: &Registry) -> Arc<dyn Plugin> {
    let (ranges, path) = watched(registry, "", "limitranges");
    Arc::new(LimitRanger { ranges, path })
}

struct LimitRanger {
    /// The LimitRanges' storage (their watch cache), as upstream reads its lister.
    ranges: Arc<dyn Interface>,
    path: String,
}

/// A resource list (name → quantity text), sorted by name.
type Resources = BTreeMap<String, String>;

fn resources(value: Option<&Value>) -> Resources {
    value
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_string),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn amount(text: &str) -> f64 {
    parse_quantity(text).unwrap_or(0.0)
}

impl LimitRanger {
    async fn limit_ranges(&self, namespace: &str) -> Result<Vec<Value>> {
        namespaced_list(
            self.ranges.as_ref(),
            &self.path,
            "limitranges",
            namespace,
            ReadRevision::Any,
        )
        .await
    }
}

/// The limits of one type of a LimitRange.
fn limits_of<'a>(range: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    range["spec"]["limits"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |l| l["type"] == kind)
}

/// upstream's mergeContainerResources for one container; what it set, for the annotation.
fn merge_container(
    container: &mut Value,
    requests: &Resources,
    limits: &Resources,
    what: &str,
    notes: &mut Vec<String>,
) {
    let name = container["name"].as_str().unwrap_or_default().to_string();
    let mut set = |field: &str, defaults: &Resources| -> Vec<String> {
        let mut added = Vec::new();
        let slot = &mut container["resources"][field];
        if !slot.is_object() {
            *slot = json!({});
        }
        if let Some(map) = slot.as_object_mut() {
            for (k, v) in defaults {
                if !map.contains_key(k) {
                    map.insert(k.clone(), json!(v));
                    added.push(k.clone());
                }
            }
        }
        added
    };
    let set_limits = set("limits", limits);
    let set_requests = set("requests", requests);
    if !set_requests.is_empty() {
        notes.push(format!(
            "{} request for {what} {name}",
            set_requests.join(", ")
        ));
    }
    if !set_limits.is_empty() {
        notes.push(format!("{} limit for {what} {name}", set_limits.join(", ")));
    }
}

/// upstream's PodMutateLimitFunc for one LimitRange.
fn default_pod(range: &Value, pod: &mut Object) {
    let mut requests = Resources::new();
    let mut limits = Resources::new();
    for limit in limits_of(range, "Container") {
        requests.extend(resources(limit.get("defaultRequest")));
        limits.extend(resources(limit.get("default")));
    }
    let mut notes = Vec::new();
    for (field, what) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        if let Some(list) = object::array_at_mut(pod, &["spec", field]) {
            for container in list.iter_mut() {
                merge_container(container, &requests, &limits, what, &mut notes);
            }
        }
    }
    if !notes.is_empty() {
        let meta = object::meta_mut(pod);
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(map) = annotations.as_object_mut() {
            map.insert(
                ANNOTATION.into(),
                json!(format!("LimitRanger plugin set: {}", notes.join("; "))),
            );
        }
    }
}

fn min_constraint(
    kind: &str,
    name: &str,
    enforced: &str,
    request: &Resources,
    limit: &Resources,
) -> Option<String> {
    let Some(req) = request.get(name) else {
        return Some(format!(
            "minimum {name} usage per {kind} is {enforced}.  No request is specified"
        ));
    };
    if amount(req) < amount(enforced) {
        return Some(format!(
            "minimum {name} usage per {kind} is {enforced}, but request is {req}"
        ));
    }
    let lim = limit.get(name)?;
    (amount(lim) < amount(enforced))
        .then(|| format!("minimum {name} usage per {kind} is {enforced}, but limit is {lim}"))
}

fn max_constraint(
    kind: &str,
    name: &str,
    enforced: &str,
    request: &Resources,
    limit: &Resources,
) -> Option<String> {
    let Some(lim) = limit.get(name) else {
        return Some(format!(
            "maximum {name} usage per {kind} is {enforced}.  No limit is specified"
        ));
    };
    if amount(lim) > amount(enforced) {
        return Some(format!(
            "maximum {name} usage per {kind} is {enforced}, but limit is {lim}"
        ));
    }
    let req = request.get(name)?;
    (amount(req) > amount(enforced))
        .then(|| format!("maximum {name} usage per {kind} is {enforced}, but request is {req}"))
}

fn max_request_constraint(
    kind: &str,
    name: &str,
    enforced: &str,
    request: &Resources,
) -> Option<String> {
    let Some(req) = request.get(name) else {
        return Some(format!(
            "maximum {name} usage per {kind} is {enforced}.  No request is specified"
        ));
    };
    (amount(req) > amount(enforced))
        .then(|| format!("maximum {name} usage per {kind} is {enforced}, but request is {req}"))
}

fn ratio_constraint(
    kind: &str,
    name: &str,
    enforced: &str,
    request: &Resources,
    limit: &Resources,
) -> Option<String> {
    let req = request.get(name).map_or(0.0, |r| amount(r));
    if req == 0.0 {
        return Some(format!("{name} max limit to request ratio per {kind} is {enforced}, but no request is specified or request is 0"));
    }
    let lim = limit.get(name).map_or(0.0, |l| amount(l));
    if lim == 0.0 {
        return Some(format!("{name} max limit to request ratio per {kind} is {enforced}, but no limit is specified or limit is 0"));
    }
    let ratio = lim / req;
    (ratio > amount(enforced)).then(|| {
        format!("{name} max limit to request ratio per {kind} is {enforced}, but provided ratio is {ratio:.6}")
    })
}

/// The min, max and ratio checks of one limit against requests and limits.
fn check(
    limit: &Value,
    kind: &str,
    request: &Resources,
    lim: &Resources,
    errors: &mut Vec<String>,
) {
    for (name, enforced) in resources(limit.get("min")) {
        errors.extend(min_constraint(kind, &name, &enforced, request, lim));
    }
    for (name, enforced) in resources(limit.get("max")) {
        errors.extend(max_constraint(kind, &name, &enforced, request, lim));
    }
    for (name, enforced) in resources(limit.get("maxLimitRequestRatio")) {
        errors.extend(ratio_constraint(kind, &name, &enforced, request, lim));
    }
}

/// The pod's effective requests or limits (`field`): its containers and sidecars together,
/// or an init container with the sidecars started before it, whichever is larger.
fn pod_total(pod: &Value, field: &str) -> Resources {
    let of = |c: &Value| resources(c["resources"].get(field));
    let mut binary: BTreeMap<String, bool> = BTreeMap::new();
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    let mut add = |into: &mut BTreeMap<String, f64>, from: &Resources| {
        for (k, v) in from {
            *into.entry(k.clone()).or_default() += amount(v);
            binary.entry(k.clone()).or_insert_with(|| v.contains('i'));
        }
    };
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        add(&mut sums, &of(c));
    }
    let mut sidecars: BTreeMap<String, f64> = BTreeMap::new();
    let mut init_peak: BTreeMap<String, f64> = BTreeMap::new();
    for c in pod["spec"]["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if c["restartPolicy"] == "Always" {
            add(&mut sidecars, &of(c));
        } else {
            let mut at = sidecars.clone();
            add(&mut at, &of(c));
            for (k, v) in at {
                let peak = init_peak.entry(k).or_default();
                *peak = peak.max(v);
            }
        }
    }
    for (k, v) in sidecars {
        *sums.entry(k).or_default() += v;
    }
    for (k, v) in init_peak {
        let total = sums.entry(k).or_default();
        *total = total.max(v);
    }
    sums.into_iter()
        .map(|(k, v)| {
            let text = quantity_text(v, binary.get(&k).copied().unwrap_or(false));
            (k, text)
        })
        .collect()
}

/// A sum as Go's Quantity prints it: binary suffixes (the largest that divides) for binary
/// quantities, otherwise whole units or milli-units.
fn quantity_text(value: f64, binary: bool) -> String {
    if binary && value >= 1024.0 && value.fract() == 0.0 {
        let mut n = value as u64;
        let mut unit = 0;
        while n.is_multiple_of(1024) && unit < 6 {
            n /= 1024;
            unit += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][unit];
        return format!("{n}{suffix}");
    }
    if value.fract() == 0.0 {
        format!("{}", value as i64)
    } else {
        format!("{}m", (value * 1000.0).round() as i64)
    }
}

/// upstream's PodValidateLimitFunc for one LimitRange.
fn validate_pod(range: &Value, pod: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    for limit in range["spec"]["limits"].as_array().into_iter().flatten() {
        match limit["type"].as_str() {
            Some("Container") => {
                for field in ["containers", "initContainers"] {
                    for c in pod["spec"][field].as_array().into_iter().flatten() {
                        let request = resources(c["resources"].get("requests"));
                        let lim = resources(c["resources"].get("limits"));
                        check(limit, "Container", &request, &lim, &mut errors);
                    }
                }
            }
            Some("Pod") => {
                let (request, lim) = (pod_total(pod, "requests"), pod_total(pod, "limits"));
                check(limit, "Pod", &request, &lim, &mut errors);
            }
            _ => {}
        }
    }
    errors
}

fn validate_claim(range: &Value, claim: &Value) -> Vec<String> {
    let requests = resources(claim["spec"]["resources"].get("requests"));
    let mut errors = Vec::new();
    for limit in limits_of(range, "PersistentVolumeClaim") {
        for (name, enforced) in resources(limit.get("min")) {
            errors.extend(min_constraint(
                "PersistentVolumeClaim",
                &name,
                &enforced,
                &requests,
                &Resources::new(),
            ));
        }
        for (name, enforced) in resources(limit.get("max")) {
            errors.extend(max_request_constraint(
                "PersistentVolumeClaim",
                &name,
                &enforced,
                &requests,
            ));
        }
    }
    errors
}

/// upstream's utilerrors.NewAggregate: one error as is, several in brackets.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

fn is_pod(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.plural == "pods"
}

#[async_trait]
impl Plugin for LimitRanger {
    fn name(&self) -> &'static str {
        "LimitRanger"
    }

    /// Pods on create (their containers never change after), claims on create and update.
    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        match operation {
            Operation::Create => {
                on_main(info, subresource, "", "pods")
                    || on_main(info, subresource, "", "persistentvolumeclaims")
            }
            Operation::Update => on_main(info, subresource, "", "persistentvolumeclaims"),
            _ => false,
        }
    }

    fn mutates(&self) -> bool {
        true
    }

    fn validates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &Attributes<'_>, obj: Option<&mut Object>) -> Result<()> {
        let Some(pod) = obj.filter(|_| is_pod(attrs.info)) else {
            return Ok(());
        };
        for range in self
            .limit_ranges(attrs.namespace.unwrap_or_default())
            .await?
        {
            default_pod(&range, pod);
        }
        Ok(())
    }

    async fn validate(&self, attrs: &Attributes<'_>, obj: Option<&Object>) -> Result<()> {
        let Some(obj) = obj else { return Ok(()) };
        if attrs
            .old
            .is_some_and(|old| object::deletion_timestamp(old).is_some())
        {
            return Ok(());
        }
        for range in self
            .limit_ranges(attrs.namespace.unwrap_or_default())
            .await?
        {
            let errors = if is_pod(attrs.info) {
                validate_pod(&range, obj)
            } else {
                validate_claim(&range, obj)
            };
            if !errors.is_empty() {
                return Err(RegistryError::forbidden(
                    &attrs.info.qualified_resource(),
                    attrs.name,
                    aggregate(&errors),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(limits: Value) -> Value {
        json!({"spec": {"limits": limits}})
    }

    #[test]
    fn defaults_fill_what_containers_leave_out_and_say_so() {
        let r = range(
            json!([{"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"}, "defaultRequest": {"cpu": "100m"}}]),
        );
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "web", "resources": {"limits": {"memory": "1Gi"}}},
        ]}});
        default_pod(&r, &mut pod);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({
                "limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "100m"}
            })
        );
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu request for container web; cpu limit for container web"
        );
        // A list the pod has not is not added (as null).
        assert!(pod["spec"].get("initContainers").is_none(), "{pod}");
    }

    #[test]
    fn limits_refuse_in_upstreams_words() {
        let r = range(json!([
            {"type": "Container", "min": {"cpu": "100m"}, "max": {"memory": "1Gi"}, "maxLimitRequestRatio": {"cpu": "2"}},
            {"type": "Pod", "max": {"cpu": "2"}},
        ]));
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "50m"}, "limits": {"cpu": "1", "memory": "2Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "512Mi"}}},
        ]}});
        assert_eq!(
            validate_pod(&r, &pod),
            [
                "minimum cpu usage per Container is 100m, but request is 50m",
                "maximum memory usage per Container is 1Gi, but limit is 2Gi",
                "cpu max limit to request ratio per Container is 2, but provided ratio is 20.000000",
                "maximum cpu usage per Pod is 2, but limit is 3",
            ]
        );
        let claims = range(
            json!([{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}]),
        );
        let claim = json!({"spec": {"resources": {"requests": {"storage": "20Gi"}}}});
        assert_eq!(
            validate_claim(&claims, &claim),
            ["maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi"]
        );
        assert_eq!(aggregate(&["a".into(), "b".into()]), "[a, b]");
        // Pod totals print as Go's Quantity does: a sidecar counts beside the containers.
        let pods = range(json!([{"type": "Pod", "max": {"memory": "1Gi"}}]));
        let pod = json!({"spec": {
            "initContainers": [{"name": "s", "restartPolicy": "Always", "resources": {"limits": {"memory": "512Mi"}}}],
            "containers": [{"name": "a", "resources": {"limits": {"memory": "1Gi"}}}],
        }});
        assert_eq!(
            validate_pod(&pods, &pod),
            ["maximum memory usage per Pod is 1Gi, but limit is 1536Mi"]
        );
    }
}
