//! The Job controller's loop: Job and pod notifications queue the Jobs concerned (and pods
//! left holding the tracking finalizer without a Job), and workers sync them.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use registry::{object, Registry, Store};
use serde_json::Value;
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::backoff::BackoffStore;
use super::config::JobControllerConfig;
use super::pods::has_tracking_finalizer;
use super::COMPONENT;
use client::controller::Controller;
use client::controller_utils::{controller_reference, resolve_controller_ref};
use client::controller_utils::{Expectations, OwnWrites, PodControl};
use client::events::EventRecorder;
use client::informer::{
    object_key, FactoryError, InformerFactory, Notification, SharedInformer, CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

#[derive(Debug, Error)]
pub enum JobControllerError {
    #[error("the registry serves no {0}")]
    NotServed(&'static str),
    #[error(transparent)]
    Informer(#[from] FactoryError),
    #[error("{0}")]
    InvalidSpec(String),
}

/// What a worker syncs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Key {
    /// A Job, by namespace/name.
    Job(String),
    /// A pod holding the tracking finalizer whose Job is gone or finished.
    OrphanPod(String),
}

pub struct JobController {
    pub(super) config: JobControllerConfig,
    pub(super) jobs: Arc<Store>,
    pub(super) pods: Arc<Store>,
    pub(super) job_informer: SharedInformer,
    pub(super) pod_informer: SharedInformer,
    pub(super) queue: RateLimitingQueue<Key>,
    pub(super) expectations: Expectations,
    /// Pod uids whose tracking finalizer this controller removed and has not yet seen gone,
    /// by Job key: until then the informer's copy would have them counted twice.
    pub(super) finalizer_expectations: Mutex<HashMap<String, HashSet<String>>>,
    /// Each Job's status as last written here, until the informer delivers it.
    pub(super) own_writes: OwnWrites,
    pub(super) backoff: BackoffStore,
    pub(super) pod_control: PodControl,
    pub(super) recorder: EventRecorder,
}

impl JobController {
    pub fn new(
        informers: &InformerFactory,
        config: JobControllerConfig,
    ) -> Result<Arc<Self>, JobControllerError> {
        let registry: &Arc<Registry> = informers.registry();
        let jobs = registry
            .store("batch", "v1", "jobs")
            .ok_or(JobControllerError::NotServed("batch/v1 jobs"))?;
        let pods = registry
            .store("", "v1", "pods")
            .ok_or(JobControllerError::NotServed("v1 pods"))?;
        let recorder = EventRecorder::new(registry.clone(), COMPONENT);
        Ok(Arc::new(Self {
            job_informer: informers.informer_for(&jobs),
            pod_informer: informers.informer_for(&pods),
            pod_control: PodControl::new(pods.clone(), recorder.clone()),
            recorder,
            jobs,
            pods,
            queue: RateLimitingQueue::with_default_rate_limiter("job"),
            expectations: Expectations::new(),
            finalizer_expectations: Mutex::new(HashMap::new()),
            own_writes: OwnWrites::default(),
            backoff: BackoffStore::default(),
            config,
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        // Both handlers are the controller's own: expectations, tracking finalizers, orphans.
        Controller::new(COMPONENT, self.clone(), self.queue.clone())
            .workers(self.config.workers)
            .handles(&self.job_informer, |job, n| job.on_job(&n))
            .handles(&self.pod_informer, |job, n| job.on_pod(&n))
            .run(stop, |job, key| async move { job.process(key).await })
            .await
    }

    async fn process(&self, key: Key) -> Next {
        let result = match &key {
            Key::Job(job) => self.sync_job(job).await,
            Key::OrphanPod(pod) => self.sync_orphan_pod(pod).await.map(|()| None),
        };
        if let Err(e) = &result {
            warn!(key = ?key, error = %e, "syncing failed; retrying");
        }
        result.into()
    }

    fn enqueue_job(&self, job: &Value) {
        if let Ok(key) = object_key(job) {
            self.queue.add(Key::Job(key));
        }
    }

    fn on_job(&self, n: &Notification) {
        match n {
            Notification::Add(job) | Notification::Update { new: job, .. } => self.enqueue_job(job),
            Notification::Delete(d) => {
                if let Ok(key) = d.key() {
                    self.queue.add(Key::Job(key));
                }
                let Some(job) = d.object() else {
                    return;
                };
                // Its pods still holding the finalizer have nobody else to release them.
                let owned = self
                    .pod_informer
                    .indexer()
                    .by_index(CONTROLLER_UID_INDEX, object::uid(job))
                    .unwrap_or_default();
                for pod in owned.iter().filter(|p| has_tracking_finalizer(p)) {
                    if let Ok(key) = object_key(pod) {
                        self.queue.add(Key::OrphanPod(key));
                    }
                }
            }
        }
    }

    fn on_pod(&self, n: &Notification) {
        match n {
            Notification::Add(pod) => self.pod_changed(None, pod),
            Notification::Update { old, new } => self.pod_changed(Some(old), new),
            Notification::Delete(d) => {
                let Some(pod) = d.object() else {
                    return;
                };
                let Some((job_key, _)) = self.job_of(pod) else {
                    return;
                };
                if let Ok(pod_key) = object_key(pod) {
                    self.expectations.deletion_observed(&job_key, &pod_key);
                }
                self.finalizer_observed(&job_key, object::uid(pod));
                self.queue.add(Key::Job(job_key));
            }
        }
    }

    fn pod_changed(&self, old: Option<&Value>, pod: &Value) {
        let pod_key = object_key(pod).unwrap_or_default();
        if let Some(old) = old {
            // A pod taken over by another controller: its former Job looks again.
            if client::informer::controller_uid(old) != client::informer::controller_uid(pod) {
                if let Some((old_job, _)) = self.job_of(old) {
                    self.queue.add(Key::Job(old_job));
                }
            }
        }
        match self.job_of(pod) {
            Some((job_key, job)) => {
                if old.is_none() {
                    self.expectations.creation_observed(&job_key);
                }
                if object::deletion_timestamp(pod).is_some() {
                    self.expectations.deletion_observed(&job_key, &pod_key);
                }
                if !has_tracking_finalizer(pod) {
                    self.finalizer_observed(&job_key, object::uid(pod));
                }
                if has_tracking_finalizer(pod) && super::is_finished(&job) {
                    self.queue.add(Key::OrphanPod(pod_key));
                }
                self.queue.add(Key::Job(job_key));
            }
            None if client::informer::controller_uid(pod).is_some() => {
                if has_tracking_finalizer(pod) {
                    self.queue.add(Key::OrphanPod(pod_key));
                }
            }
            None => {
                if has_tracking_finalizer(pod) {
                    self.queue.add(Key::OrphanPod(pod_key));
                }
                // An orphan: the Jobs that select it may adopt it.
                for job in self.jobs_selecting(pod) {
                    self.enqueue_job(&job);
                }
            }
        }
    }

    /// The Job controlling `pod`, with its key, if the informer holds it.
    pub(super) fn job_of(&self, pod: &Value) -> Option<(String, Arc<Value>)> {
        let reference = controller_reference(pod)?;
        if reference["apiVersion"] != "batch/v1" {
            return None;
        }
        let job = resolve_controller_ref(&self.job_informer, "Job", pod)?;
        Some((object_key(&job).ok()?, job))
    }

    fn jobs_selecting(&self, pod: &Value) -> Vec<Arc<Value>> {
        let jobs = self
            .job_informer
            .indexer()
            .by_index(NAMESPACE_INDEX, object::namespace(pod))
            .unwrap_or_default();
        jobs.into_iter()
            .filter(|job| {
                registry::selector::labels::LabelSelector::from_label_selector_json(
                    &job["spec"]["selector"],
                )
                .is_ok_and(|s| !s.is_empty() && s.matches_labels(object::labels(pod)))
            })
            .collect()
    }

    fn finalizer_observed(&self, job_key: &str, uid: &str) {
        let mut expected = self
            .finalizer_expectations
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(uids) = expected.get_mut(job_key) {
            uids.remove(uid);
            if uids.is_empty() {
                expected.remove(job_key);
            }
        }
    }

    pub(super) fn expected_finalizer_removals(&self, job_key: &str) -> HashSet<String> {
        self.finalizer_expectations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(job_key)
            .cloned()
            .unwrap_or_default()
    }

    pub(super) fn expect_finalizer_removals(&self, job_key: &str, uids: &[String]) {
        self.finalizer_expectations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(job_key.to_string())
            .or_default()
            .extend(uids.iter().cloned());
    }

    pub(super) fn forget(&self, job_key: &str) {
        self.expectations.forget(job_key);
        self.backoff.forget(job_key);
        self.own_writes.forget(job_key);
        self.finalizer_expectations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(job_key);
    }
}
