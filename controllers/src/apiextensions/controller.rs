//! One loop over definitions: an informer queues each definition that changed, and a worker
//! brings it to where it should be, in upstream's order: serve what is established, accept
//! names and establish, and on deletion remove the custom resources, then the finalizer.

use std::sync::Arc;
use std::time::Duration;

use apiextensions::conditions::set_condition;
use apiextensions::{Definition, Installer, CLEANUP_FINALIZER};
use registry::options::WriteOptions;
use registry::types::ConditionStatus;
use registry::{object, Registry, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::cleanup::{delete_instances, Progress};
use super::naming::{names, Taken};
use client::informer::{dispatch, InformerFactory, Notification, SharedInformer};
use client::worker::{run_workers, Next};
use client::workqueue::RateLimitingQueue;

/// How soon a deletion waiting on custom resources with finalizers looks again.
const INSTANCES_RECHECK: Duration = Duration::from_secs(1);

#[derive(Debug, Error)]
pub enum DefinitionControllerError {
    #[error("the registry serves no apiextensions.k8s.io/v1 customresourcedefinitions")]
    NoDefinitions,
}

const WORKERS: usize = 1;

pub struct DefinitionController {
    registry: Arc<Registry>,
    definitions: Arc<Store>,
    installer: Arc<Installer>,
    informer: SharedInformer,
    queue: RateLimitingQueue<String>,
    /// Turns true once every definition stored at start is served.
    serving: tokio::sync::watch::Sender<bool>,
}

impl DefinitionController {
    pub fn new(
        informers: &InformerFactory,
        installer: Arc<Installer>,
    ) -> Result<Arc<Self>, DefinitionControllerError> {
        let registry = informers.registry().clone();
        let definitions = registry
            .store("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .ok_or(DefinitionControllerError::NoDefinitions)?;
        let informer = informers.informer_for(&definitions);
        Ok(Arc::new(Self {
            registry,
            definitions,
            installer,
            informer,
            queue: RateLimitingQueue::with_default_rate_limiter("crd_naming_condition_controller"),
            serving: tokio::sync::watch::Sender::new(false),
        }))
    }

    /// Whether the definitions stored at start are served.
    pub fn has_synced(&self) -> bool {
        *self.serving.borrow()
    }

    /// Waits until the definitions stored at start are served.
    pub async fn wait_for_sync(&self) {
        let mut serving = self.serving.subscribe();
        let _ = serving.wait_for(|s| *s).await;
    }

    /// Runs until `stop` fires.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        info!("starting customresourcedefinition controller");
        let notifications = self.informer.subscribe();
        let dispatcher = {
            let this = self.clone();
            dispatch(notifications, stop.clone(), move |n| {
                this.on_notification(n)
            })
        };
        let synced = tokio::select! {
            synced = self.informer.wait_for_sync() => synced,
            () = stop.cancelled() => false,
        };
        if synced {
            // What is already established is served before anything else happens.
            for obj in self.informer.indexer().list() {
                self.installer.sync(&obj);
            }
            self.serving.send_replace(true);
        }
        let this = self.clone();
        run_workers(
            "customresourcedefinition",
            self.queue.clone(),
            WORKERS,
            stop.clone(),
            move |name| {
                let this = this.clone();
                async move {
                    let result = this.sync(&name).await;
                    if let Err(e) = &result {
                        warn!(definition = %name, error = %e, "syncing customresourcedefinition failed; retrying");
                    }
                    Next::from(result)
                }
            },
        )
        .await;
        if let Err(e) = dispatcher.await {
            warn!(error = %e, "customresourcedefinition controller task failed");
        }
        info!("customresourcedefinition controller stopped");
    }

    fn on_notification(&self, notification: Notification) {
        let name = match &notification {
            Notification::Add(obj) => object::name(obj).to_string(),
            Notification::Update { new, .. } => object::name(new).to_string(),
            Notification::Delete(gone) => match gone.key() {
                Ok(key) => key,
                Err(_) => return,
            },
        };
        // A change of names may free names another definition is waiting for.
        if let Notification::Update { old, new } = &notification {
            if old.pointer("/status/acceptedNames") != new.pointer("/status/acceptedNames")
                || object::deletion_timestamp(new).is_some()
            {
                self.requeue_group(new);
            }
        }
        if let Notification::Delete(gone) = &notification {
            if let Some(obj) = gone.object() {
                self.requeue_group(obj);
            }
        }
        self.queue.add(name);
    }

    /// Others of the same group may now get names they wanted.
    fn requeue_group(&self, changed: &Value) {
        let group = changed.pointer("/spec/group").cloned();
        for other in self.informer.indexer().list() {
            if other.pointer("/spec/group") == group.as_ref()
                && object::name(&other) != object::name(changed)
            {
                let other = Definition::parse(&other);
                if !other.condition("NamesAccepted") {
                    self.queue.add(other.metadata.name);
                }
            }
        }
    }

    /// Brings one definition along; `Some(wait)` to look again later.
    async fn sync(&self, name: &str) -> Result<Option<Duration>, RegistryError> {
        let Some(obj) = self.informer.indexer().get(name) else {
            debug!(definition = name, "definition gone");
            self.installer.remove(name);
            return Ok(None);
        };
        let crd = Definition::parse(&obj);
        self.installer.sync(&obj);
        if crd.terminating() {
            return self.finalize(&obj, &crd).await;
        }
        self.accept_names(&obj, &crd).await?;
        Ok(None)
    }

    /// NamesAccepted, acceptedNames and Established, written when they change.
    async fn accept_names(&self, obj: &Value, crd: &Definition) -> Result<(), RegistryError> {
        let others: Vec<Definition> = self
            .informer
            .indexer()
            .list()
            .iter()
            .map(|o| Definition::parse(o))
            .collect();
        let builtin: Vec<_> = self
            .registry
            .catalogue()
            .all()
            .iter()
            .filter(|r| {
                // Custom resources' own entries are not built-ins.
                !others
                    .iter()
                    .any(|o| o.spec.group == r.group && o.status.accepted_names.plural == r.plural)
            })
            .cloned()
            .collect();
        let naming = names(
            crd,
            &Taken {
                others: &others,
                builtin: &builtin,
            },
        );
        let mut status = obj.get("status").cloned().unwrap_or_else(|| json!({}));
        if !status.is_object() {
            status = json!({});
        }
        status["acceptedNames"] = naming.accepted;
        let (state, reason, message) = &naming.condition;
        set_condition(
            &mut status,
            "NamesAccepted",
            state.as_str(),
            reason,
            message,
        );
        if *state == ConditionStatus::True && !crd.established() {
            set_condition(
                &mut status,
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
            );
        } else if *state != ConditionStatus::True && !crd.established() {
            set_condition(
                &mut status,
                "Established",
                "False",
                "NotAccepted",
                "not all names are accepted",
            );
        }
        if status.get("conditions") != obj.pointer("/status/conditions") {
            // Served before it says Established, so a client that waited for the condition
            // finds the resource at once.
            let mut next = obj.clone();
            next["status"] = status.clone();
            self.installer.sync(&next);
        }
        self.write_status(obj, status).await
    }

    /// Deletes the custom resources, then takes the cleanup finalizer off.
    async fn finalize(
        &self,
        obj: &Value,
        crd: &Definition,
    ) -> Result<Option<Duration>, RegistryError> {
        if !crd
            .metadata
            .finalizers
            .iter()
            .any(|f| f == CLEANUP_FINALIZER)
        {
            return Ok(None);
        }
        let mut status = obj.get("status").cloned().unwrap_or_else(|| json!({}));
        set_condition(
            &mut status,
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        );
        self.write_status(obj, status.clone()).await?;
        match delete_instances(&self.registry, crd).await {
            Ok(Progress::Done) => {}
            Ok(Progress::Remaining { remaining }) => {
                debug!(definition = %crd.metadata.name, remaining, "custom resources remain");
                return Ok(Some(INSTANCES_RECHECK));
            }
            Err(e) => {
                let mut failed = status.clone();
                set_condition(
                    &mut failed,
                    "Terminating",
                    "True",
                    "InstanceDeletionFailed",
                    &format!("could not delete instances: {e}"),
                );
                let current = self.current(&crd.metadata.name).await?;
                self.write_status(&current, failed).await?;
                return Err(e);
            }
        }
        let current = self.current(&crd.metadata.name).await?;
        let mut done = current.get("status").cloned().unwrap_or_else(|| json!({}));
        set_condition(
            &mut done,
            "Terminating",
            "True",
            "InstanceDeletionCompleted",
            "removed all instances",
        );
        self.write_status(&current, done).await?;
        let mut current = self.current(&crd.metadata.name).await?;
        let finalizers: Vec<Value> = object::finalizers(&current)
            .into_iter()
            .filter(|f| f != CLEANUP_FINALIZER)
            .map(Value::from)
            .collect();
        let last = finalizers.is_empty();
        object::meta_mut(&mut current).insert("finalizers".into(), Value::from(finalizers));
        info!(definition = %crd.metadata.name, "custom resources removed; releasing definition");
        if last {
            // Routes and discovery go before the definition does, so whoever sees it gone
            // (kubectl delete waits for that) finds its resources gone too. Should the write
            // fail, the retry serves them again until it succeeds.
            self.installer.remove(&crd.metadata.name);
        }
        match self
            .definitions
            .update(
                None,
                &crd.metadata.name,
                current,
                Subresource::Main,
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) | Err(RegistryError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn current(&self, name: &str) -> Result<Value, RegistryError> {
        self.definitions.get(None, name, &Default::default()).await
    }

    /// Writes `status` through the status subresource unless it is what `obj` has.
    async fn write_status(&self, obj: &Value, status: Value) -> Result<(), RegistryError> {
        if obj.get("status") == Some(&status) {
            return Ok(());
        }
        let mut next = obj.clone();
        next["status"] = status;
        match self
            .definitions
            .update(
                None,
                object::name(obj),
                next,
                Subresource::Status,
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) | Err(RegistryError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
