//! Where writes meet field management: every create, update and patch records its manager's
//! fields in `metadata.managedFields`; server-side apply computes the object from them.

use serde_json::Value;
use structured_merge::{PathElement, Set};

use super::update::Subresource;
use super::Store;
use crate::field_manager::FieldManager;
use crate::object::Object;
use crate::options::WriteOptions;

/// The manager of a write whose options name none: in-process callers that did not say.
pub const DEFAULT_MANAGER: &str = "kube-controller-manager";

/// How a write's managedFields come about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tracking {
    /// Worked out from the change, for the request's manager (create, update, patch).
    Update,
    /// Already set by server-side apply: kept as they are.
    Applied,
}

/// Which endpoint a write came through, for the managers' `subresource` and the fields it
/// leaves alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Main,
    Status,
    Finalize,
    Approval,
    EphemeralContainers,
    Resize,
    /// The scale subresource, over the replicas at this path of the object.
    Scale,
}

impl Endpoint {
    pub(crate) fn of(sub: Subresource) -> Endpoint {
        match sub {
            Subresource::Main => Endpoint::Main,
            Subresource::Status => Endpoint::Status,
            Subresource::Finalize => Endpoint::Finalize,
            Subresource::Approval => Endpoint::Approval,
            Subresource::EphemeralContainers => Endpoint::EphemeralContainers,
            Subresource::Resize => Endpoint::Resize,
        }
    }
}

/// The paths beside `keep` at each level down to it, in any of `objects`: what an endpoint
/// that only writes `keep` resets.
fn all_but(keep: &[&str], objects: &[&Value]) -> Set {
    let mut out = Set::new();
    let mut prefix: Vec<PathElement> = Vec::new();
    let mut levels: Vec<&Value> = objects.to_vec();
    for step in keep {
        for level in &levels {
            if let Some(map) = level.as_object() {
                for key in map.keys().filter(|k| k != step) {
                    let mut path = prefix.clone();
                    path.push(PathElement::field(key.as_str()));
                    out.insert(&path);
                }
            }
        }
        prefix.push(PathElement::field(*step));
        levels = levels.iter().filter_map(|l| l.get(*step)).collect();
    }
    out
}

impl Store {
    /// What the status endpoint leaves alone: everything but status and the metadata the
    /// kind lets a status write change (a Deployment's annotations).
    fn status_resets(&self, objects: &[&Value]) -> Set {
        let kept = self.strategy.status_metadata_fields();
        let mut out = all_but(&["status"], objects);
        if kept.is_empty() {
            return out;
        }
        out = out.difference(&Set::from_paths([vec![PathElement::field("metadata")]]));
        let metadata: Vec<&Value> = objects.iter().filter_map(|o| o.get("metadata")).collect();
        for meta in metadata.iter().filter_map(|m| m.as_object()) {
            for key in meta.keys().filter(|k| !kept.contains(&k.as_str())) {
                out.insert(&[
                    PathElement::field("metadata"),
                    PathElement::field(key.as_str()),
                ]);
            }
        }
        out
    }

    pub(crate) fn manager<'a>(&self, opts: &'a WriteOptions) -> &'a str {
        opts.field_manager.as_deref().unwrap_or(DEFAULT_MANAGER)
    }

    /// The replicas path the scale subresource writes, as path steps.
    pub(crate) fn scale_replicas_path(&self) -> Vec<String> {
        self.info
            .scale()
            .map(|s| {
                s.spec_replicas_path
                    .trim_start_matches('.')
                    .split('.')
                    .filter(|p| !p.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_else(|| vec!["spec".into(), "replicas".into()])
    }

    /// The field manager of one write through `endpoint`; `objects` are the values whose
    /// fields an endpoint that writes only part of the object leaves alone.
    pub(crate) fn field_manager(&self, endpoint: Endpoint, objects: &[&Value]) -> FieldManager {
        let typed = self
            .fields
            .merge_schema(&self.info.group, &self.info.version, &self.info.kind);
        let (subresource, ignored) = match endpoint {
            Endpoint::Main if self.info.status_subresource() => {
                ("", Set::from_paths([vec![PathElement::field("status")]]))
            }
            Endpoint::Main => ("", Set::new()),
            Endpoint::Status => ("status", self.status_resets(objects)),
            Endpoint::Finalize => ("finalize", all_but(&["spec", "finalizers"], objects)),
            Endpoint::Approval => ("approval", all_but(&["status", "conditions"], objects)),
            Endpoint::EphemeralContainers => (
                "ephemeralcontainers",
                all_but(&["spec", "ephemeralContainers"], objects),
            ),
            Endpoint::Resize => ("resize", all_but(&["spec", "containers"], objects)),
            Endpoint::Scale => {
                let path = self.scale_replicas_path();
                let steps: Vec<&str> = path.iter().map(String::as_str).collect();
                ("scale", all_but(&steps, objects))
            }
        };
        FieldManager {
            typed,
            api_version: self.info.api_version(),
            subresource,
            ignored,
        }
    }

    /// Records an update-like write (`live` None: a create) in `new`'s managedFields;
    /// `requested` are the managedFields the client sent.
    pub(crate) fn track_update(
        &self,
        endpoint: Endpoint,
        live: Option<&Object>,
        new: &mut Object,
        requested: Option<Value>,
        opts: &WriteOptions,
    ) {
        let manager = {
            let objects: Vec<&Value> = live.into_iter().chain([&*new]).collect();
            self.field_manager(endpoint, &objects)
        };
        manager.update(live, new, requested, self.manager(opts));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn all_but_lists_the_siblings_on_the_way_down() {
        let a = json!({"spec": {"replicas": 1, "paused": true}, "status": {}});
        let b = json!({"metadata": {}, "spec": {"selector": {}}});
        let set = all_but(&["spec", "replicas"], &[&a, &b]);
        let paths: Vec<String> = set.paths().iter().map(|p| p.to_string()).collect();
        assert_eq!(
            paths,
            vec![".metadata", ".status", ".spec.paused", ".spec.selector"]
        );
    }
}
