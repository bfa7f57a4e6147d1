//! DefaultTolerationSeconds (upstream's plugin/pkg/admission/defaulttolerationseconds): a pod
//! that does not say how long it tolerates its node being not-ready or unreachable tolerates
//! it for 300 s, after which the taint eviction controller moves it. On creates and updates
//! alike, as upstream: a replaced pod without the tolerations it was given gets them back
//! instead of failing the pod's update rules.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{on_main, Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::Result;
use crate::object::Object;
use crate::Registry;

/// Upstream's --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds.
const DEFAULT_SECONDS: i64 = 300;
const TAINTS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

pub(super) fn build(_: &Registry) -> Arc<dyn Plugin> {
    Arc::new(DefaultTolerationSeconds)
}

struct DefaultTolerationSeconds;

#[async_trait]
impl Plugin for DefaultTolerationSeconds {
    fn name(&self) -> &'static str {
        "DefaultTolerationSeconds"
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        matches!(operation, Operation::Create | Operation::Update)
            && on_main(info, subresource, "", "pods")
    }

    async fn admit(&self, _: &Attributes<'_>, pod: Option<&mut Object>) -> Result<()> {
        if let Some(pod) = pod {
            add_default_tolerations(pod);
        }
        Ok(())
    }

    fn mutates(&self) -> bool {
        true
    }
}

fn add_default_tolerations(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    let Some(list) = tolerations.as_array_mut() else {
        return;
    };
    for key in TAINTS {
        // A toleration of every key, or of this one, with NoExecute or every effect, covers it.
        let tolerated = list.iter().any(|t| {
            let text = |f: &str| t[f].as_str().unwrap_or_default();
            (text("key") == key || text("key").is_empty())
                && (text("effect") == "NoExecute" || text("effect").is_empty())
        });
        if !tolerated {
            list.push(
                json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": DEFAULT_SECONDS}),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_tolerations_are_added_once() {
        let mut pod = json!({"spec": {"containers": []}});
        add_default_tolerations(&mut pod);
        add_default_tolerations(&mut pod);
        let list = pod["spec"]["tolerations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(list.len(), 2, "{pod}");
        assert_eq!(list[0]["key"], "node.kubernetes.io/not-ready");
        assert_eq!(list[1]["tolerationSeconds"], 300);
    }

    #[test]
    fn a_pod_tolerating_everything_gets_none() {
        let mut pod = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        add_default_tolerations(&mut pod);
        assert_eq!(pod["spec"]["tolerations"].as_array().map(Vec::len), Some(1));
        let mut pod = json!({"spec": {"tolerations": [
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}
        ]}});
        add_default_tolerations(&mut pod);
        let list = pod["spec"]["tolerations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0]["tolerationSeconds"], 10, "the pod's own stays");
    }
}
