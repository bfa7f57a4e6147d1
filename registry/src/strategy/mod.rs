//! What is special about a kind (upstream's RESTCreateStrategy / RESTUpdateStrategy /
//! RESTDeleteStrategy): defaults, validation, graceful deletion. Everything common lives in
//! the generic Store.

pub(crate) mod admissionregistration;
pub mod apiregistration;
pub mod autoscaling;
pub mod certificates;
pub mod conversion;
pub(crate) mod defaults;
mod events;
pub mod flowcontrol;
mod limit_range;
mod namespace;
pub mod networking;
pub(crate) mod node;
mod pod;
pub(crate) mod rbac;
pub(crate) mod resource;
pub mod scheduling;
pub(crate) mod storage;
pub(crate) mod workloads;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::catalogue::ResourceInfo;
use crate::error::Cause;
use crate::store::DeletePlan;

pub use self::conversion::{Conversion, Converter};
pub use self::events::{EventStrategy, EventsV1};
pub use self::limit_range::LimitRangeStrategy;
pub use self::namespace::NamespaceStrategy;
pub use self::pod::PodStrategy;

pub trait Strategy: Send + Sync {
    /// What is wrong with an object's name (upstream's per-kind ValidateNameFunc): most kinds
    /// take DNS subdomains.
    fn name_problems(&self, name: &str) -> Vec<String> {
        crate::validation::names::is_dns1123_subdomain(name)
    }

    /// Kind-specific defaults and resets on create, after the generic metadata handling.
    fn prepare_for_create(&self, _obj: &mut Value) {}

    /// What a create records of who made it (upstream's strategies read the user from the
    /// request: a CertificateSigningRequest's requester); `user` is None for in-process
    /// writers.
    fn record_requester(&self, _obj: &mut Value, _user: Option<&crate::auth::UserInfo>) {}

    /// Kind-specific adjustments when the main resource is updated.
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value) {}

    /// Kind-specific adjustments of a write through a subresource, after the part it may
    /// change was taken from the request (upstream's status and approval strategies).
    fn prepare_for_subresource_update(
        &self,
        _sub: crate::store::update::Subresource,
        _new: &mut Value,
        _old: &Value,
    ) {
    }

    /// Field problems of an object about to be stored, beyond the generic metadata checks.
    fn validate(&self, _obj: &Value) -> Vec<Cause> {
        Vec::new()
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<Cause> {
        self.validate(new)
    }

    /// Field problems of a write through the status subresource (upstream's status strategy
    /// ValidateUpdate); the spec is the stored one by then.
    /// Field problems of a write through a subresource that changes part of the spec
    /// (pods' `ephemeralcontainers` and `resize`); by default the update's.
    fn validate_subresource_update(
        &self,
        _sub: crate::store::update::Subresource,
        new: &Value,
        old: &Value,
    ) -> Vec<Cause> {
        self.validate_update(new, old)
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        self.validate_update(new, old)
    }

    /// Field problems of a write through the approval subresource (CertificateSigningRequests).
    fn validate_approval_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        self.validate_update(new, old)
    }

    /// Metadata fields a status update takes from the request rather than keeping the stored
    /// ones (upstream's deployment status strategy lets annotations through: the controller
    /// records the revision there without counting it as a change of the spec).
    fn status_metadata_fields(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether a create keeps the status the client sent, on a kind with a status subresource
    /// (upstream: only nodes, which kubelets register with their status).
    fn keeps_status_on_create(&self) -> bool {
        false
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

    /// How objects are converted between the shape stored and the shape `info` serves, when
    /// they differ: several versions or APIs share the resource's storage. None: stored as
    /// served.
    fn conversion(&self, _info: &ResourceInfo) -> Option<Arc<dyn Conversion>> {
        None
    }

    /// A conversion the Store awaits and that may fail (custom resources with a conversion
    /// webhook), in place of [`Strategy::conversion`]: objects are stored in the converter's
    /// storage version and shown in the version `info` serves.
    fn converter(&self, _info: &ResourceInfo) -> Option<Arc<dyn Converter>> {
        None
    }

    /// How long after its last write an object expires (upstream's Store.TTLFunc). None: it
    /// stays until deleted.
    fn ttl(&self) -> Option<Duration> {
        None
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

/// What the server's configuration decides about built-in strategies.
#[derive(Clone, Copy, Debug)]
pub struct StrategyConfig {
    /// How long events live after their last write (`--event-ttl`).
    pub event_ttl: Duration,
    /// Where Services' cluster IPs and node ports come from.
    pub services: crate::service::ServiceNetwork,
}

impl Default for StrategyConfig {
    /// kube-apiserver's defaults.
    fn default() -> Self {
        Self {
            event_ttl: Duration::from_secs(3600),
            services: Default::default(),
        }
    }
}

/// How a kind's registration makes its Strategy (upstream's per-kind strategy.go), given the
/// server's configuration.
pub type StrategyFactory = fn(&ResourceInfo, &StrategyConfig) -> Box<dyn Strategy>;

/// The Strategy of kinds with no behaviour of their own.
pub fn generic(_: &ResourceInfo, _: &StrategyConfig) -> Box<dyn Strategy> {
    Box::new(GenericStrategy)
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
