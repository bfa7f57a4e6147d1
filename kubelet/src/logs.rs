//! Simulated container logs (what `kubectl logs` reads through pods/log): made from the pod
//! alone, so any server of the cluster answers alike: the lines the pod's behavior script
//! gives a container, or a line saying it started.

use serde_json::Value;
use thiserror::Error;

use crate::behavior::PodBehavior;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum LogError {
    #[error("{0}")]
    BadRequest(String),
}

/// The query of a log request.
#[derive(Clone, Debug, Default)]
pub struct LogOptions {
    pub container: Option<String>,
    pub tail_lines: Option<usize>,
    pub previous: bool,
    pub timestamps: bool,
}

fn container_names(pod: &Value, field: &str) -> Vec<String> {
    pod["spec"][field]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect()
}

/// The log of one of the pod's containers, as upstream's kubelet would serve it.
pub fn render(pod: &Value, opts: &LogOptions) -> Result<String, LogError> {
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let containers = container_names(pod, "containers");
    let container = match &opts.container {
        Some(c) => c.clone(),
        None if containers.len() == 1 => containers[0].clone(),
        None => {
            return Err(LogError::BadRequest(format!(
                "a container name must be specified for pod {pod_name}, choose one of: [{}]",
                containers.join(" ")
            )))
        }
    };
    let init = container_names(pod, "initContainers");
    let (statuses, spec_field) = if init.contains(&container) {
        ("initContainerStatuses", "initContainers")
    } else if containers.contains(&container) {
        ("containerStatuses", "containers")
    } else {
        return Err(LogError::BadRequest(format!(
            "container {container} is not valid for pod {pod_name}"
        )));
    };
    let status = pod["status"][statuses]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == container.as_str()));
    let run = match (status, opts.previous) {
        (Some(s), true) => s["lastState"]["terminated"].clone(),
        (Some(s), false) => {
            let state = &s["state"];
            if state["running"].is_object() {
                state["running"].clone()
            } else if state["terminated"].is_object() {
                state["terminated"].clone()
            } else {
                Value::Null
            }
        }
        (None, _) => Value::Null,
    };
    let Some(started) = run["startedAt"].as_str() else {
        return Err(LogError::BadRequest(if opts.previous {
            format!("previous terminated container \"{container}\" in pod \"{pod_name}\" not found")
        } else {
            let reason = status
                .and_then(|s| s["state"]["waiting"]["reason"].as_str())
                .unwrap_or("ContainerCreating");
            format!("container \"{container}\" in pod \"{pod_name}\" is waiting to start: {reason}")
        }));
    };
    let image = pod["spec"][spec_field]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == container.as_str()))
        .and_then(|c| c["image"].as_str())
        .unwrap_or_default();
    let behavior = PodBehavior::of(pod).unwrap_or_default();
    let lines = behavior
        .script(&container, false, std::time::Duration::ZERO)
        .logs
        .unwrap_or_else(|| {
            vec![format!(
                "simulated container {container} started from image {image}"
            )]
        });
    let skip = opts.tail_lines.map_or(0, |n| lines.len().saturating_sub(n));
    let mut out = String::new();
    for line in &lines[skip..] {
        if opts.timestamps {
            out.push_str(started);
            out.push(' ');
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({"metadata": {"name": "p", "annotations": {crate::behavior::ANNOTATION:
                r#"{"a": {"logs": ["one", "two", "three"]}}"#}},
            "spec": {"containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y"}]},
            "status": {"containerStatuses": [
                {"name": "a", "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}, "lastState": {}},
                {"name": "b", "state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {}}]}})
    }

    #[test]
    fn scripted_lines_with_tail() {
        let opts = LogOptions {
            container: Some("a".into()),
            tail_lines: Some(2),
            ..Default::default()
        };
        assert_eq!(render(&pod(), &opts).unwrap(), "two\nthree\n");
    }

    #[test]
    fn errors_as_upstream() {
        let e = render(&pod(), &LogOptions::default()).unwrap_err();
        assert!(e.to_string().contains("choose one of: [a b]"), "{e}");
        let waiting = LogOptions {
            container: Some("b".into()),
            ..Default::default()
        };
        assert!(render(&pod(), &waiting)
            .unwrap_err()
            .to_string()
            .contains("is waiting to start: ContainerCreating"));
        let prev = LogOptions {
            container: Some("a".into()),
            previous: true,
            ..Default::default()
        };
        assert!(render(&pod(), &prev).is_err());
    }
}
