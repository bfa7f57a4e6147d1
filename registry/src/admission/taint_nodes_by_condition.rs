//! TaintNodesByCondition (upstream's plugin/pkg/admission/nodetaint): a node is created with
//! the `node.kubernetes.io/not-ready:NoSchedule` taint, so nothing is scheduled to it before
//! the node lifecycle controller has seen it Ready and taken the taint away.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{on_main, Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::Result;
use crate::object::Object;
use crate::Registry;

const NOT_READY: &str = "node.kubernetes.io/not-ready";

pub(super) fn build(_: &Registry) -> Arc<dyn Plugin> {
    Arc::new(TaintNodesByCondition)
}

struct TaintNodesByCondition;

#[async_trait]
impl Plugin for TaintNodesByCondition {
    fn name(&self) -> &'static str {
        "TaintNodesByCondition"
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        operation == Operation::Create && on_main(info, subresource, "", "nodes")
    }

    async fn admit(&self, _: &Attributes<'_>, node: Option<&mut Object>) -> Result<()> {
        if let Some(node) = node {
            add_not_ready_taint(node);
        }
        Ok(())
    }

    fn mutates(&self) -> bool {
        true
    }
}

/// Adds the taint unless the node already has one of that key and effect.
fn add_not_ready_taint(node: &mut Value) {
    let Some(spec) = node
        .as_object_mut()
        .map(|n| n.entry("spec").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let taints = spec.entry("taints").or_insert_with(|| json!([]));
    let Some(list) = taints.as_array_mut() else {
        return;
    };
    let tainted = list
        .iter()
        .any(|t| t["key"] == NOT_READY && t["effect"] == "NoSchedule");
    if !tainted {
        list.push(json!({"key": NOT_READY, "effect": "NoSchedule"}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_node_is_not_ready_for_scheduling() {
        let mut node = json!({"metadata": {"name": "n"}});
        add_not_ready_taint(&mut node);
        add_not_ready_taint(&mut node);
        assert_eq!(
            node["spec"]["taints"],
            json!([{"key": NOT_READY, "effect": "NoSchedule"}])
        );
        let mut own = json!({"spec": {"taints": [{"key": "team", "effect": "NoSchedule"}]}});
        add_not_ready_taint(&mut own);
        assert_eq!(own["spec"]["taints"].as_array().map(Vec::len), Some(2));
    }
}
