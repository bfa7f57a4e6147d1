//! From the endpoints a Service should have to the slice writes that get there with the least
//! churn (upstream's endpointslice reconciler): endpoints stay in the slice that holds them,
//! new ones fill slices with room before a slice is made, emptied slices go, and a Service
//! with no endpoints keeps one empty placeholder slice.

use std::sync::Arc;

use registry::object;
use serde_json::{json, Value};

pub const MAX_ENDPOINTS_PER_SLICE: usize = 100;
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";
pub const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";

/// One desired endpoint with the ports it serves.
pub struct Desired {
    pub ports: Vec<Value>,
    pub endpoint: Value,
}

#[derive(Default, Debug)]
pub struct Plan {
    pub create: Vec<Value>,
    pub update: Vec<Value>,
    pub delete: Vec<Arc<Value>>,
}

/// Endpoints are the same endpoint when they stand for the same pod (or address).
fn identity(endpoint: &Value) -> Value {
    match endpoint["targetRef"]["uid"].as_str() {
        Some(uid) if !uid.is_empty() => json!(uid),
        _ => endpoint["addresses"].clone(),
    }
}

/// The labels and owner every slice of `svc` carries.
fn stamp_slice(slice: &mut Value, svc: &Value) {
    let mut labels = svc["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    labels.insert(LABEL_SERVICE_NAME.into(), json!(object::name(svc)));
    labels.insert(LABEL_MANAGED_BY.into(), json!(MANAGED_BY));
    let meta = object::meta_mut(slice);
    meta.insert("labels".into(), Value::Object(labels));
    meta.insert(
        "ownerReferences".into(),
        json!([{
            "apiVersion": "v1",
            "kind": "Service",
            "name": object::name(svc),
            "uid": object::uid(svc),
            "controller": true,
            "blockOwnerDeletion": true,
        }]),
    );
}

fn new_slice(svc: &Value, ports: &[Value], endpoints: Vec<Value>) -> Value {
    let mut slice = json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "generateName": format!("{}-", object::name(svc)),
            "namespace": object::namespace(svc),
        },
        "addressType": "IPv4",
        "ports": ports,
        "endpoints": endpoints,
    });
    stamp_slice(&mut slice, svc);
    slice
}

/// The writes that turn `existing` (the Service's slices) into slices of `desired`.
pub fn reconcile(svc: &Value, desired: Vec<Desired>, existing: &[Arc<Value>]) -> Plan {
    // Desired endpoints grouped by the ports they serve: one set of slices per group.
    let mut groups: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
    for d in desired {
        match groups.iter_mut().find(|(ports, _)| *ports == d.ports) {
            Some((_, endpoints)) => endpoints.push(d.endpoint),
            None => groups.push((d.ports, vec![d.endpoint])),
        }
    }
    let mut plan = Plan::default();
    // Slices kept, as they will be: (ports, the slice, whether it changed).
    let mut kept: Vec<(Value, bool)> = Vec::new();
    for slice in existing {
        let ports: Vec<Value> = slice["ports"].as_array().cloned().unwrap_or_default();
        let Some((_, wanted)) = groups.iter_mut().find(|(p, _)| *p == ports) else {
            plan.delete.push(slice.clone());
            continue;
        };
        let mut endpoints = Vec::new();
        for old in slice["endpoints"].as_array().into_iter().flatten() {
            if let Some(at) = wanted.iter().position(|w| identity(w) == identity(old)) {
                endpoints.push(wanted.remove(at));
            }
        }
        if endpoints.is_empty() {
            plan.delete.push(slice.clone());
            continue;
        }
        let mut next = (**slice).clone();
        next["endpoints"] = Value::Array(endpoints);
        stamp_slice(&mut next, svc);
        let changed = next != **slice;
        kept.push((next, changed));
    }
    for (ports, mut remaining) in groups {
        for (slice, changed) in kept.iter_mut() {
            let same_ports = slice["ports"].as_array().is_some_and(|p| *p == ports);
            let Some(list) = object::array_at_mut(slice, &["endpoints"]) else {
                continue;
            };
            if !same_ports || remaining.is_empty() || list.len() >= MAX_ENDPOINTS_PER_SLICE {
                continue;
            }
            let room = (MAX_ENDPOINTS_PER_SLICE - list.len()).min(remaining.len());
            list.extend(remaining.drain(..room));
            *changed = true;
        }
        while !remaining.is_empty() {
            let take = remaining.len().min(MAX_ENDPOINTS_PER_SLICE);
            let chunk: Vec<Value> = remaining.drain(..take).collect();
            plan.create.push(new_slice(svc, &ports, chunk));
        }
    }
    plan.update = kept
        .into_iter()
        .filter(|(_, changed)| *changed)
        .map(|(s, _)| s)
        .collect();
    placeholder(svc, &mut plan, existing);
    plan
}

/// A Service with no endpoints keeps one empty slice (upstream's placeholder), reusing a
/// slice that would otherwise be deleted.
fn placeholder(svc: &Value, plan: &mut Plan, existing: &[Arc<Value>]) {
    let remains = existing.len() - plan.delete.len() + plan.create.len();
    if remains > 0 {
        return;
    }
    let empty = json!([]);
    match plan.delete.pop() {
        Some(slice)
            if slice["endpoints"].as_array().is_none_or(Vec::is_empty)
                && slice["ports"] == empty =>
        {
            // Already the placeholder.
            let _ = slice;
        }
        Some(slice) => {
            let mut next = (*slice).clone();
            next["ports"] = empty.clone();
            next["endpoints"] = empty;
            stamp_slice(&mut next, svc);
            plan.update.push(next);
        }
        None => plan.create.push(new_slice(svc, &[], Vec::new())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc() -> Value {
        json!({"metadata": {"name": "web", "namespace": "ns", "uid": "u"}})
    }

    fn desired(n: usize) -> Vec<Desired> {
        (0..n)
            .map(|i| Desired {
                ports: vec![json!({"name": "", "port": 80, "protocol": "TCP"})],
                endpoint: json!({"addresses": [format!("10.0.{}.{}", i / 250, i % 250)],
                                 "targetRef": {"uid": format!("pod-{i}")}}),
            })
            .collect()
    }

    #[test]
    fn at_most_a_hundred_per_slice_and_new_endpoints_fill_room_first() {
        let plan = reconcile(&svc(), desired(250), &[]);
        let sizes: Vec<usize> = plan
            .create
            .iter()
            .map(|s| s["endpoints"].as_array().map_or(0, Vec::len))
            .collect();
        assert_eq!(sizes, [100, 100, 50]);
        let existing: Vec<Arc<Value>> = plan
            .create
            .into_iter()
            .enumerate()
            .map(|(i, mut s)| {
                s["metadata"]["name"] = json!(format!("web-{i}"));
                Arc::new(s)
            })
            .collect();
        // Nothing changed: nothing is written.
        let same = reconcile(&svc(), desired(250), &existing);
        assert!(same.create.is_empty() && same.update.is_empty() && same.delete.is_empty());
        // One more endpoint goes to the slice with room; one slice is touched.
        let more = reconcile(&svc(), desired(251), &existing);
        assert!(more.create.is_empty() && more.delete.is_empty());
        assert_eq!(more.update.len(), 1);
        assert_eq!(more.update[0]["metadata"]["name"], "web-2");
        // No endpoints left: one empty placeholder stays.
        let none = reconcile(&svc(), Vec::new(), &existing);
        assert_eq!((none.delete.len(), none.update.len()), (2, 1));
        assert_eq!(none.update[0]["endpoints"], json!([]));
    }
}
