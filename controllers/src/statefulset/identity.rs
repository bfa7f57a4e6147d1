//! A StatefulSet pod's stable identity (upstream's stateful_set_utils.go): the name
//! `<set>-<ordinal>`, the labels naming it, hostname and subdomain from the governing
//! service, and the volumes pointing at its own claims `<claim>-<set>-<ordinal>`.

use registry::object;
use serde_json::{json, Map, Value};

use client::controller_utils::{controller_ref, pod_from_template};

pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
/// The label naming the ControllerRevision a pod was made from.
pub const REVISION_LABEL: &str = "controller-revision-hash";

/// `spec.replicas` (apps/v1 defaults it to 1).
pub fn replicas(set: &Value) -> i64 {
    set["spec"]["replicas"].as_i64().unwrap_or(1).max(0)
}

/// `spec.ordinals.start`: the first ordinal.
pub fn start_ordinal(set: &Value) -> i64 {
    set["spec"]["ordinals"]["start"]
        .as_i64()
        .unwrap_or(0)
        .max(0)
}

/// Whether `ordinal` is one the set should have a pod for now.
pub fn in_range(set: &Value, ordinal: i64) -> bool {
    let start = start_ordinal(set);
    ordinal >= start && ordinal < start + replicas(set)
}

pub fn pod_name(set: &Value, ordinal: i64) -> String {
    format!("{}-{ordinal}", object::name(set))
}

/// The parent name and ordinal a pod name encodes (`web-3` → `web`, 3).
pub fn parent_and_ordinal(pod: &Value) -> Option<(&str, i64)> {
    name_parent_and_ordinal(object::name(pod))
}

/// The parent name and ordinal the pod name `name` encodes.
pub fn name_parent_and_ordinal(name: &str) -> Option<(&str, i64)> {
    let (parent, ordinal) = name.rsplit_once('-')?;
    if ordinal.is_empty() || !ordinal.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((parent, ordinal.parse().ok()?))
}

pub fn ordinal(pod: &Value) -> Option<i64> {
    parent_and_ordinal(pod).map(|(_, o)| o)
}

/// Whether the pod named `pod_name` is one of the set's by that name (upstream's
/// isMemberOf); taking the name lets callers ask before decoding the pod.
pub fn is_member_of(set: &Value, pod_name: &str) -> bool {
    name_parent_and_ordinal(pod_name).is_some_and(|(parent, _)| parent == object::name(set))
}

/// The revision a pod was made from.
pub fn pod_revision(pod: &Value) -> &str {
    object::labels(pod)[REVISION_LABEL]
        .as_str()
        .unwrap_or_default()
}

pub fn claim_templates(set: &Value) -> Vec<&Value> {
    set["spec"]["volumeClaimTemplates"]
        .as_array()
        .map(|t| t.iter().collect())
        .unwrap_or_default()
}

/// The claim of template `template` for the pod with this ordinal.
pub fn claim_name(set: &Value, template: &Value, ordinal: i64) -> String {
    format!("{}-{}-{ordinal}", object::name(template), object::name(set))
}

/// The claims the pod `ordinal` needs, as they are created: the template's labels plus the
/// set's selector labels, in the set's namespace.
pub fn claims_for(set: &Value, ordinal: i64) -> Vec<Value> {
    claim_templates(set)
        .into_iter()
        .map(|template| {
            let mut claim = template.clone();
            let mut labels: Map<String, Value> = object::labels(template)
                .as_object()
                .cloned()
                .unwrap_or_default();
            if let Some(selector) = set["spec"]["selector"]["matchLabels"].as_object() {
                labels.extend(selector.clone());
            }
            let meta = object::meta_mut(&mut claim);
            meta.insert("name".into(), json!(claim_name(set, template, ordinal)));
            meta.insert("namespace".into(), json!(object::namespace(set)));
            meta.insert("labels".into(), Value::Object(labels));
            claim["apiVersion"] = json!("v1");
            claim["kind"] = json!("PersistentVolumeClaim");
            if let Some(status) = claim.as_object_mut() {
                status.remove("status");
            }
            claim
        })
        .collect()
}

/// A new pod for `ordinal` from `template` (the template of the revision it belongs to).
pub fn new_pod(set: &Value, template: &Value, ordinal: i64, revision: &str) -> Value {
    let mut pod = pod_from_template(template, object::name(set), controller_ref(set));
    if let Some(meta) = pod["metadata"].as_object_mut() {
        meta.remove("generateName");
    }
    update_identity(set, &mut pod, ordinal);
    update_storage(set, &mut pod, ordinal);
    let meta = object::meta_mut(&mut pod);
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    labels[REVISION_LABEL] = json!(revision);
    pod
}

/// Gives the pod its name, namespace, identity labels, hostname and subdomain.
pub fn update_identity(set: &Value, pod: &mut Value, ordinal: i64) {
    let name = pod_name(set, ordinal);
    let meta = object::meta_mut(pod);
    meta.insert("name".into(), json!(name));
    meta.insert("namespace".into(), json!(object::namespace(set)));
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    labels[POD_NAME_LABEL] = json!(name);
    labels[POD_INDEX_LABEL] = json!(ordinal.to_string());
    pod["spec"]["hostname"] = json!(name);
    if let Some(service) = set["spec"]["serviceName"]
        .as_str()
        .filter(|s| !s.is_empty())
    {
        pod["spec"]["subdomain"] = json!(service);
    }
}

/// Points the pod's volumes of each claim template at the pod's own claim, replacing
/// template volumes of the same name.
fn update_storage(set: &Value, pod: &mut Value, ordinal: i64) {
    let templates = claim_templates(set);
    if templates.is_empty() {
        return;
    }
    let mut volumes: Vec<Value> = pod["spec"]["volumes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for template in templates {
        let volume = json!({
            "name": object::name(template),
            "persistentVolumeClaim": {"claimName": claim_name(set, template, ordinal)},
        });
        match volumes.iter_mut().find(|v| v["name"] == volume["name"]) {
            Some(existing) => *existing = volume,
            None => volumes.push(volume),
        }
    }
    pod["spec"]["volumes"] = Value::Array(volumes);
}

/// Whether the pod carries the identity its name gives (upstream's identityMatches).
pub fn identity_matches(set: &Value, pod: &Value) -> bool {
    let Some((parent, ordinal)) = parent_and_ordinal(pod) else {
        return false;
    };
    let labels = object::labels(pod);
    parent == object::name(set)
        && object::namespace(pod) == object::namespace(set)
        && labels[POD_NAME_LABEL].as_str() == Some(object::name(pod))
        && labels[POD_INDEX_LABEL].as_str() == Some(ordinal.to_string().as_str())
}

/// Whether every claim template's volume of the pod names the pod's own claim.
pub fn storage_matches(set: &Value, pod: &Value) -> bool {
    let Some(ordinal) = ordinal(pod) else {
        return false;
    };
    let volumes = pod["spec"]["volumes"].as_array();
    claim_templates(set).into_iter().all(|template| {
        volumes.is_some_and(|vs| {
            vs.iter().any(|v| {
                v["name"].as_str() == Some(object::name(template))
                    && v["persistentVolumeClaim"]["claimName"].as_str()
                        == Some(claim_name(set, template, ordinal).as_str())
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
               "metadata": {"name": "web", "namespace": "ns", "uid": "u"},
               "spec": {"replicas": 3, "serviceName": "nginx",
                        "selector": {"matchLabels": {"app": "web"}},
                        "volumeClaimTemplates": [{"metadata": {"name": "www", "labels": {"tier": "db"}},
                            "spec": {"accessModes": ["ReadWriteOnce"]}}]}})
    }

    #[test]
    fn names_and_ordinals() {
        let pod = json!({"metadata": {"name": "web-12"}});
        assert_eq!(parent_and_ordinal(&pod), Some(("web", 12)));
        assert!(is_member_of(&set(), object::name(&pod)));
        assert!(!is_member_of(&set(), "web-x"));
        assert!(!is_member_of(&set(), "webby-1"));
        let mut s = set();
        s["spec"]["ordinals"] = json!({"start": 5});
        assert!(in_range(&s, 5) && in_range(&s, 7) && !in_range(&s, 8) && !in_range(&s, 0));
    }

    #[test]
    fn a_new_pod_has_its_identity_and_claims() {
        let template = json!({"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c"}], "volumes": [{"name": "www", "emptyDir": {}}]}});
        let pod = new_pod(&set(), &template, 1, "web-abc");
        assert_eq!(pod["metadata"]["name"], "web-1");
        assert!(pod["metadata"].get("generateName").is_none());
        assert_eq!(pod["metadata"]["labels"][POD_NAME_LABEL], "web-1");
        assert_eq!(pod["metadata"]["labels"][POD_INDEX_LABEL], "1");
        assert_eq!(pod["metadata"]["labels"][REVISION_LABEL], "web-abc");
        assert_eq!(pod["spec"]["hostname"], "web-1");
        assert_eq!(pod["spec"]["subdomain"], "nginx");
        assert_eq!(
            pod["spec"]["volumes"],
            json!([{"name": "www", "persistentVolumeClaim": {"claimName": "www-web-1"}}])
        );
        assert!(identity_matches(&set(), &pod) && storage_matches(&set(), &pod));
        let claims = claims_for(&set(), 1);
        assert_eq!(claims[0]["metadata"]["name"], "www-web-1");
        assert_eq!(
            claims[0]["metadata"]["labels"],
            json!({"tier": "db", "app": "web"})
        );
    }
}
