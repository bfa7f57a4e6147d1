//! Which container of a pod a stream reaches and whether the pod has a node to reach it on,
//! judged as upstream's pod strategy judges them (validateContainer, streamLocation,
//! PortForwardLocation), with its BadRequest messages.

use registry::RegistryError;
use serde_json::Value;

/// The names of the pod's containers of `kind` (containers, initContainers,
/// ephemeralContainers), in spec order.
fn names<'a>(pod: &'a Value, kind: &str) -> impl Iterator<Item = &'a str> {
    pod["spec"][kind]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
}

/// Every container name in the order upstream's VisitContainers visits them: init
/// containers, then containers, then ephemeral containers.
fn all_names(pod: &Value) -> Vec<&str> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|kind| names(pod, kind))
        .collect()
}

/// The container a stream goes to: the one asked for, which must be one of the pod's, or
/// the pod's only container when none is named.
pub fn container(pod: &Value, requested: &str) -> Result<String, RegistryError> {
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
    if !requested.is_empty() {
        return if all_names(pod).contains(&requested) {
            Ok(requested.to_string())
        } else {
            Err(RegistryError::BadRequest(format!(
                "container {requested} is not valid for pod {pod_name}"
            )))
        };
    }
    let containers: Vec<&str> = names(pod, "containers").collect();
    match containers.as_slice() {
        [only] => Ok(only.to_string()),
        [] => Err(RegistryError::BadRequest(format!(
            "a container name must be specified for pod {pod_name}"
        ))),
        // Go prints the []string of every container name as `[a b c]`.
        _ => Err(RegistryError::BadRequest(format!(
            "a container name must be specified for pod {pod_name}, choose one of: [{}]",
            all_names(pod).join(" ")
        ))),
    }
}

/// The node the pod is bound to; `name` is the pod's name as the request gave it.
pub fn node_name<'a>(pod: &'a Value, name: &str) -> Result<&'a str, RegistryError> {
    pod["spec"]["nodeName"]
        .as_str()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            RegistryError::BadRequest(format!("pod {name} does not have a host assigned"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "web"}, "spec": spec})
    }

    #[test]
    fn containers_as_upstream_validates_them() {
        let one = pod(json!({"containers": [{"name": "app"}]}));
        assert_eq!(container(&one, "").ok().as_deref(), Some("app"));
        assert_eq!(container(&one, "app").ok().as_deref(), Some("app"));
        assert_eq!(
            container(&one, "db").map_err(|e| e.to_string()),
            Err("container db is not valid for pod web".to_string())
        );

        let many = pod(json!({
            "initContainers": [{"name": "setup"}],
            "containers": [{"name": "app"}, {"name": "sidecar"}],
            "ephemeralContainers": [{"name": "debugger"}],
        }));
        let err = container(&many, "").expect_err("two containers");
        assert_eq!(err.status().code, 400);
        assert_eq!(err.status().reason, "BadRequest");
        assert_eq!(
            err.to_string(),
            "a container name must be specified for pod web, choose one of: [setup app sidecar debugger]"
        );
        // Init and ephemeral containers can be named.
        assert_eq!(container(&many, "setup").ok().as_deref(), Some("setup"));
        assert_eq!(
            container(&many, "debugger").ok().as_deref(),
            Some("debugger")
        );

        let none = pod(json!({"containers": []}));
        assert_eq!(
            container(&none, "").map_err(|e| e.to_string()),
            Err("a container name must be specified for pod web".to_string())
        );
    }

    #[test]
    fn a_pod_without_a_node_has_no_host() {
        let unbound = pod(json!({"containers": [{"name": "app"}]}));
        assert_eq!(
            node_name(&unbound, "web").map_err(|e| e.to_string()),
            Err("pod web does not have a host assigned".to_string())
        );
        let bound = pod(json!({"nodeName": "node-0"}));
        assert_eq!(node_name(&bound, "web").ok(), Some("node-0"));
    }
}
