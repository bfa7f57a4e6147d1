//! Required node affinity (upstream's nodeaffinity.GetRequiredNodeAffinity and
//! corev1.MatchNodeSelectorTerms): the pod's nodeSelector map must match the node's labels,
//! and one of the requiredDuringSchedulingIgnoredDuringExecution terms must match; within a
//! term every matchExpression (on labels) and matchField (on metadata.name) must hold.

use registry::selector::labels::{LabelOperator, LabelRequirement};
use serde_json::Value;

/// Whether `node` satisfies the pod's nodeSelector and its required node affinity.
pub fn required_node_affinity_matches(pod: &Value, node: &Value) -> bool {
    let labels = &node["metadata"]["labels"];
    let selector_ok = match &pod["spec"]["nodeSelector"] {
        Value::Object(wanted) => wanted
            .iter()
            .all(|(k, v)| v.as_str().is_some() && labels.get(k) == Some(v)),
        _ => true,
    };
    if !selector_ok {
        return false;
    }
    match &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    {
        Value::Null => true,
        selector => node_selector_matches(selector, node),
    }
}

/// Whether `node` matches a v1.NodeSelector: its terms are ORed; a term with no requirements,
/// or with one that does not parse, matches nothing.
pub fn node_selector_matches(selector: &Value, node: &Value) -> bool {
    selector["nodeSelectorTerms"]
        .as_array()
        .is_some_and(|terms| terms.iter().any(|t| term_matches(t, node)))
}

fn term_matches(term: &Value, node: &Value) -> bool {
    let expressions = term["matchExpressions"].as_array().map(Vec::as_slice);
    let fields = term["matchFields"].as_array().map(Vec::as_slice);
    let expressions = expressions.unwrap_or_default();
    let fields = fields.unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    let labels = &node["metadata"]["labels"];
    let lookup = |key: &str| labels.get(key).and_then(Value::as_str);
    let labels_ok = expressions
        .iter()
        .all(|e| label_requirement(e).is_some_and(|r| r.matches(&lookup)));
    labels_ok && fields.iter().all(|f| field_matches(f, node))
}

/// A matchExpression as a label requirement (upstream's NodeSelectorRequirementsAsSelector).
fn label_requirement(expression: &Value) -> Option<LabelRequirement> {
    let operator = match expression["operator"].as_str()? {
        "In" => LabelOperator::In,
        "NotIn" => LabelOperator::NotIn,
        "Exists" => LabelOperator::Exists,
        "DoesNotExist" => LabelOperator::DoesNotExist,
        "Gt" => LabelOperator::GreaterThan,
        "Lt" => LabelOperator::LessThan,
        _ => return None,
    };
    let values = match &expression["values"] {
        Value::Null => Vec::new(),
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()?,
        _ => return None,
    };
    LabelRequirement::new(expression["key"].as_str()?, operator, values).ok()
}

/// A matchField: only `metadata.name` with In or NotIn and exactly one value, as upstream.
fn field_matches(field: &Value, node: &Value) -> bool {
    if field["key"].as_str() != Some("metadata.name") {
        return false;
    }
    let [Value::String(value)] = field["values"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    else {
        return false;
    };
    let name = node["metadata"]["name"].as_str().unwrap_or_default();
    match field["operator"].as_str() {
        Some("In") => name == value,
        Some("NotIn") => name != value,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn node(name: &str, labels: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}})
    }

    fn pod_with_terms(terms: Value) -> Value {
        json!({"spec": {"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}})
    }

    #[test]
    fn node_selector_needs_every_label() {
        let pod = json!({"spec": {"nodeSelector": {"disk": "ssd", "zone": "a"}}});
        assert!(required_node_affinity_matches(
            &pod,
            &node("n", json!({"disk": "ssd", "zone": "a", "x": "y"}))
        ));
        assert!(!required_node_affinity_matches(
            &pod,
            &node("n", json!({"disk": "ssd"}))
        ));
        assert!(required_node_affinity_matches(
            &json!({"spec": {}}),
            &node("n", Value::Null)
        ));
    }

    #[test]
    fn terms_are_ored_and_expressions_anded() {
        let pod = pod_with_terms(json!([
            {"matchExpressions": [
                {"key": "disk", "operator": "In", "values": ["ssd", "nvme"]},
                {"key": "gpu", "operator": "DoesNotExist"},
            ]},
            {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]},
        ]));
        assert!(required_node_affinity_matches(
            &pod,
            &node("a", json!({"disk": "nvme"}))
        ));
        assert!(!required_node_affinity_matches(
            &pod,
            &node("a", json!({"disk": "nvme", "gpu": "1"}))
        ));
        assert!(required_node_affinity_matches(
            &pod,
            &node("a", json!({"cores": "16"}))
        ));
        assert!(!required_node_affinity_matches(
            &pod,
            &node("a", json!({"cores": "4"}))
        ));
        assert!(!required_node_affinity_matches(
            &pod,
            &node("a", json!({"cores": "many"}))
        ));
    }

    #[test]
    fn operators_follow_label_selector_rules() {
        let one = |op: &str, values: Value| {
            pod_with_terms(json!([{"matchExpressions": [
                {"key": "k", "operator": op, "values": values}]}]))
        };
        let labelled = node("a", json!({"k": "5"}));
        let bare = node("a", json!({}));
        assert!(required_node_affinity_matches(
            &one("NotIn", json!(["x"])),
            &labelled
        ));
        assert!(required_node_affinity_matches(
            &one("NotIn", json!(["x"])),
            &bare
        ));
        assert!(!required_node_affinity_matches(
            &one("NotIn", json!(["5"])),
            &labelled
        ));
        assert!(required_node_affinity_matches(
            &one("Exists", json!(null)),
            &labelled
        ));
        assert!(!required_node_affinity_matches(
            &one("Exists", json!(null)),
            &bare
        ));
        assert!(required_node_affinity_matches(
            &one("Lt", json!(["6"])),
            &labelled
        ));
        // Invalid requirements (In without values, Gt with two) match nothing.
        assert!(!required_node_affinity_matches(
            &one("In", json!([])),
            &labelled
        ));
        assert!(!required_node_affinity_matches(
            &one("Gt", json!(["1", "2"])),
            &labelled
        ));
        assert!(!required_node_affinity_matches(
            &one("Bogus", json!(["5"])),
            &labelled
        ));
    }

    #[test]
    fn match_fields_pin_by_name_and_empty_terms_match_nothing() {
        let pinned = pod_with_terms(json!([{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]));
        assert!(required_node_affinity_matches(
            &pinned,
            &node("node-1", json!({}))
        ));
        assert!(!required_node_affinity_matches(
            &pinned,
            &node("node-2", json!({}))
        ));
        let not = pod_with_terms(json!([{"matchFields": [
            {"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}]}]));
        assert!(required_node_affinity_matches(
            &not,
            &node("node-2", json!({}))
        ));
        let other_key = pod_with_terms(json!([{"matchFields": [
            {"key": "spec.x", "operator": "In", "values": ["node-1"]}]}]));
        assert!(!required_node_affinity_matches(
            &other_key,
            &node("node-1", json!({}))
        ));
        assert!(!required_node_affinity_matches(
            &pod_with_terms(json!([{}])),
            &node("a", json!({}))
        ));
        assert!(!required_node_affinity_matches(
            &pod_with_terms(json!([])),
            &node("a", json!({}))
        ));
    }
}
