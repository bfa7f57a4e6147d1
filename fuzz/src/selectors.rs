//! Label and field selectors (`labelSelector=`, `fieldSelector=`), parsed, matched, and their
//! canonical form read back; a metav1.LabelSelector object when the input is JSON.

use std::collections::BTreeMap;

use registry::selector::{FieldSelector, LabelSelector};

pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let labels: BTreeMap<String, String> = [("app", "web"), ("tier", "1"), ("env", "")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Ok(selector) = LabelSelector::parse(&text) {
        let canonical = selector.to_string();
        let again = LabelSelector::parse(&canonical)
            .unwrap_or_else(|e| panic!("canonical label selector {canonical:?} refused: {e}"));
        assert_eq!(again.to_string(), canonical, "canonical form is stable");
        assert_eq!(again.matches_map(&labels), selector.matches_map(&labels));
    }
    if let Ok(selector) = FieldSelector::parse(&text) {
        let canonical = selector.to_string();
        let again = FieldSelector::parse(&canonical)
            .unwrap_or_else(|e| panic!("canonical field selector {canonical:?} refused: {e}"));
        // Terms are sorted as written, as upstream sorts them, and `==` prints as `=`: the
        // string form may reorder the terms once, but holds the same requirements.
        let terms = |s: &FieldSelector| {
            let mut terms: Vec<String> = s
                .requirements()
                .iter()
                .map(|r| format!("{:?}{:?}{:?}", r.field, r.operator, r.value))
                .collect();
            terms.sort();
            terms
        };
        assert_eq!(
            terms(&again),
            terms(&selector),
            "{canonical:?} re-reads the same"
        );
        let lookup = |field: &str| labels.get(field).cloned();
        assert_eq!(again.matches(&lookup), selector.matches(&lookup));
        let _ = selector.check_supported(&["metadata.name", "metadata.namespace"]);
    }
    if let Ok(json) = serde_json::from_slice::<serde_json::Value>(data) {
        if let Ok(selector) = LabelSelector::from_label_selector_json(&json) {
            let _ = selector.matches_map(&labels);
            let _ = selector.matches_labels(&serde_json::json!({"app": "web"}));
        }
    }
}
