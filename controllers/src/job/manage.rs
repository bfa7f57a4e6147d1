//! Creating and deleting a Job's pods toward the number that should run (upstream's
//! manageJob, deleteJobPods, getPodsForJob).

use std::cmp::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use registry::object;
use registry::options::ListOptions;
use serde_json::{json, Value};

use super::backoff::BackoffRecord;
use super::controller::JobController;
use super::indexed;
use super::pods;
use super::spec::JobSpec;
use super::sync::SyncCtx;
use super::JOB_TRACKING_FINALIZER;
use client::controller_utils::{
    claim, controller_ref, is_pod_ready, pod_candidates, pod_from_template, slow_start_batch,
    Claimable, SyncError,
};
use client::informer::CONTROLLER_UID_INDEX;

/// At most this many pods are created or deleted in one sync (MaxPodCreateDeletePerSync).
const MAX_POD_CHANGES_PER_SYNC: usize = 500;

pub(super) struct Managed {
    pub active: i64,
    pub requeue: Option<Duration>,
    pub error: Option<SyncError>,
}

impl JobController {
    /// The Job's pods: those its selector claims, or, while it has no selector, those it
    /// controls.
    pub(super) async fn pods_for_job(
        &self,
        job: &Arc<Value>,
        spec: &super::spec::JobSpec,
    ) -> Result<Vec<Arc<Value>>, SyncError> {
        let indexer = self.pod_informer.indexer();
        let Some(selector) = &spec.selector else {
            return Ok(indexer
                .by_index(CONTROLLER_UID_INDEX, object::uid(job))
                .unwrap_or_default());
        };
        let candidates = pod_candidates(indexer, job, selector).unwrap_or_default();
        let jobs = self.jobs.clone();
        let namespace = object::namespace(job).to_string();
        let name = object::name(job).to_string();
        let claimable = Claimable {
            owner: job,
            store: &self.pods,
            selector,
            fresh_owner: Box::new(move || {
                let (jobs, namespace, name) = (jobs.clone(), namespace.clone(), name.clone());
                async move {
                    Ok(jobs
                        .get(Some(&namespace), &name, &ListOptions::default())
                        .await?)
                }
                .boxed()
            }),
        };
        claim(&claimable, candidates).await
    }

    pub(super) async fn manage_job(
        &self,
        ctx: &SyncCtx,
        active_pods: &[Arc<Value>],
        succeeded: i64,
        backoff: &BackoffRecord,
    ) -> Managed {
        let active = active_pods.len() as i64;
        let spec = &ctx.spec;
        if spec.suspend {
            let (deleted, error) = self.delete_pods(ctx, active_pods).await;
            return Managed {
                active: active - deleted as i64,
                requeue: None,
                error,
            };
        }
        let want_active = match spec.completions {
            // A work queue: once one pod succeeded, whatever runs is left to finish.
            None if succeeded > 0 => active,
            None => spec.parallelism,
            Some(completions) => (completions - succeeded).clamp(0, spec.parallelism),
        };
        let excess = (active - want_active).max(0) as usize;
        let doomed = pods_for_removal(active_pods, spec, excess);
        if !doomed.is_empty() {
            let doomed = &doomed[..doomed.len().min(MAX_POD_CHANGES_PER_SYNC)];
            let (deleted, error) = self.delete_pods(ctx, doomed).await;
            // Deletions go first; pods missing meanwhile are created in a later sync.
            return Managed {
                active: active - deleted as i64,
                requeue: None,
                error,
            };
        }
        let terminating = if spec.only_replace_failed {
            ctx.pods.iter().filter(|p| pods::is_terminating(p)).count() as i64
        } else {
            0
        };
        let idle = Managed {
            active,
            requeue: None,
            error: None,
        };
        if active + terminating >= want_active {
            return idle;
        }
        // With backoffLimitPerIndex each index waits on its own failures instead.
        if spec.backoff_limit_per_index.is_none() {
            let wait = backoff.remaining(
                ctx.now,
                self.config.pod_failure_backoff,
                self.config.max_pod_failure_backoff,
            );
            if !wait.is_zero() {
                return Managed {
                    requeue: Some(wait),
                    ..idle
                };
            }
        }
        let wanted = ((want_active - active - terminating) as usize).min(MAX_POD_CHANGES_PER_SYNC);
        let mut template = pod_from_template(
            &spec.template,
            object::name(&ctx.job),
            controller_ref(&ctx.job),
        );
        add_tracking_finalizer(&mut template);
        let new_pods = if spec.indexed {
            match self.indexed_pods(ctx, active_pods, &template, wanted) {
                Ok(pods) => pods,
                Err(wait) => {
                    return Managed {
                        requeue: Some(wait),
                        ..idle
                    }
                }
            }
        } else {
            vec![template; wanted]
        };
        let wanted = new_pods.len();
        let queue = Mutex::new(new_pods.into_iter());
        self.expectations.expect_creations(&ctx.key, wanted);
        let (created, error) = slow_start_batch(wanted, || {
            let pod = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
            async move {
                match pod {
                    Some(pod) => self.pod_control.create(&ctx.job, pod).await.map(|_| ()),
                    None => Ok(()),
                }
            }
        })
        .await;
        // Creations that failed or never started will never be seen.
        self.expectations
            .lower_creations(&ctx.key, wanted - created);
        Managed {
            active: active + created as i64,
            requeue: None,
            error,
        }
    }

    /// The pods for up to `count` pending indexes, lowest first; with backoffLimitPerIndex
    /// only indexes past their backoff, or Err(the shortest wait) when none is.
    fn indexed_pods(
        &self,
        ctx: &SyncCtx,
        active_pods: &[Arc<Value>],
        template: &Value,
        count: usize,
    ) -> Result<Vec<Value>, Duration> {
        let spec = &ctx.spec;
        let mut indexes = indexed::pending_indexes(
            spec,
            &ctx.pods,
            active_pods,
            &ctx.succeeded_indexes,
            ctx.failed_indexes.as_ref(),
            count,
        );
        if spec.backoff_limit_per_index.is_some() {
            let wait_of = |ix: &i64| {
                indexed::index_backoff_left(
                    ctx.awaiting_replacement.get(ix).map(|p| p.as_ref()),
                    ctx.now,
                    self.config.pod_failure_backoff,
                    self.config.max_pod_failure_backoff,
                )
            };
            let shortest = indexes.iter().map(wait_of).min();
            indexes.retain(|ix| wait_of(ix).is_zero());
            if let Some(wait) = shortest.filter(|_| indexes.is_empty()) {
                return Err(wait);
            }
        }
        let mut template = template.clone();
        indexed::add_index_env(&mut template);
        let job_name = object::name(&ctx.job);
        Ok(indexes
            .into_iter()
            .map(|ix| {
                let mut pod = template.clone();
                let replaced = ctx.awaiting_replacement.get(&ix).map(|p| p.as_ref());
                indexed::decorate(&mut pod, spec, job_name, ix, replaced);
                pod
            })
            .collect())
    }

    /// Deletes `victims` at once; how many went and the first error.
    pub(super) async fn delete_pods(
        &self,
        ctx: &SyncCtx,
        victims: &[Arc<Value>],
    ) -> (usize, Option<SyncError>) {
        if victims.is_empty() {
            return (0, None);
        }
        let keys: Vec<String> = victims
            .iter()
            .map(|p| format!("{}/{}", object::namespace(p), object::name(p)))
            .collect();
        self.expectations.expect_deletions(&ctx.key, keys.clone());
        let results = futures::future::join_all(
            victims
                .iter()
                .map(|p| self.pod_control.delete(&ctx.job, object::name(p))),
        )
        .await;
        let mut deleted = 0;
        let mut first_error = None;
        for (result, key) in results.into_iter().zip(keys) {
            match result {
                Ok(()) => deleted += 1,
                Err(e) => {
                    self.expectations.deletion_observed(&ctx.key, &key);
                    first_error.get_or_insert(e);
                }
            }
        }
        (deleted, first_error)
    }
}

fn add_tracking_finalizer(pod: &mut Value) {
    let finalizers = object::meta_mut(pod)
        .entry("finalizers")
        .or_insert_with(|| json!([]));
    if !finalizers.is_array() {
        *finalizers = json!([]);
    }
    if let Some(list) = finalizers.as_array_mut() {
        if !list.iter().any(|f| f == JOB_TRACKING_FINALIZER) {
            list.push(json!(JOB_TRACKING_FINALIZER));
        }
    }
}

/// The active pods to remove: for Indexed Jobs those without a valid index and the extra
/// pods of a repeated index; then, up to `count`, the pods best removed first: not ready
/// before ready, younger before older (upstream's activePodsForRemoval, by
/// controller.ActivePods' ranking, simplified).
fn pods_for_removal(active: &[Arc<Value>], spec: &JobSpec, count: usize) -> Vec<Arc<Value>> {
    let (mut remove, mut kept) = if spec.indexed {
        indexed::duplicates(active, spec, removal_order)
    } else {
        (Vec::new(), active.to_vec())
    };
    if remove.len() < count {
        kept.sort_by(|a, b| removal_order(a, b));
        kept.truncate(count - remove.len());
        remove.extend(kept);
    }
    remove
}

/// Less: removed first.
fn removal_order(a: &Value, b: &Value) -> Ordering {
    let created = |p: &Value| {
        p["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    is_pod_ready(a)
        .cmp(&is_pod_ready(b))
        .then_with(|| created(b).cmp(&created(a)))
}
