//! The scale of the controllers behind a budget's pods (upstream's getExpectedScale and its
//! finders): each pod's controller — a ReplicaSet (or the Deployment controlling it), a
//! ReplicationController or a StatefulSet — counted once, by uid.

use std::collections::HashMap;

use serde_json::Value;

use client::controller_utils::{controller_reference, resolve_controller_ref};
use client::informer::SharedInformer;

/// The informers the finders look controllers up in.
pub struct Finders {
    pub replica_sets: SharedInformer,
    pub deployments: SharedInformer,
    pub replication_controllers: SharedInformer,
    pub stateful_sets: SharedInformer,
}

/// The summed scale of the pods' controllers, and the names of pods no controller manages.
pub struct Scale {
    pub expected: i64,
    pub unmanaged: Vec<String>,
}

fn replicas(controller: &Value) -> i64 {
    controller["spec"]["replicas"].as_i64().unwrap_or(1)
}

fn uid(controller: &Value) -> String {
    registry::object::uid(controller).to_string()
}

impl Finders {
    /// The controller of `pod` and its replicas, if one of the known kinds controls it.
    fn find(&self, pod: &Value) -> Option<(String, i64)> {
        if let Some(rs) = resolve_controller_ref(&self.replica_sets, "ReplicaSet", pod) {
            let owner = controller_reference(&rs);
            if owner.is_some_and(|o| o["kind"] == "Deployment") {
                let deployment = resolve_controller_ref(&self.deployments, "Deployment", &rs)?;
                return Some((uid(&deployment), replicas(&deployment)));
            }
            return Some((uid(&rs), replicas(&rs)));
        }
        for (informer, kind) in [
            (&self.replication_controllers, "ReplicationController"),
            (&self.stateful_sets, "StatefulSet"),
        ] {
            if let Some(controller) = resolve_controller_ref(informer, kind, pod) {
                return Some((uid(&controller), replicas(&controller)));
            }
        }
        None
    }

    pub fn expected_scale(&self, pods: &[&Value]) -> Result<Scale, String> {
        let mut scales: HashMap<String, i64> = HashMap::new();
        let mut unmanaged = Vec::new();
        for pod in pods {
            let name = registry::object::name(pod);
            let Some(reference) = controller_reference(pod) else {
                unmanaged.push(name.to_string());
                continue;
            };
            if reference["uid"]
                .as_str()
                .is_some_and(|u| scales.contains_key(u))
            {
                continue;
            }
            let (controller, scale) = self
                .find(pod)
                .ok_or_else(|| format!("found no controllers for pod {name:?}"))?;
            scales.insert(controller, scale);
        }
        Ok(Scale {
            expected: scales.values().sum(),
            unmanaged,
        })
    }
}
