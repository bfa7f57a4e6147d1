//! Taints and tolerations (upstream's v1helper.FindMatchingUntoleratedTaint and
//! Toleration.ToleratesTaint): a toleration with operator Exists tolerates any value (and
//! with an empty key, every taint); Equal (the default) needs the same value; an empty effect
//! tolerates every effect.

use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl TaintEffect {
    fn parse(effect: &str) -> Option<Self> {
        match effect {
            "NoSchedule" => Some(Self::NoSchedule),
            "PreferNoSchedule" => Some(Self::PreferNoSchedule),
            "NoExecute" => Some(Self::NoExecute),
            _ => None,
        }
    }
}

/// Whether `toleration` tolerates `taint`.
pub fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let text = |v: &Value, field: &str| v[field].as_str().unwrap_or_default().to_string();
    let effect = text(toleration, "effect");
    if !effect.is_empty() && effect != text(taint, "effect") {
        return false;
    }
    let key = text(toleration, "key");
    if !key.is_empty() && key != text(taint, "key") {
        return false;
    }
    match toleration["operator"].as_str().unwrap_or_default() {
        "Exists" => true,
        "" | "Equal" => text(toleration, "value") == text(taint, "value"),
        _ => false,
    }
}

/// The first of `taints` whose effect is in `effects` that no toleration tolerates.
pub fn find_untolerated_taint<'a>(
    taints: &'a Value,
    tolerations: &Value,
    effects: &[TaintEffect],
) -> Option<&'a Value> {
    let tolerations = tolerations
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    taints.as_array()?.iter().find(|taint| {
        let effect = taint["effect"].as_str().and_then(TaintEffect::parse);
        effect.is_some_and(|e| effects.contains(&e))
            && !tolerations.iter().any(|t| tolerates(t, taint))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const BLOCKING: &[TaintEffect] = &[TaintEffect::NoSchedule, TaintEffect::NoExecute];

    #[test]
    fn equal_needs_key_and_value_exists_only_key() {
        let taint = json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"});
        assert!(tolerates(
            &json!({"key": "dedicated", "value": "gpu"}),
            &taint
        ));
        assert!(tolerates(
            &json!({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}),
            &taint
        ));
        assert!(!tolerates(
            &json!({"key": "dedicated", "value": "web"}),
            &taint
        ));
        assert!(tolerates(
            &json!({"key": "dedicated", "operator": "Exists"}),
            &taint
        ));
        assert!(!tolerates(
            &json!({"key": "other", "operator": "Exists"}),
            &taint
        ));
        assert!(tolerates(&json!({"operator": "Exists"}), &taint));
        assert!(!tolerates(
            &json!({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}),
            &taint
        ));
    }

    #[test]
    fn only_the_given_effects_block() {
        let taints = json!([
            {"key": "soft", "effect": "PreferNoSchedule"},
            {"key": "hard", "effect": "NoExecute"},
        ]);
        let none = json!([]);
        let found = find_untolerated_taint(&taints, &none, BLOCKING);
        assert_eq!(found.map(|t| &t["key"]), Some(&json!("hard")));
        let tolerated = json!([{"key": "hard", "operator": "Exists"}]);
        assert!(find_untolerated_taint(&taints, &tolerated, BLOCKING).is_none());
        assert!(find_untolerated_taint(&json!(null), &none, BLOCKING).is_none());
        let no_schedule = json!([{"key": "x", "effect": "NoSchedule"}]);
        assert!(find_untolerated_taint(&no_schedule, &none, &[TaintEffect::NoExecute]).is_none());
    }
}
