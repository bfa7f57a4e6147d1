//! What is special about a kind (upstream's RESTCreateStrategy / RESTUpdateStrategy /
//! RESTDeleteStrategy): defaults, validation, graceful deletion. Everything common lives in
//! the generic Store.

mod defaults;
mod namespace;
mod pod;
mod workloads;

use serde_json::Value;

use crate::catalogue::ResourceInfo;
use crate::error::Cause;
use crate::store::DeletePlan;

pub use self::namespace::NamespaceStrategy;
pub use self::pod::PodStrategy;

pub trait Strategy: Send + Sync {
    /// Kind-specific defaults and resets on create, after the generic metadata handling.
    fn prepare_for_create(&self, _obj: &mut Value) {}

    /// Kind-specific adjustments when the main resource is updated.
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value) {}

    /// Field problems of an object about to be stored, beyond the generic metadata checks.
    fn validate(&self, _obj: &Value) -> Vec<Cause> {
        Vec::new()
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<Cause> {
        self.validate(new)
    }

    /// Field problems of a write through the status subresource (upstream's status strategy
    /// ValidateUpdate); the spec is the stored one by then.
    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        self.validate_update(new, old)
    }

    /// Whether an update moves metadata.generation on (kinds with generations): a change of
    /// the spec, or whatever else the kind counts as one.
    fn generation_changes(&self, new: &Value, old: &Value) -> bool {
        crate::object::spec_part(new) != crate::object::spec_part(old)
    }

    /// Whether `graceful_period` ever applies (upstream: the strategy implements
    /// RESTGracefulDeleteStrategy).
    fn deletes_gracefully(&self) -> bool {
        false
    }

    /// Graceful deletion (upstream's CheckGracefulDelete): the grace period this delete gets,
    /// given the one requested; None if the kind is always deleted at once.
    fn graceful_period(&self, _obj: &Value, _requested: Option<i64>) -> Option<i64> {
        None
    }

    /// A delete answers with the deleted object rather than a Status (upstream's
    /// ReturnDeletedObject).
    fn returns_deleted_object(&self) -> bool {
        false
    }

    /// An update of a missing object creates it.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// A finalizer the kind itself holds a deleting object with, added by the first delete
    /// (CustomResourceDefinitions: their custom resources go first).
    fn deletion_finalizer(&self) -> Option<&'static str> {
        None
    }

    /// What else that first delete records, e.g. a status condition.
    fn mark_deleting(&self, _obj: &mut Value) {}

    /// Several versions share the resource's storage: objects read through this one are
    /// shown in its apiVersion (custom resources with conversion strategy None).
    fn converts_versions(&self) -> bool {
        false
    }

    /// Why creates are refused at the moment, if they are (a custom resource whose definition
    /// is being deleted).
    fn refuses_create(&self) -> Option<String> {
        None
    }

    /// A delete plan of the kind's own, taken before the generic one (upstream keeps such
    /// deletes in the kind's registry, e.g. namespaces' two phases). `obj` is the stored
    /// object, the delete's preconditions already hold for it; `gc_finalizers` is what the
    /// delete's propagation policy makes of `metadata.finalizers`, when it changes them.
    /// None: the generic plan decides.
    fn plan_delete(&self, _obj: &Value, _gc_finalizers: Option<&[String]>) -> Option<DeletePlan> {
        None
    }

    /// Whether finalizers of the kind's own, outside `metadata.finalizers`, still hold a
    /// deleted object (namespaces' `spec.finalizers`, emptied through `finalize`).
    fn finalizing(&self, _obj: &Value) -> bool {
        false
    }
}

/// No kind-specific behaviour: the Store's generic semantics alone.
pub struct GenericStrategy;

impl Strategy for GenericStrategy {}

/// The Strategy of a catalogued resource.
pub fn for_resource(info: &ResourceInfo) -> Box<dyn Strategy> {
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Pod") => Box::new(PodStrategy),
        ("", "Namespace") => Box::new(NamespaceStrategy),
        ("", "Service") => Box::new(defaults::ServiceStrategy),
        ("", "Secret") => Box::new(defaults::SecretStrategy),
        ("", "PersistentVolumeClaim") | ("", "PersistentVolume") => {
            Box::new(defaults::VolumeStrategy)
        }
        ("", "ReplicationController") => Box::new(workloads::ReplicationControllerStrategy),
        ("apps", "Deployment") => Box::new(workloads::DeploymentStrategy),
        ("apps", "ReplicaSet") => Box::new(workloads::ReplicaSetStrategy),
        ("apps", "StatefulSet") => Box::new(workloads::StatefulSetStrategy),
        ("apps", "DaemonSet") => Box::new(workloads::DaemonSetStrategy),
        ("batch", "Job") => Box::new(workloads::JobStrategy),
        ("batch", "CronJob") => Box::new(workloads::CronJobStrategy),
        ("coordination.k8s.io", "Lease")
        | ("", "Endpoints")
        | ("", "Event")
        | ("events.k8s.io", "Event")
        | ("", "LimitRange") => Box::new(defaults::CreateOnUpdateStrategy),
        _ => Box::new(GenericStrategy),
    }
}

/// Sets `obj[path...] = value` unless something is already there, creating maps on the way.
pub fn default_at(obj: &mut Value, path: &[&str], value: Value) {
    let mut cur = obj;
    for (i, key) in path.iter().enumerate() {
        if !cur.is_object() {
            return;
        }
        let map = match cur.as_object_mut() {
            Some(m) => m,
            None => return,
        };
        if i + 1 == path.len() {
            let slot = map.entry(key.to_string()).or_insert(Value::Null);
            if slot.is_null() {
                *slot = value;
            }
            return;
        }
        cur = map
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Default::default()));
    }
}

/// The value at a path of object keys.
pub(crate) fn at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |cur, key| cur.get(key))
}

pub(crate) fn at_mut<'a>(obj: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    path.iter().try_fold(obj, |cur, key| cur.get_mut(key))
}
