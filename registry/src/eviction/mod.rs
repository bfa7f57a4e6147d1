//! The pods `eviction` subresource (upstream's EvictionREST in
//! pkg/registry/core/pod/storage/eviction.go): a policy/v1 (or v1beta1) Eviction deletes a pod
//! only when the PodDisruptionBudget covering it allows one more disruption, taking that
//! disruption from the budget's status first. It is how `kubectl drain` empties a node.

pub mod budget;

use crate::types::PodPhase;
use std::time::Duration;

use serde_json::{json, Value};

use crate::error::{Details, Qualified, RegistryError, Result, Status};
use crate::object::{self, Object};
use crate::options::{
    DeleteOptions, DeleteOptionsWire, DryRun, ListOptions, PreconditionsSpec, WriteOptions,
};
use crate::store::Store;
use crate::{Registry, Subresource};

/// Upstream's EvictionsRetry: how often (and how far apart) a conflicting eviction is tried.
const RETRY_STEPS: usize = 20;
const RETRY_DELAY: Duration = Duration::from_millis(500);

const MULTIPLE_BUDGETS: &str =
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";

impl Registry {
    /// Evicts the pod `name` as the Eviction asks: a Success Status (code 201), or a Failure
    /// Status upstream answers as a result rather than an error (several budgets, 500).
    pub async fn evict(
        &self,
        namespace: Option<&str>,
        name: &str,
        eviction: &Object,
        opts: &WriteOptions,
    ) -> Result<Status> {
        let namespace = namespace.unwrap_or_default();
        check_eviction(eviction, name)?;
        let options = delete_options(eviction, opts.dry_run)?;
        let pods = self.required_store("", "v1", "pods")?;
        let budgets = self.required_store("policy", "v1", "poddisruptionbudgets")?;

        // A pod that is not running yet, has finished or is going anyway is deleted without
        // asking any budget: evicting it disrupts nothing more.
        let mut attempt = 0;
        let pod = loop {
            attempt += 1;
            let pod = pods
                .get(Some(namespace), name, &ListOptions::default())
                .await?;
            if !can_ignore_budget(&pod) {
                break pod;
            }
            let mut delete = options.clone();
            if should_enforce_resource_version(&pod) && !has_resource_version(&options) {
                set_resource_version(&mut delete, object::resource_version(&pod));
            }
            match delete_pod(&pods, namespace, name, delete).await {
                Err(RegistryError::Conflict { .. })
                    if !has_resource_version(&options) && attempt < RETRY_STEPS =>
                {
                    tokio::time::sleep(RETRY_DELAY).await;
                }
                other => return other.map(|()| success()),
            }
        };

        let listed = budgets
            .list(Some(namespace), &ListOptions::default())
            .await?;
        let all: Vec<Object> = listed["items"].as_array().cloned().unwrap_or_default();
        let matching = budget::matching_budgets(&all, &pod);
        let mut pin_resource_version = false;
        let mut budget_name = String::new();
        match matching.as_slice() {
            [] => {}
            [pdb] => {
                budget_name = object::name(pdb).to_string();
                if !budget::is_pod_ready(&pod) && unhealthy_may_go(pdb) {
                    // An unready pod does not count as healthy: deleting it takes nothing from
                    // the budget, as long as the pod stays unready (pinned by its version).
                    pin_resource_version = true;
                } else {
                    take_disruption(&budgets, namespace, &budget_name, name, options.dry_run)
                        .await?;
                }
            }
            _ => return Ok(failure(500, MULTIPLE_BUDGETS)),
        }

        let mut delete = options.clone();
        if pin_resource_version {
            set_resource_version(&mut delete, object::resource_version(&pod));
        }
        match delete_pod(&pods, namespace, name, delete).await {
            Err(RegistryError::Conflict { .. })
                if pin_resource_version && !has_resource_version(&options) =>
            {
                Err(budget::still_processing(&budget_name))
            }
            other => other.map(|()| success()),
        }
    }
}

/// The Eviction must name the pod of the URL and be a policy Eviction.
fn check_eviction(eviction: &Object, name: &str) -> Result<()> {
    let api_version = eviction["apiVersion"].as_str().unwrap_or_default();
    if !matches!(api_version, "" | "policy/v1" | "policy/v1beta1") {
        return Err(RegistryError::BadRequest(format!(
            "not a Eviction object: {api_version}"
        )));
    }
    if object::name(eviction) != name {
        return Err(RegistryError::BadRequest(
            "name in URL does not match name in Eviction object".into(),
        ));
    }
    Ok(())
}

/// The Eviction's deleteOptions, with the request's dryRun carried in (upstream's
/// propagateDryRun: either may ask for it).
fn delete_options(eviction: &Object, dry_run: DryRun) -> Result<DeleteOptions> {
    let wire: DeleteOptionsWire = match &eviction["deleteOptions"] {
        Value::Null => DeleteOptionsWire::default(),
        body => serde_json::from_value(body.clone()).map_err(|e| {
            RegistryError::BadRequest(format!(
                "the deleteOptions of the Eviction are invalid: {e}"
            ))
        })?,
    };
    let mut options = DeleteOptions::parse(wire)?;
    if dry_run.is_all() {
        options.dry_run = DryRun::All;
    }
    Ok(options)
}

/// Upstream's canIgnorePDB.
fn can_ignore_budget(pod: &Object) -> bool {
    matches!(
        PodPhase::of(pod),
        Some(PodPhase::Succeeded | PodPhase::Failed | PodPhase::Pending)
    ) || object::deletion_timestamp(pod).is_some()
}

/// A pending pod is deleted only as the version seen, so it cannot turn ready meanwhile
/// unnoticed (upstream's shouldEnforceResourceVersion).
fn should_enforce_resource_version(pod: &Object) -> bool {
    !PodPhase::terminal(pod) && object::deletion_timestamp(pod).is_none()
}

fn has_resource_version(options: &DeleteOptions) -> bool {
    options
        .preconditions
        .as_ref()
        .is_some_and(|p| p.resource_version.is_some())
}

fn set_resource_version(options: &mut DeleteOptions, resource_version: &str) {
    options
        .preconditions
        .get_or_insert_with(PreconditionsSpec::default)
        .resource_version = Some(resource_version.to_string());
}

/// Whether an unready pod may go without taking a disruption: always under the AlwaysAllow
/// policy; under IfHealthyBudget (the default) while the budget is met.
fn unhealthy_may_go(pdb: &Object) -> bool {
    if pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow" {
        return true;
    }
    let desired = budget::status_count(pdb, "desiredHealthy");
    budget::status_count(pdb, "currentHealthy") >= desired && desired > 0
}

/// Checks and decrements the budget through its status, one compare-and-swap on the stored
/// budget: a concurrent writer makes it look again at the fresh one.
async fn take_disruption(
    budgets: &Store,
    namespace: &str,
    pdb_name: &str,
    pod_name: &str,
    dry_run: DryRun,
) -> Result<()> {
    let resource = budgets.info.qualified_resource();
    let opts = WriteOptions {
        dry_run,
        ..Default::default()
    };
    budgets
        .write(
            Some(namespace),
            pdb_name,
            Subresource::Status,
            &opts,
            |current| {
                let mut pdb = current
                    .cloned()
                    .ok_or_else(|| RegistryError::not_found(&resource, pdb_name))?;
                budget::check_and_decrement(&mut pdb, pod_name)?;
                Ok(pdb)
            },
        )
        .await?;
    Ok(())
}

/// Marks the pod DisruptionTarget=True (reason EvictionByEvictionAPI) and deletes it, as
/// upstream's addConditionAndDeletePod; the condition's write moves the resourceVersion a
/// precondition names on.
async fn delete_pod(
    pods: &Store,
    namespace: &str,
    name: &str,
    mut options: DeleteOptions,
) -> Result<()> {
    if !options.dry_run.is_all() {
        let expected = options.preconditions.clone().unwrap_or_default();
        let resource = Qualified::new("", "Pod");
        let (marked, _) = pods
            .write(
                Some(namespace),
                name,
                Subresource::Status,
                &WriteOptions::default(),
                |current| {
                    let mut pod = current.cloned().ok_or_else(|| {
                        RegistryError::not_found(&pods.info.qualified_resource(), name)
                    })?;
                    check_preconditions(&pod, &expected, &resource, name)?;
                    crate::store::binding::set_condition(
                        &mut pod,
                        json!({
                            "type": "DisruptionTarget",
                            "status": "True",
                            "reason": "EvictionByEvictionAPI",
                            "message": "Eviction API: evicting",
                            "lastProbeTime": null,
                        }),
                    );
                    Ok(pod)
                },
            )
            .await?;
        if has_resource_version(&options) {
            set_resource_version(&mut options, object::resource_version(&marked));
        }
    }
    pods.delete(Some(namespace), name, options).await?;
    Ok(())
}

fn check_preconditions(
    pod: &Object,
    expected: &PreconditionsSpec,
    resource: &Qualified,
    name: &str,
) -> Result<()> {
    if let Some(uid) = expected.uid.as_deref().filter(|u| !u.is_empty()) {
        if uid != object::uid(pod) {
            return Err(RegistryError::conflict(resource, name, format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                object::uid(pod)
            )));
        }
    }
    if let Some(rv) = expected
        .resource_version
        .as_deref()
        .filter(|r| !r.is_empty())
    {
        if rv != object::resource_version(pod) {
            return Err(RegistryError::conflict(resource, name, format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                object::resource_version(pod)
            )));
        }
    }
    Ok(())
}

/// Upstream's answer to an eviction that went through: Status Success, 201.
fn success() -> Status {
    let mut status = Status::success(Details::default());
    status.details = None;
    status.code = 201;
    status
}

fn failure(code: u16, message: &str) -> Status {
    Status {
        kind: "Status",
        api_version: "v1",
        metadata: serde_json::Map::new(),
        status: "Failure",
        message: message.to_string(),
        reason: "",
        details: None,
        code,
    }
}
