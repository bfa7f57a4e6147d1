//! The ResourceQuota admission plugin (upstream's k8s.io/apiserver/pkg/admission/plugin/
//! resourcequota): a create (or an update that changes what a service or claim uses) in a
//! namespace with quotas is charged to every quota whose scopes take it in, refused when it
//! would pass a quota's hard limit, and the charge is written to the quotas' `status.used`
//! before the object is, so two requests cannot both take the last unit. The resource quota
//! controller later recounts what is really used.
//!
//! Requests in one namespace are charged one at a time (upstream queues them per namespace);
//! each reads the quotas at least as new as the last charge written.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use chrono::Utc;
use serde_json::Value;
use storage::{Interface, ReadRevision};

use super::{namespaced_list, watched, Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::{RegistryError, Result};
use crate::object::{self, Object};
use crate::options::WriteOptions;
use crate::quota::{self, Evaluator, ResourceList};
use crate::store::Store;
use crate::{Registry, Subresource};

/// How often the charge is tried again over quotas another writer changed meanwhile.
const RETRIES: usize = 3;
/// The manager of the usage writes (the server's own loopback writes upstream).
const MANAGER: &str = "kube-apiserver";

pub(super) fn build(registry: &Registry) -> Arc<dyn Plugin> {
    let (quotas, path) = watched(registry, "", "resourcequotas");
    Arc::new(ResourceQuota {
        quotas,
        path,
        store: registry.store("", "v1", "resourcequotas"),
        namespaces: Mutex::default(),
    })
}

/// One namespace's turn, and the revision of the last charge written there.
#[derive(Default)]
struct Turn {
    revision: tokio::sync::Mutex<i64>,
}

struct ResourceQuota {
    /// The quotas' storage (their watch cache), as upstream reads its lister.
    quotas: Arc<dyn Interface>,
    path: String,
    /// Where charges are written (None in registries without resource quotas).
    store: Option<Arc<Store>>,
    namespaces: Mutex<HashMap<String, Arc<Turn>>>,
}

/// Upstream's ignored resources that a Store serves.
fn ignored(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.plural == "events"
}

/// The name refusals give: the request's, else the object's (a generated name), else its
/// generateName.
fn shown_name<'a>(attrs: &'a Attributes<'_>, obj: &'a Object) -> &'a str {
    if !attrs.name.is_empty() {
        return attrs.name;
    }
    let name = object::name(obj);
    if !name.is_empty() {
        return name;
    }
    obj["metadata"]["generateName"].as_str().unwrap_or_default()
}

/// Whether the quota's status reports use of every resource it limits that the request
/// touches (upstream's hasUsageStats): not yet counted, it cannot be charged.
fn has_usage_stats(q: &Value, restricted: &BTreeSet<String>) -> bool {
    let hard = quota::parse_list(q.pointer("/status/hard"));
    let used = quota::parse_list(q.pointer("/status/used"));
    hard.keys()
        .filter(|k| restricted.contains(*k))
        .all(|k| used.contains_key(k))
}

/// upstream's CheckRequest: the new `status.used` of each quota the request changes, or why
/// it is refused.
fn check_request(
    quotas: &[Value],
    attrs: &Attributes<'_>,
    evaluator: &Evaluator,
    obj: &Value,
) -> std::result::Result<Vec<(usize, ResourceList)>, String> {
    let now = Utc::now();
    let mut interesting = Vec::new();
    for (i, q) in quotas.iter().enumerate() {
        if !evaluator.matches(q, obj, now) {
            continue;
        }
        let hard = quota::parse_list(q.pointer("/status/hard"));
        let restricted = evaluator.matching_resources(&quota::names(&hard));
        let name = object::name(q);
        evaluator
            .constraints(&restricted, obj)
            .map_err(|e| format!("failed quota: {name}: {e}"))?;
        if !has_usage_stats(q, &restricted) {
            let names: Vec<&str> = restricted.iter().map(String::as_str).collect();
            return Err(format!(
                "status unknown for quota: {name}, resources: {}",
                names.join(",")
            ));
        }
        interesting.push(i);
    }
    if interesting.is_empty() {
        return Ok(Vec::new());
    }
    let input = evaluator.usage(obj, now);
    let negative: Vec<&str> = input
        .iter()
        .filter(|(_, v)| v.is_negative())
        .map(|(k, _)| k.as_str())
        .collect();
    if !negative.is_empty() {
        return Err(format!(
            "quota usage is negative for resource(s): {}",
            negative.join(",")
        ));
    }
    let mut deltas: Vec<(usize, ResourceList)> =
        interesting.iter().map(|i| (*i, input.clone())).collect();
    if attrs.operation == Operation::Update {
        let Some(old) = attrs.old else {
            return Err(
                "unable to get previous usage since prior version of object was not found".into(),
            );
        };
        // A create through update (no resourceVersion) is charged in full.
        if !object::resource_version(old).is_empty() {
            let delta = quota::subtract_non_negative(&input, &evaluator.usage(old, now));
            for (i, d) in &mut deltas {
                if evaluator.matches(&quotas[*i], old, now) {
                    *d = delta.clone();
                }
            }
        }
    }
    let mut out = Vec::new();
    for (i, delta) in deltas {
        let delta = quota::remove_zeros(&delta);
        if delta.is_empty() {
            continue;
        }
        let q = &quotas[i];
        let hard = quota::parse_list(q.pointer("/status/hard"));
        let used = quota::parse_list(q.pointer("/status/used"));
        let requested = quota::mask(&delta, &quota::names(&hard));
        let new_usage = quota::add(&used, &requested);
        if attrs.subresource != "status" {
            let masked = quota::mask(&new_usage, &quota::names(&requested));
            let (allowed, exceeded) = quota::less_than_or_equal(&masked, &hard);
            if !allowed {
                return Err(format!(
                    "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                    object::name(q),
                    quota::pretty_print(&quota::mask(&requested, &exceeded)),
                    quota::pretty_print(&quota::mask(&used, &exceeded)),
                    quota::pretty_print(&quota::mask(&hard, &exceeded)),
                ));
            }
        }
        out.push((i, new_usage));
    }
    Ok(out)
}

impl ResourceQuota {
    fn turn(&self, namespace: &str) -> Arc<Turn> {
        self.namespaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(namespace.to_string())
            .or_default()
            .clone()
    }

    /// Drops a namespace's turn nobody waits for, so namespaces gone leave nothing behind.
    fn release(&self, namespace: &str, turn: Arc<Turn>) {
        let mut namespaces = self
            .namespaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // The map's and ours.
        if Arc::strong_count(&turn) == 2 {
            namespaces.remove(namespace);
        }
    }

    async fn quotas(&self, namespace: &str, revision: ReadRevision) -> Result<Vec<Value>> {
        namespaced_list(
            self.quotas.as_ref(),
            &self.path,
            "resourcequotas",
            namespace,
            revision,
        )
        .await
    }

    async fn charge(&self, attrs: &Attributes<'_>, namespace: &str, obj: &Object) -> Result<()> {
        let evaluator = Evaluator::for_resource(&attrs.info.group, &attrs.info.plural);
        let turn = self.turn(namespace);
        let result = {
            let mut last = turn.revision.lock().await;
            self.charge_in_turn(attrs, namespace, obj, &evaluator, &mut last)
                .await
        };
        self.release(namespace, turn);
        result
    }

    async fn charge_in_turn(
        &self,
        attrs: &Attributes<'_>,
        namespace: &str,
        obj: &Object,
        evaluator: &Evaluator,
        last: &mut i64,
    ) -> Result<()> {
        let mut revision = if *last > 0 {
            ReadRevision::NotOlderThan(*last)
        } else {
            ReadRevision::Any
        };
        let mut conflict = None;
        for _ in 0..=RETRIES {
            let quotas = self.quotas(namespace, revision).await?;
            if quotas.is_empty() {
                return Ok(());
            }
            let charges = check_request(&quotas, attrs, evaluator, obj).map_err(|message| {
                RegistryError::forbidden(
                    &attrs.info.qualified_resource(),
                    shown_name(attrs, obj),
                    message,
                )
            })?;
            if attrs.dry_run || charges.is_empty() {
                return Ok(());
            }
            match self.write(namespace, &quotas, charges, last).await {
                Ok(()) => return Ok(()),
                Err(e @ RegistryError::Conflict { .. }) => {
                    conflict = Some(e);
                    revision = ReadRevision::Latest;
                }
                Err(e) => return Err(e),
            }
        }
        Err(conflict.unwrap_or_else(|| RegistryError::Internal("quota charge failed".into())))
    }

    /// Writes each changed quota's new usage, conditioned on the version read.
    async fn write(
        &self,
        namespace: &str,
        quotas: &[Value],
        charges: Vec<(usize, ResourceList)>,
        last: &mut i64,
    ) -> Result<()> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        for (i, used) in charges {
            let mut q = quotas[i].clone();
            if quota::equals(&used, &quota::parse_list(q.pointer("/status/used"))) {
                continue;
            }
            let name = object::name(&q).to_string();
            q["status"]["used"] = quota::to_json(&used);
            let (written, _) = store
                .update(
                    Some(namespace),
                    &name,
                    q,
                    Subresource::Status,
                    &WriteOptions::by(MANAGER),
                )
                .await?;
            if let Ok(rv) = object::resource_version(&written).parse::<i64>() {
                *last = (*last).max(rv);
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Plugin for ResourceQuota {
    fn name(&self) -> &'static str {
        "ResourceQuota"
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        info.namespaced
            && !ignored(info)
            && Evaluator::for_resource(&info.group, &info.plural).handles(operation, subresource)
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes<'_>, obj: Option<&Object>) -> Result<()> {
        let (Some(obj), Some(namespace)) = (obj, attrs.namespace.filter(|n| !n.is_empty())) else {
            return Ok(());
        };
        self.charge(attrs, namespace, obj).await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalogue::Catalogue;

    fn attrs<'a>(
        info: &'a ResourceInfo,
        operation: Operation,
        old: Option<&'a Object>,
    ) -> Attributes<'a> {
        Attributes {
            info,
            operation,
            subresource: "",
            namespace: Some("team"),
            name: "p",
            old,
            user: None,
            dry_run: false,
        }
    }

    fn quota(name: &str, hard: Value, used: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": "team"}, "spec": {"hard": hard},
            "status": {"hard": hard, "used": used}})
    }

    #[test]
    fn a_create_past_a_hard_limit_is_refused_in_upstreams_words() {
        let catalogue = Catalogue::builtin();
        let pods = catalogue.lookup("", "v1", "pods").expect("pods");
        let quotas = [quota(
            "compute",
            json!({"pods": "2", "requests.memory": "1Gi"}),
            json!({"pods": "1", "requests.memory": "768Mi"}),
        )];
        let pod = json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "512Mi"}}}]}});
        let err = check_request(
            &quotas,
            &attrs(&pods, Operation::Create, None),
            &Evaluator::Pods,
            &pod,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "exceeded quota: compute, requested: requests.memory=512Mi, used: requests.memory=768Mi, limited: requests.memory=1Gi"
        );
        let small = json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "256Mi"}}}]}});
        let charged = check_request(
            &quotas,
            &attrs(&pods, Operation::Create, None),
            &Evaluator::Pods,
            &small,
        )
        .expect("fits");
        assert_eq!(
            quota::to_json(&charged[0].1),
            json!({"pods": "2", "requests.memory": "1Gi"})
        );
    }

    #[test]
    fn uncounted_quotas_and_unspecified_resources_refuse() {
        let catalogue = Catalogue::builtin();
        let pods = catalogue.lookup("", "v1", "pods").expect("pods");
        let pod = json!({"spec": {"containers": [{"name": "c"}]}});
        let fresh = [json!({"metadata": {"name": "q"}, "status": {"hard": {"pods": "3"}}})];
        assert_eq!(
            check_request(
                &fresh,
                &attrs(&pods, Operation::Create, None),
                &Evaluator::Pods,
                &pod
            )
            .unwrap_err(),
            "status unknown for quota: q, resources: pods"
        );
        let cpu = [quota(
            "cpu",
            json!({"limits.cpu": "2"}),
            json!({"limits.cpu": "0"}),
        )];
        assert_eq!(
            check_request(
                &cpu,
                &attrs(&pods, Operation::Create, None),
                &Evaluator::Pods,
                &pod
            )
            .unwrap_err(),
            "failed quota: cpu: must specify limits.cpu for: c"
        );
    }

    #[test]
    fn updates_are_charged_the_difference() {
        let catalogue = Catalogue::builtin();
        let services = catalogue.lookup("", "v1", "services").expect("services");
        let quotas = [quota(
            "lb",
            json!({"services.loadbalancers": "1", "services": "5"}),
            json!({"services.loadbalancers": "1", "services": "1"}),
        )];
        let old = json!({"metadata": {"resourceVersion": "7"}, "spec": {"type": "ClusterIP", "ports": [{"port": 80}]}});
        let new = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}});
        let err = check_request(
            &quotas,
            &attrs(&services, Operation::Update, Some(&old)),
            &Evaluator::Services,
            &new,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "exceeded quota: lb, requested: services.loadbalancers=1, used: services.loadbalancers=1, limited: services.loadbalancers=1"
        );
        // An update that changes nothing charged is not written.
        let same = check_request(
            &quotas,
            &attrs(&services, Operation::Update, Some(&old)),
            &Evaluator::Services,
            &old,
        )
        .expect("nothing new");
        assert!(same.is_empty());
    }
}
