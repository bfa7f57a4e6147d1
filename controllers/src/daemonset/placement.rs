//! Where a DaemonSet's pods belong (upstream's daemon/util and NodeShouldRunDaemonPod): the
//! pod template with the tolerations every daemon pod gets, pinned to one node by required
//! node affinity on metadata.name, and which nodes should run (or may keep running) a pod.

use serde_json::{json, Value};

use client::component_helpers::{
    find_untolerated_taint, required_node_affinity_matches, TaintEffect,
};

/// The label naming the ControllerRevision a pod was made from.
pub const CONTROLLER_REVISION_HASH: &str = "controller-revision-hash";
/// The label carrying the DaemonSet's template generation (apps/v1 keeps it for old pods).
pub const POD_TEMPLATE_GENERATION: &str = "pod-template-generation";
/// The DaemonSet annotation holding its template generation.
pub const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// The tolerations upstream adds to every daemon pod (AddOrUpdateDaemonPodTolerations), so
/// node conditions and cordoning never keep a node's daemons away; with hostNetwork the pod
/// also tolerates an unready network.
fn default_tolerations(host_network: bool) -> Vec<Value> {
    let exists =
        |key: &str, effect: &str| json!({"key": key, "operator": "Exists", "effect": effect});
    let mut tolerations = vec![
        exists("node.kubernetes.io/not-ready", "NoExecute"),
        exists("node.kubernetes.io/unreachable", "NoExecute"),
        exists("node.kubernetes.io/disk-pressure", "NoSchedule"),
        exists("node.kubernetes.io/memory-pressure", "NoSchedule"),
        exists("node.kubernetes.io/pid-pressure", "NoSchedule"),
        exists("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if host_network {
        tolerations.push(exists(
            "node.kubernetes.io/network-unavailable",
            "NoSchedule",
        ));
    }
    tolerations
}

/// Adds the default tolerations the template lacks (same key and effect counts as present).
fn add_default_tolerations(spec: &mut Value) {
    let host_network = spec["hostNetwork"].as_bool() == Some(true);
    let mut tolerations = spec["tolerations"].as_array().cloned().unwrap_or_default();
    for default in default_tolerations(host_network) {
        let present = tolerations
            .iter()
            .any(|t| t["key"] == default["key"] && t["effect"] == default["effect"]);
        if !present {
            tolerations.push(default);
        }
    }
    spec["tolerations"] = Value::Array(tolerations);
}

/// The DaemonSet's template generation annotation, if it parses.
pub fn template_generation(ds: &Value) -> Option<i64> {
    ds["metadata"]["annotations"][TEMPLATE_GENERATION]
        .as_str()
        .and_then(|g| g.parse().ok())
}

/// The template the DaemonSet's pods are made from (upstream's CreatePodTemplate): default
/// tolerations, the template generation and the revision hash as labels.
pub fn pod_template(ds: &Value, hash: &str) -> Value {
    let mut template = ds["spec"]["template"].clone();
    if !template["spec"].is_object() {
        template["spec"] = json!({});
    }
    add_default_tolerations(&mut template["spec"]);
    if !template["metadata"].is_object() {
        template["metadata"] = json!({});
    }
    if !template["metadata"]["labels"].is_object() {
        template["metadata"]["labels"] = json!({});
    }
    let labels = &mut template["metadata"]["labels"];
    if let Some(generation) = template_generation(ds) {
        labels[POD_TEMPLATE_GENERATION] = json!(generation.to_string());
    }
    if !hash.is_empty() {
        labels[CONTROLLER_REVISION_HASH] = json!(hash);
    }
    template
}

/// Pins a pod spec to `node` (upstream's ReplaceDaemonSetPodNodeNameNodeAffinity): the
/// required node affinity becomes one term matching the node's name, whatever it held, and
/// preferred terms are kept.
pub fn pin_to_node(spec: &mut Value, node: &str) {
    let term = json!({"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [node]}]});
    if !spec["affinity"].is_object() {
        spec["affinity"] = json!({});
    }
    if !spec["affinity"]["nodeAffinity"].is_object() {
        spec["affinity"]["nodeAffinity"] = json!({});
    }
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
        json!({"nodeSelectorTerms": [term]});
}

/// The node a daemon pod is for: its nodeName, or else the one name its required node
/// affinity pins it to (upstream's GetTargetNodeName).
pub fn target_node_name(pod: &Value) -> Option<String> {
    if let Some(name) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
        return Some(name.to_string());
    }
    let terms = pod["spec"]["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        .as_array()?;
    terms.iter().find_map(|term| {
        term["matchFields"].as_array()?.iter().find_map(|f| {
            let values = f["values"].as_array()?;
            (f["key"] == "metadata.name" && f["operator"] == "In" && values.len() == 1)
                .then(|| values[0].as_str().map(str::to_string))
                .flatten()
        })
    })
}

/// Whether the pod was made from the DaemonSet's current template (upstream's IsPodUpdated):
/// its revision hash matches, or its template generation does.
pub fn is_pod_updated(pod: &Value, hash: &str, generation: Option<i64>) -> bool {
    let labels = &pod["metadata"]["labels"];
    let by_generation = generation
        .is_some_and(|g| labels[POD_TEMPLATE_GENERATION].as_str() == Some(g.to_string().as_str()));
    let by_hash = !hash.is_empty() && labels[CONTROLLER_REVISION_HASH].as_str() == Some(hash);
    by_hash || by_generation
}

/// Whether a daemon pod should run on `node`, and whether one already there may keep running
/// (upstream's NodeShouldRunDaemonPod): name, nodeSelector and required affinity must fit;
/// an untolerated NoSchedule or NoExecute taint keeps new pods away, but only an untolerated
/// NoExecute one evicts a running pod.
pub fn node_should_run(node: &Value, ds: &Value) -> (bool, bool) {
    let node_name = node["metadata"]["name"].as_str().unwrap_or_default();
    let mut pod = json!({"spec": ds["spec"]["template"]["spec"].clone()});
    if !pod["spec"].is_object() {
        pod["spec"] = json!({});
    }
    add_default_tolerations(&mut pod["spec"]);
    let wanted_node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
    if !wanted_node.is_empty() && wanted_node != node_name {
        return (false, false);
    }
    if !required_node_affinity_matches(&pod, node) {
        return (false, false);
    }
    let taints = &node["spec"]["taints"];
    let tolerations = &pod["spec"]["tolerations"];
    let blocking = [TaintEffect::NoSchedule, TaintEffect::NoExecute];
    if find_untolerated_taint(taints, tolerations, &blocking).is_some() {
        let evicted = find_untolerated_taint(taints, tolerations, &[TaintEffect::NoExecute]);
        return (false, evicted.is_none());
    }
    (true, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds(spec: Value) -> Value {
        json!({"metadata": {"annotations": {TEMPLATE_GENERATION: "3"}},
               "spec": {"template": {"metadata": {"labels": {"app": "d"}}, "spec": spec}}})
    }

    fn node(name: &str, labels: Value, taints: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}})
    }

    #[test]
    fn template_gets_tolerations_and_labels() {
        let t = pod_template(
            &ds(json!({"hostNetwork": true, "tolerations": [
                {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
            ]})),
            "abc",
        );
        assert_eq!(t["metadata"]["labels"][POD_TEMPLATE_GENERATION], "3");
        assert_eq!(t["metadata"]["labels"][CONTROLLER_REVISION_HASH], "abc");
        assert_eq!(t["metadata"]["labels"]["app"], "d");
        let tolerations = t["spec"]["tolerations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(tolerations.len(), 7);
        assert!(tolerations
            .iter()
            .any(|t| t["key"] == "node.kubernetes.io/network-unavailable"));
        let plain = pod_template(&ds(json!({})), "");
        assert_eq!(
            plain["spec"]["tolerations"].as_array().map(Vec::len),
            Some(6)
        );
        assert!(plain["metadata"]["labels"][CONTROLLER_REVISION_HASH].is_null());
    }

    #[test]
    fn pinning_replaces_required_affinity_and_names_the_node() {
        let mut spec = json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "a", "operator": "Exists"}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1}]}}});
        pin_to_node(&mut spec, "node-7");
        let pod = json!({"spec": spec});
        assert_eq!(target_node_name(&pod).as_deref(), Some("node-7"));
        let affinity = &pod["spec"]["affinity"]["nodeAffinity"];
        assert!(affinity["preferredDuringSchedulingIgnoredDuringExecution"].is_array());
        assert_eq!(
            affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        let bound = json!({"spec": {"nodeName": "n1"}});
        assert_eq!(target_node_name(&bound).as_deref(), Some("n1"));
        assert_eq!(target_node_name(&json!({"spec": {}})), None);
    }

    #[test]
    fn nodes_run_by_selector_and_taints() {
        let d = ds(json!({"nodeSelector": {"role": "edge"}}));
        assert_eq!(
            node_should_run(&node("a", json!({"role": "edge"}), json!(null)), &d),
            (true, true)
        );
        assert_eq!(
            node_should_run(&node("a", json!({}), json!(null)), &d),
            (false, false)
        );

        let plain = ds(json!({}));
        let no_schedule = json!([{"key": "dedicated", "effect": "NoSchedule"}]);
        assert_eq!(
            node_should_run(&node("a", json!({}), no_schedule), &plain),
            (false, true)
        );
        let no_execute = json!([{"key": "dedicated", "effect": "NoExecute"}]);
        assert_eq!(
            node_should_run(&node("a", json!({}), no_execute), &plain),
            (false, false)
        );
        let prefer = json!([{"key": "dedicated", "effect": "PreferNoSchedule"}]);
        assert_eq!(
            node_should_run(&node("a", json!({}), prefer), &plain),
            (true, true)
        );
        // Cordoned and not-ready nodes still run daemons: the default tolerations cover them.
        let cordoned = json!([
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]);
        assert_eq!(
            node_should_run(&node("a", json!({}), cordoned), &plain),
            (true, true)
        );
        let named = ds(json!({"nodeName": "b"}));
        assert_eq!(
            node_should_run(&node("a", json!({}), json!(null)), &named),
            (false, false)
        );
    }

    #[test]
    fn updated_by_hash_or_generation() {
        let pod = json!({"metadata": {"labels": {
            CONTROLLER_REVISION_HASH: "h1", POD_TEMPLATE_GENERATION: "2"}}});
        assert!(is_pod_updated(&pod, "h1", Some(5)));
        assert!(is_pod_updated(&pod, "h2", Some(2)));
        assert!(!is_pod_updated(&pod, "h2", Some(3)));
        assert!(!is_pod_updated(&pod, "", None));
    }
}
