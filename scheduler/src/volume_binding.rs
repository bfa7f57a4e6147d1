//! The VolumeBinding plugin's PreFilter: a pod waits, on no node at all, while one of its
//! claims is missing, being deleted, or not yet bound with an Immediate binding mode (its
//! volume is being provisioned). Claims of a WaitForFirstConsumer class do not hold a pod
//! here; nothing in this cluster provisions for a chosen node yet, so they are left to the
//! provisioner that serves their class.

use client::informer::SharedInformer;
use registry::object;
use serde_json::Value;

/// The names of the claims a pod uses: its persistentVolumeClaim volumes, and the claim an
/// ephemeral volume gets (`<pod>-<volume>`).
fn claim_names(pod: &Value) -> Vec<String> {
    let Some(volumes) = pod["spec"]["volumes"].as_array() else {
        return Vec::new();
    };
    volumes
        .iter()
        .filter_map(|v| {
            if let Some(claim) = v["persistentVolumeClaim"]["claimName"].as_str() {
                return Some(claim.to_string());
            }
            let name = v["name"].as_str()?;
            v.get("ephemeral")
                .map(|_| format!("{}-{name}", object::name(pod)))
        })
        .collect()
}

/// Why the pod cannot be scheduled yet, as upstream's PreFilter says it; None when every
/// claim is ready.
pub fn prefilter(pod: &Value, claims: &SharedInformer, classes: &SharedInformer) -> Option<String> {
    let namespace = object::namespace(pod);
    let mut unbound_immediate = false;
    for name in claim_names(pod) {
        let Some(claim) = claims.indexer().get(&format!("{namespace}/{name}")) else {
            return Some(format!("persistentvolumeclaim \"{name}\" not found"));
        };
        if object::deletion_timestamp(&claim).is_some() {
            return Some(format!("persistentvolumeclaim \"{name}\" is being deleted"));
        }
        if !claim["spec"]["volumeName"]
            .as_str()
            .unwrap_or("")
            .is_empty()
        {
            continue;
        }
        let class = claim["spec"]["storageClassName"].as_str().unwrap_or("");
        let delayed = classes
            .indexer()
            .get(class)
            .is_some_and(|c| c["volumeBindingMode"] == "WaitForFirstConsumer");
        unbound_immediate |= !delayed;
    }
    unbound_immediate.then(|| "pod has unbound immediate PersistentVolumeClaims".to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::claim_names;

    #[test]
    fn claims_of_a_pod() {
        let pod = json!({"metadata": {"name": "web-0"}, "spec": {"volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
            {"name": "config", "configMap": {"name": "c"}},
        ]}});
        assert_eq!(claim_names(&pod), ["data-web-0", "web-0-scratch"]);
    }
}
