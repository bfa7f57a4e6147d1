//! The RuntimeClass admission plugin (upstream's plugin/pkg/admission/runtimeclass): a pod
//! created with a runtimeClassName gets its class's pod overhead and scheduling (node
//! selector and tolerations) and may not contradict them; a class that does not exist, or an
//! overhead the class does not define, refuses the pod.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use storage::{Interface, ReadRevision};

use super::{on_main, watched, Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::{Qualified, RegistryError, Result};
use crate::object::Object;
use crate::Registry;

pub(super) fn build(registry: &Registry) -> Arc<dyn Plugin> {
    let (classes, path) = watched(registry, "node.k8s.io", "runtimeclasses");
    Arc::new(RuntimeClass {
        classes,
        prefix: format!("{path}/"),
    })
}

struct RuntimeClass {
    /// The RuntimeClasses' storage (their watch cache), as upstream reads its lister.
    classes: Arc<dyn Interface>,
    prefix: String,
}

const OVERHEAD_MISMATCH: &str =
    "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead";

fn class_name(pod: &Object) -> Option<&str> {
    pod.pointer("/spec/runtimeClassName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

/// The pod's overhead, as a comparable map (absent and empty alike).
fn overhead(value: Option<&Value>) -> Option<Map<String, Value>> {
    value
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
        .cloned()
}

impl RuntimeClass {
    /// The class a pod names: Ok(None) when it names none; Forbidden when it does not exist.
    async fn class(&self, attrs: &Attributes<'_>, pod: &Object) -> Result<Option<Value>> {
        let Some(name) = class_name(pod) else {
            return Ok(None);
        };
        let key = format!("{}{name}", self.prefix);
        for revision in [ReadRevision::Any, ReadRevision::Latest] {
            match self.classes.get(&key, revision).await {
                Ok(kv) => return Ok(serde_json::from_slice(&kv.value).ok()),
                Err(storage::StorageError::NotFound { .. }) => {}
                Err(e) => {
                    return Err(RegistryError::from_storage(
                        e,
                        &Qualified::new("node.k8s.io", "runtimeclasses"),
                        name,
                    ))
                }
            }
        }
        Err(RegistryError::forbidden(
            &attrs.info.qualified_resource(),
            attrs.name,
            format!("pod rejected: RuntimeClass {name:?} not found"),
        ))
    }
}

fn forbidden(attrs: &Attributes<'_>, message: String) -> RegistryError {
    RegistryError::forbidden(&attrs.info.qualified_resource(), attrs.name, message)
}

/// upstream's setOverhead: the class's podFixed overhead, which a pod's own may only repeat.
fn set_overhead(attrs: &Attributes<'_>, pod: &mut Object, class: &Value) -> Result<()> {
    let Some(fixed) = overhead(class.pointer("/overhead/podFixed")) else {
        return Ok(());
    };
    let given = overhead(pod.pointer("/spec/overhead"));
    if given.as_ref().is_some_and(|g| *g != fixed) {
        return Err(forbidden(attrs, OVERHEAD_MISMATCH.into()));
    }
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("overhead".into(), Value::Object(fixed));
    }
    Ok(())
}

/// upstream's setScheduling: the class's node selector joins the pod's (a key set to another
/// value is a conflict), its tolerations the pod's (those already there once).
fn set_scheduling(attrs: &Attributes<'_>, pod: &mut Object, class: &Value) -> Result<()> {
    let Some(scheduling) = class.get("scheduling").filter(|s| s.is_object()) else {
        return Ok(());
    };
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    if let Some(wanted) = scheduling.get("nodeSelector").and_then(Value::as_object) {
        let mut selector = spec
            .get("nodeSelector")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (key, value) in wanted {
            if let Some(own) = selector.get(key).filter(|own| *own != value) {
                let show = |v: &Value| v.as_str().unwrap_or_default().to_string();
                return Err(forbidden(
                    attrs,
                    format!(
                        "conflict: runtimeClass.scheduling.nodeSelector[{key}] = {}; pod.spec.nodeSelector[{key}] = {}",
                        show(value),
                        show(own)
                    ),
                ));
            }
            selector.insert(key.clone(), value.clone());
        }
        spec.insert("nodeSelector".into(), Value::Object(selector));
    }
    if let Some(added) = scheduling.get("tolerations").and_then(Value::as_array) {
        let mut tolerations = spec
            .get("tolerations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for toleration in added {
            if !tolerations.contains(toleration) {
                tolerations.push(toleration.clone());
            }
        }
        spec.insert("tolerations".into(), Value::Array(tolerations));
    }
    Ok(())
}

#[async_trait]
impl Plugin for RuntimeClass {
    fn name(&self) -> &'static str {
        "RuntimeClass"
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        operation == Operation::Create && on_main(info, subresource, "", "pods")
    }

    fn mutates(&self) -> bool {
        true
    }

    fn validates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &Attributes<'_>, pod: Option<&mut Object>) -> Result<()> {
        let Some(pod) = pod else { return Ok(()) };
        let Some(class) = self.class(attrs, pod).await? else {
            return Ok(());
        };
        set_overhead(attrs, pod, &class)?;
        set_scheduling(attrs, pod, &class)
    }

    /// upstream's validateOverhead: the pod's overhead is its class's, or none without one.
    async fn validate(&self, attrs: &Attributes<'_>, pod: Option<&Object>) -> Result<()> {
        let Some(pod) = pod else { return Ok(()) };
        let class = self.class(attrs, pod).await?;
        let fixed = class
            .as_ref()
            .and_then(|c| overhead(c.pointer("/overhead/podFixed")));
        let given = overhead(pod.pointer("/spec/overhead"));
        match fixed {
            Some(fixed) if given.as_ref() != Some(&fixed) => {
                Err(forbidden(attrs, OVERHEAD_MISMATCH.into()))
            }
            None if given.is_some() => Err(forbidden(
                attrs,
                "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead".into(),
            )),
            _ => Ok(()),
        }
    }
}
