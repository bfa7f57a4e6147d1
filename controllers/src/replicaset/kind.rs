//! What differs between the two kinds one controller serves (upstream serves
//! ReplicationControllers through the ReplicaSet controller with a GroupVersionKind): where
//! they are stored, what their controller references say, who records events, and the
//! selector's form (a metav1.LabelSelector for ReplicaSets, a plain label map for RCs).

use registry::selector::labels::LabelSelector;
use registry::selector::SelectorError;
use serde_json::{json, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaSetKind {
    /// apps/v1 ReplicaSet.
    ReplicaSet,
    /// core/v1 ReplicationController.
    ReplicationController,
}

impl ReplicaSetKind {
    pub fn group(self) -> &'static str {
        match self {
            Self::ReplicaSet => "apps",
            Self::ReplicationController => "",
        }
    }

    pub fn version(self) -> &'static str {
        "v1"
    }

    pub fn plural(self) -> &'static str {
        match self {
            Self::ReplicaSet => "replicasets",
            Self::ReplicationController => "replicationcontrollers",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Self::ReplicaSet => "ReplicaSet",
            Self::ReplicationController => "ReplicationController",
        }
    }

    /// The controller's name in kube-controller-manager (`--controllers`, logs).
    pub fn name(self) -> &'static str {
        match self {
            Self::ReplicaSet => "replicaset-controller",
            Self::ReplicationController => "replicationcontroller-controller",
        }
    }

    /// The event source, as kube-controller-manager names these controllers.
    pub fn component(self) -> &'static str {
        match self {
            Self::ReplicaSet => "replicaset-controller",
            Self::ReplicationController => "replication-controller",
        }
    }

    /// The pods `set` selects. An RC's selector is a label map; an empty or missing one
    /// selects nothing here, since adopting every pod of the namespace is never what was meant
    /// (upstream's validation refuses it before the controller could see it).
    pub fn selector(self, set: &Value) -> Result<LabelSelector, SelectorError> {
        let selector = &set["spec"]["selector"];
        match self {
            Self::ReplicaSet => LabelSelector::from_label_selector_json(selector),
            Self::ReplicationController => match selector.as_object() {
                Some(map) if !map.is_empty() => {
                    LabelSelector::from_label_selector_json(&json!({ "matchLabels": map }))
                }
                _ => Ok(LabelSelector::nothing()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_of_both_kinds() {
        let pod_labels = json!({"app": "web", "tier": "front"});
        let rs = json!({"spec": {"selector": {"matchLabels": {"app": "web"}}}});
        let rs_selector = ReplicaSetKind::ReplicaSet.selector(&rs).expect("selector");
        assert!(rs_selector.matches_labels(&pod_labels));

        let rc = json!({"spec": {"selector": {"app": "web"}}});
        let rc_selector = ReplicaSetKind::ReplicationController
            .selector(&rc)
            .expect("selector");
        assert!(rc_selector.matches_labels(&pod_labels));
        assert!(!rc_selector.matches_labels(&json!({"app": "db"})));

        let bare = json!({"spec": {}});
        let none = ReplicaSetKind::ReplicationController
            .selector(&bare)
            .expect("selector");
        assert!(!none.matches_labels(&pod_labels));
    }
}
