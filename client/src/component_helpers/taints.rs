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

/// A taint, typed: callers that check one pod against many nodes (the scheduler) keep these
/// per node rather than looking fields up in each node's JSON.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    /// As written; an effect this code does not know blocks nothing.
    pub effect: String,
}

impl Taint {
    pub fn from_json(taint: &Value) -> Self {
        Self {
            key: text(taint, "key"),
            value: text(taint, "value"),
            effect: text(taint, "effect"),
        }
    }

    /// The taints of a node's `spec.taints` (none when absent).
    pub fn list(taints: &Value) -> Vec<Self> {
        let taints = taints.as_array().into_iter().flatten();
        taints.map(Self::from_json).collect()
    }

    pub fn effect(&self) -> Option<TaintEffect> {
        TaintEffect::parse(&self.effect)
    }
}

/// A toleration, typed (see [`Taint`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Toleration {
    pub key: String,
    pub operator: String,
    pub value: String,
    pub effect: String,
}

impl Toleration {
    pub fn from_json(toleration: &Value) -> Self {
        Self {
            key: text(toleration, "key"),
            operator: text(toleration, "operator"),
            value: text(toleration, "value"),
            effect: text(toleration, "effect"),
        }
    }

    /// The tolerations of a pod's `spec.tolerations` (none when absent).
    pub fn list(tolerations: &Value) -> Vec<Self> {
        let tolerations = tolerations.as_array().into_iter().flatten();
        tolerations.map(Self::from_json).collect()
    }

    pub fn tolerates(&self, taint: &Taint) -> bool {
        if !self.effect.is_empty() && self.effect != taint.effect {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator.as_str() {
            "Exists" => true,
            "" | "Equal" => self.value == taint.value,
            _ => false,
        }
    }
}

fn text(v: &Value, field: &str) -> String {
    v[field].as_str().unwrap_or_default().to_string()
}

/// Whether `toleration` tolerates `taint` (JSON objects).
pub fn tolerates(toleration: &Value, taint: &Value) -> bool {
    Toleration::from_json(toleration).tolerates(&Taint::from_json(taint))
}

/// Whether `taint` has one of `effects` and no toleration tolerates it.
fn blocks(taint: &Taint, tolerations: &[Toleration], effects: &[TaintEffect]) -> bool {
    taint.effect().is_some_and(|e| effects.contains(&e))
        && !tolerations.iter().any(|t| t.tolerates(taint))
}

/// The first of `taints` whose effect is in `effects` that no toleration tolerates.
pub fn find_untolerated<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    effects: &[TaintEffect],
) -> Option<&'a Taint> {
    taints.iter().find(|t| blocks(t, tolerations, effects))
}

/// [`find_untolerated`] over JSON: `taints` a node's `spec.taints`, `tolerations` a pod's.
pub fn find_untolerated_taint<'a>(
    taints: &'a Value,
    tolerations: &Value,
    effects: &[TaintEffect],
) -> Option<&'a Value> {
    let tolerations = Toleration::list(tolerations);
    taints
        .as_array()?
        .iter()
        .find(|t| blocks(&Taint::from_json(t), &tolerations, effects))
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
    fn typed_forms_read_as_the_json() {
        let taint = Taint::from_json(&json!({"key": "k", "value": "v", "effect": "NoExecute"}));
        assert_eq!(taint.effect(), Some(TaintEffect::NoExecute));
        assert_eq!(Taint::from_json(&json!({"effect": "Odd"})).effect(), None);
        assert!(Taint::list(&json!(null)).is_empty());
        let tolerations = Toleration::list(&json!([{"key": "k", "operator": "Exists"}, {}]));
        assert_eq!(tolerations.len(), 2);
        assert!(tolerations[0].tolerates(&taint));
        // An empty toleration is Equal with an empty key and value: it tolerates only a taint
        // with an empty value.
        assert!(!tolerations[1].tolerates(&taint));
        assert!(tolerations[1].tolerates(&Taint::from_json(&json!({"effect": "NoSchedule"}))));
        let blocking = find_untolerated(std::slice::from_ref(&taint), &tolerations[1..], BLOCKING);
        assert_eq!(blocking, Some(&taint));
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
