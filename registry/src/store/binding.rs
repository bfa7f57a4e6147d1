//! The pods `binding` subresource (upstream's BindingREST in pkg/registry/core/pod/storage):
//! a v1 Binding sets spec.nodeName once, merges its annotations into the pod's and marks the
//! pod PodScheduled=True. It is how a scheduler assigns a pod; spec.nodeName cannot change
//! through an ordinary update.

use serde_json::{json, Value};
use storage::{Preconditions, Update};

use super::Store;
use crate::error::{Cause, Qualified, RegistryError, Result};
use crate::object::{self, Object};
use crate::options::WriteOptions;

impl Store {
    /// Binds the pod `name` to the node a Binding targets. Answers upstream's Success Status.
    pub async fn bind(
        &self,
        namespace: Option<&str>,
        name: &str,
        binding: &Object,
        opts: &WriteOptions,
    ) -> Result<Object> {
        let namespace = self.scope(namespace)?;
        let named = object::name(binding);
        if !named.is_empty() && named != name {
            return Err(RegistryError::BadRequest(
                "name in URL does not match name in Binding object".into(),
            ));
        }
        let target = validate_binding(binding, name)?;
        let annotations = binding
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let preconditions = Preconditions {
            uid: Some(object::uid(binding))
                .filter(|u| !u.is_empty())
                .map(str::to_string),
            resource_version: match object::resource_version(binding) {
                "" => None,
                rv => Some(crate::options::parse_resource_version(rv)?),
            },
        };
        let key = self.key(namespace, name);
        let conflict =
            |why: String| RegistryError::conflict(&Qualified::new("", "pods/binding"), name, why);
        let dry_run = opts.dry_run.is_all();
        self.storage
            .guaranteed_update(
                &key,
                storage::UpdateOptions {
                    preconditions,
                    ..self.write_options()
                },
                &mut |current| {
                    let Some(current) = current else {
                        return Err(RegistryError::not_found(
                            &self.info.qualified_resource(),
                            name,
                        )
                        .into_storage());
                    };
                    let mut pod = self
                        .decode_bytes(&current.value, current.mod_revision)
                        .map_err(RegistryError::into_storage)?;
                    assign(&mut pod, &target, &annotations)
                        .map_err(|why| conflict(why).into_storage())?;
                    if dry_run {
                        return Ok(Update::Keep);
                    }
                    let bytes = self.encode(&mut pod).map_err(RegistryError::into_storage)?;
                    Ok(Update::Write(bytes))
                },
            )
            .await
            .map_err(self.storage_err(name))?;
        Ok(json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }))
    }
}

/// The node a Binding targets (upstream's ValidatePodBinding): target.kind empty or Node,
/// target.name required.
fn validate_binding(binding: &Object, name: &str) -> Result<String> {
    let target = &binding["target"];
    let mut causes = Vec::new();
    let kind = target["kind"].as_str().unwrap_or_default();
    if !kind.is_empty() && kind != "Node" {
        causes.push(Cause::not_supported(
            "target.kind",
            kind,
            &["Node", "<empty>"],
        ));
    }
    let node = target["name"].as_str().unwrap_or_default();
    if node.is_empty() {
        causes.push(Cause::required("target.name"));
    }
    if !causes.is_empty() {
        return Err(RegistryError::invalid(
            &Qualified::new("", "Binding"),
            name,
            causes,
        ));
    }
    Ok(node.to_string())
}

/// Upstream's setPodNodeAndMetadata: a pod is bound once, never while being deleted or while
/// scheduling gates hold it.
fn assign(
    pod: &mut Object,
    node: &str,
    annotations: &serde_json::Map<String, Value>,
) -> std::result::Result<(), String> {
    let name = object::name(pod).to_string();
    if object::deletion_timestamp(pod).is_some() {
        return Err(format!(
            "pod {name} is being deleted, cannot be assigned to a host"
        ));
    }
    let current = pod["spec"]["nodeName"].as_str().unwrap_or_default();
    if !current.is_empty() {
        return Err(format!(
            "pod {name} is already assigned to node {current:?}"
        ));
    }
    if pod["spec"]["schedulingGates"]
        .as_array()
        .is_some_and(|g| !g.is_empty())
    {
        return Err(format!("pod {name} has non-empty .spec.schedulingGates"));
    }
    pod["spec"]["nodeName"] = json!(node);
    if !annotations.is_empty() {
        let meta = object::meta_mut(pod);
        let merged = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(merged) = merged.as_object_mut() {
            merged.extend(annotations.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    set_condition(
        pod,
        json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null}),
    );
    Ok(())
}

/// Upstream's UpdatePodCondition: the transition time moves only when the status does.
pub fn set_condition(pod: &mut Object, mut condition: Value) {
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    let now = object::now();
    let conditions = pod["status"]
        .as_object_mut()
        .map(|s| s.entry("conditions").or_insert_with(|| json!([])));
    let Some(Value::Array(conditions)) = conditions else {
        return;
    };
    let kind = condition["type"].clone();
    match conditions.iter_mut().find(|c| c["type"] == kind) {
        Some(existing) => {
            let transition = if existing["status"] == condition["status"] {
                existing["lastTransitionTime"].clone()
            } else {
                json!(now)
            };
            condition["lastTransitionTime"] = transition;
            *existing = condition;
        }
        None => {
            condition["lastTransitionTime"] = json!(now);
            conditions.push(condition);
        }
    }
}
