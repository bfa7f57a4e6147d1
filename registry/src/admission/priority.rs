//! The Priority admission plugin (upstream's plugin/pkg/admission/priority): a pod created
//! gets the value and preemption policy of its PriorityClass, or of the cluster's default
//! class (priority 0 when there is none), and may not contradict them; and no second
//! PriorityClass may be marked the global default.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};
use storage::{Interface, ListOptions, ReadRevision};

use super::{on_main, watched, Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::{Qualified, RegistryError, Result};
use crate::object::{self, Object};
use crate::Registry;

/// A pod's priority when no class is the default (DefaultPriorityWhenNoDefaultClassExists).
const NO_DEFAULT_PRIORITY: i64 = 0;
const DEFAULT_PREEMPTION: &str = "PreemptLowerPriority";

pub(super) fn build(registry: &Registry) -> Arc<dyn Plugin> {
    let (classes, path) = watched(registry, "scheduling.k8s.io", "priorityclasses");
    Arc::new(Priority {
        classes,
        prefix: format!("{path}/"),
    })
}

pub struct Priority {
    /// The storage of PriorityClasses (its watch cache).
    classes: Arc<dyn Interface>,
    /// Their key prefix (`/priorityclasses/`).
    prefix: String,
}

/// What a pod takes from a class.
struct Class {
    name: String,
    value: i64,
    preemption: Option<String>,
}

impl Class {
    fn of(class: &Value) -> Self {
        Self {
            name: object::name(class).to_string(),
            value: class["value"].as_i64().unwrap_or(0),
            preemption: class["preemptionPolicy"].as_str().map(str::to_string),
        }
    }
}

fn storage_error(e: storage::StorageError, name: &str) -> RegistryError {
    RegistryError::from_storage(
        e,
        &Qualified::new("scheduling.k8s.io", "priorityclasses"),
        name,
    )
}

impl Priority {
    /// The class named `name`, read through the watch cache as upstream's lister; one the
    /// cache does not have yet is looked for in storage before the pod is refused (a class
    /// applied together with its pods).
    async fn class(&self, name: &str) -> Result<Option<Class>> {
        let key = format!("{}{name}", self.prefix);
        for revision in [ReadRevision::Any, ReadRevision::Latest] {
            match self.classes.get(&key, revision).await {
                Ok(kv) => {
                    return Ok(serde_json::from_slice::<Value>(&kv.value)
                        .ok()
                        .map(|c| Class::of(&c)))
                }
                Err(storage::StorageError::NotFound { .. }) => {}
                Err(e) => return Err(storage_error(e, name)),
            }
        }
        Ok(None)
    }

    /// The default class: of those marked, the one of lowest value (upstream's choice when
    /// several are).
    async fn default_class(&self, revision: ReadRevision) -> Result<Option<Class>> {
        let opts = ListOptions {
            revision,
            recursive: true,
            ..Default::default()
        };
        let list = self
            .classes
            .get_list(&self.prefix, opts)
            .await
            .map_err(|e| storage_error(e, ""))?;
        Ok(list
            .items
            .iter()
            .filter_map(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
            .filter(|c| c["globalDefault"].as_bool() == Some(true))
            .map(|c| Class::of(&c))
            .min_by_key(|c| c.value))
    }

    async fn admit_pod(&self, attrs: &Attributes<'_>, pod: &mut Object) -> Result<()> {
        let forbidden = |message: String| {
            RegistryError::forbidden(&attrs.info.qualified_resource(), attrs.name, message)
        };
        let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        if attrs.operation == Operation::Update {
            // Set on create, so an update leaving them out keeps them.
            if let Some(old) = attrs.old.and_then(|o| o.get("spec")) {
                for field in ["priority", "preemptionPolicy"] {
                    if spec.get(field).is_none_or(Value::is_null) {
                        if let Some(kept) = old.get(field).filter(|v| !v.is_null()) {
                            spec.insert(field.into(), kept.clone());
                        }
                    }
                }
            }
            return Ok(());
        }
        let named = spec
            .get("priorityClassName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        let class = match named {
            Some(name) => self
                .class(&name)
                .await?
                .ok_or_else(|| forbidden(format!("no PriorityClass with name {name} was found")))?,
            None => match self.default_class(ReadRevision::Any).await? {
                Some(class) => class,
                None => Class {
                    name: String::new(),
                    value: NO_DEFAULT_PRIORITY,
                    preemption: Some(DEFAULT_PREEMPTION.into()),
                },
            },
        };
        if !class.name.is_empty() {
            spec.insert("priorityClassName".into(), json!(class.name));
        }
        if let Some(given) = spec.get("priority").and_then(Value::as_i64) {
            if given != class.value {
                return Err(forbidden(format!(
                    "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {} from the given PriorityClass name",
                    class.value
                )));
            }
        }
        spec.insert("priority".into(), json!(class.value));
        if let Some(policy) = class.preemption {
            if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str) {
                if given != policy {
                    return Err(forbidden(format!(
                        "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
                    )));
                }
            }
            spec.insert("preemptionPolicy".into(), json!(policy));
        }
        Ok(())
    }
}

#[async_trait]
impl Plugin for Priority {
    fn name(&self) -> &'static str {
        "Priority"
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        matches!(operation, Operation::Create | Operation::Update)
            && (on_main(info, subresource, "", "pods")
                || on_main(info, subresource, "scheduling.k8s.io", "priorityclasses"))
    }

    async fn admit(&self, attrs: &Attributes<'_>, obj: Option<&mut Object>) -> Result<()> {
        match obj {
            Some(pod) if attrs.info.plural == "pods" => self.admit_pod(attrs, pod).await,
            _ => Ok(()),
        }
    }

    /// A class marked the global default while another one is, is refused.
    async fn validate(&self, attrs: &Attributes<'_>, obj: Option<&Object>) -> Result<()> {
        let Some(class) = obj.filter(|_| attrs.info.plural == "priorityclasses") else {
            return Ok(());
        };
        if class["globalDefault"].as_bool() != Some(true) {
            return Ok(());
        }
        // A quorum read: two defaults made one after the other must not both pass.
        let Some(current) = self.default_class(ReadRevision::Latest).await? else {
            return Ok(());
        };
        let other = attrs.operation == Operation::Create || current.name != object::name(class);
        if other {
            return Err(RegistryError::forbidden(
                &attrs.info.qualified_resource(),
                attrs.name,
                format!(
                    "PriorityClass {} is already marked as default. Only one default can exist",
                    current.name
                ),
            ));
        }
        Ok(())
    }

    fn mutates(&self) -> bool {
        true
    }

    fn validates(&self) -> bool {
        true
    }
}
