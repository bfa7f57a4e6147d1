//! Admission webhooks (upstream's k8s.io/apiserver/pkg/admission/plugin/webhook): the
//! MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins of the admission chain.
//! Every webhook of the MutatingWebhookConfigurations and ValidatingWebhookConfigurations
//! whose rules, selectors and matchConditions take a request in is sent an `AdmissionReview`
//! (`admission.k8s.io/v1`, or v1beta1 when that is all a webhook accepts) over HTTPS:
//! mutating webhooks in order (configurations by name), their JSON patches applied one after
//! the other and those with `reinvocationPolicy: IfNeeded` called once more when a later one
//! changed the object; then validating webhooks all at once. A refusal answers the request in
//! upstream's words (`admission webhook "x" denied the request: ...`); a webhook that cannot
//! be called fails the request (`failurePolicy: Fail`, the default) or is passed over
//! (`Ignore`). Warnings reach the client, audit annotations the audit event.
//!
//! The configurations are watched: a change acts from the next request. Calls are measured in
//! upstream's `apiserver_admission_webhook_*` families. With `matchPolicy: Equivalent` (the
//! default) rules that do not name the request's version take it in through another version of
//! the same resource: the webhook is sent the objects converted to it (`kind` and `resource`
//! that version's, `requestKind` and `requestResource` the request's) and its patch is
//! converted back.

pub mod metrics;
mod pool;
pub(crate) mod review;
pub(crate) mod rules;
pub(crate) mod transport;

use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use async_trait::async_trait;
use registry::admission::{Attributes, Operation, Plugin};
use registry::catalogue::ResourceInfo;
use registry::error::{known_reason, Result};
use registry::object::Object;
use registry::{Registry, RegistryError};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};
use transport::Target;

/// Which of the two plugins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Mutating,
    Validating,
}

impl Kind {
    fn plural(self) -> &'static str {
        match self {
            Kind::Mutating => "mutatingwebhookconfigurations",
            Kind::Validating => "validatingwebhookconfigurations",
        }
    }

    fn plugin_name(self) -> &'static str {
        match self {
            Kind::Mutating => "MutatingAdmissionWebhook",
            Kind::Validating => "ValidatingAdmissionWebhook",
        }
    }
}

/// One webhook of one configuration.
#[derive(Clone)]
pub(crate) struct Hook {
    configuration: Arc<str>,
    webhook: Arc<Value>,
    /// Its matchConditions, compiled once when the configuration is loaded.
    conditions: Arc<Vec<review::Condition>>,
}

impl Hook {
    pub(crate) fn new(configuration: &str, webhook: Value) -> Self {
        let conditions = review::Condition::all_of(&webhook);
        Self {
            configuration: configuration.into(),
            webhook: Arc::new(webhook),
            conditions: Arc::new(conditions),
        }
    }

    fn name(&self) -> &str {
        self.webhook["name"].as_str().unwrap_or_default()
    }

    fn ignores_failure(&self) -> bool {
        self.webhook["failurePolicy"] == "Ignore"
    }

    fn timeout(&self) -> Duration {
        let seconds = self.webhook["timeoutSeconds"]
            .as_u64()
            .unwrap_or(10)
            .clamp(1, 30);
        Duration::from_secs(seconds)
    }
}

/// A request's objects in the version a webhook takes it in through (matchPolicy Equivalent).
struct Converted {
    info: Arc<ResourceInfo>,
    obj: Option<Object>,
    old: Option<Object>,
}

/// A webhook admission plugin over the configurations it watches.
pub struct Webhooks {
    kind: Kind,
    registry: Weak<Registry>,
    hooks: RwLock<Arc<Vec<Hook>>>,
}

impl Webhooks {
    pub fn new(kind: Kind, registry: &Arc<Registry>) -> Arc<Self> {
        Arc::new(Self {
            kind,
            registry: Arc::downgrade(registry),
            hooks: RwLock::default(),
        })
    }

    /// Builds both plugins and hands them to the registry's admission chain.
    pub fn provide(registry: &Arc<Registry>) -> [Arc<Self>; 2] {
        let made = [
            Self::new(Kind::Mutating, registry),
            Self::new(Kind::Validating, registry),
        ];
        for plugin in &made {
            registry.provide_admission_plugin(plugin.kind.plugin_name(), plugin.clone());
        }
        made
    }

    fn hooks(&self) -> Arc<Vec<Hook>> {
        self.hooks.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The webhooks of `configurations`, configurations by name, each one's in order.
    fn reload(&self, mut configurations: Vec<Arc<Value>>) {
        configurations.sort_by(|a, b| registry::object::name(a).cmp(registry::object::name(b)));
        let hooks: Vec<Hook> = configurations
            .iter()
            .flat_map(|c| {
                let configuration = registry::object::name(c).to_string();
                c["webhooks"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |webhook| Hook::new(&configuration, webhook))
            })
            .collect();
        debug!(
            plugin = self.kind.plugin_name(),
            webhooks = hooks.len(),
            "webhook configuration loaded"
        );
        *self.hooks.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(hooks);
    }

    /// Keeps the webhooks in step with their configurations until `stop`.
    pub fn watch(
        self: &Arc<Self>,
        informers: &::client::informer::InformerFactory,
        stop: CancellationToken,
    ) {
        let informer =
            match informers.informer("admissionregistration.k8s.io", "v1", self.kind.plural()) {
                Ok(i) => i,
                Err(e) => {
                    warn!(error = %e, "webhook configurations are not served; webhooks stay off");
                    return;
                }
            };
        let this = self.clone();
        let indexer = informer.indexer().clone();
        ::client::informer::reload_on_change([informer], stop, move || this.reload(indexer.list()));
    }

    /// The labels namespaceSelector is matched against; None when it does not apply.
    async fn namespace_labels(
        &self,
        attrs: &Attributes<'_>,
        obj: Option<&Object>,
    ) -> Option<Value> {
        let registry = self.registry.upgrade()?;
        rules::namespace_labels(&registry, attrs, obj).await
    }

    /// The webhooks that take the request in (rules, namespace and object selectors), and how
    /// their rules take it (as it is, or through an equivalent version).
    async fn matching(
        &self,
        attrs: &Attributes<'_>,
        obj: Option<&Object>,
    ) -> Vec<(Hook, rules::Taken)> {
        let Some(registry) = self.registry.upgrade() else {
            return Vec::new();
        };
        let candidates: Vec<(Hook, rules::Taken)> = self
            .hooks()
            .iter()
            .filter_map(|h| {
                let taken = rules::taken(
                    registry.catalogue(),
                    &h.webhook["rules"],
                    &h.webhook["matchPolicy"],
                    attrs.info,
                    attrs.operation,
                    attrs.subresource,
                )?;
                Some((h.clone(), taken))
            })
            .collect();
        if candidates.is_empty() {
            return candidates;
        }
        let namespace_labels = self.namespace_labels(attrs, obj).await;
        candidates
            .into_iter()
            .filter(|(h, _)| match &namespace_labels {
                Some(labels) => rules::selector_matches(&h.webhook["namespaceSelector"], labels),
                None => true,
            })
            .filter(|(h, _)| {
                let selector = &h.webhook["objectSelector"];
                [obj, attrs.old]
                    .iter()
                    .flatten()
                    .any(|o| rules::selector_matches(selector, &o["metadata"]["labels"]))
                    || (obj.is_none() && attrs.old.is_none())
            })
            .collect()
    }

    /// The request's object and old object in the version a webhook takes the request in
    /// through (upstream converts them for it); None when it takes the request as it is.
    async fn converted(
        &self,
        taken: &rules::Taken,
        attrs: &Attributes<'_>,
        obj: Option<&Object>,
    ) -> Result<Option<Converted>> {
        let rules::Taken::As(info) = taken else {
            return Ok(None);
        };
        let (from, to) = self.stores(attrs.info, info)?;
        let mut converted = Converted {
            info: info.clone(),
            obj: None,
            old: None,
        };
        if let Some(obj) = obj {
            converted.obj = Some(from.convert_for(obj, &to).await?);
        }
        if let Some(old) = attrs.old {
            converted.old = Some(from.convert_for(old, &to).await?);
        }
        Ok(Some(converted))
    }

    /// The Stores of the request's version and of an equivalent one.
    fn stores(
        &self,
        requested: &ResourceInfo,
        equivalent: &ResourceInfo,
    ) -> Result<(Arc<registry::Store>, Arc<registry::Store>)> {
        let registry = self
            .registry
            .upgrade()
            .ok_or_else(|| RegistryError::Internal("the server is stopping".into()))?;
        let store = |i: &ResourceInfo| {
            registry
                .store(&i.group, &i.version, &i.plural)
                .ok_or_else(|| {
                    RegistryError::Internal(format!("{} is not served", i.qualified_resource()))
                })
        };
        Ok((store(requested)?, store(equivalent)?))
    }

    /// Calls one webhook; Ok(None) when it is passed over (matchConditions false, or a
    /// failure it ignores).
    async fn call(
        &self,
        hook: &Hook,
        attrs: &Attributes<'_>,
        obj: Option<&Object>,
        converted: Option<&Converted>,
    ) -> Result<Option<review::Response>> {
        let name = hook.name().to_string();
        let review = match converted {
            None => review::request(hook, attrs, obj),
            Some(c) => {
                let seen = Attributes {
                    info: &c.info,
                    old: c.old.as_ref(),
                    ..*attrs
                };
                review::request_as(hook, &seen, c.obj.as_ref(), attrs.info)
            }
        };
        let authorizer = self.registry.upgrade().and_then(|registry| {
            let name = if attrs.name.is_empty() {
                obj.map(registry::object::name).unwrap_or_default()
            } else {
                attrs.name
            };
            crate::policies::authorizer(&registry, attrs, name)
        });
        match review::match_conditions(hook, &review, authorizer) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) if hook.ignores_failure() => {
                warn!(webhook = %name, error = %e, "matchConditions failed; the webhook is passed over");
                return Ok(None);
            }
            Err(e) => {
                return Err(RegistryError::Internal(format!(
                    "failed calling webhook \"{name}\": {e}"
                )))
            }
        }
        if attrs.dry_run && !review::side_effect_free(hook) {
            return Err(RegistryError::BadRequest(format!(
                "admission webhook \"{name}\" does not support dry run"
            )));
        }
        let called = async {
            let registry = self.registry.upgrade().ok_or("the server is stopping")?;
            let target: Target =
                transport::resolve(&registry, &hook.webhook["clientConfig"]).await?;
            let body = serde_json::to_vec(&review.document).map_err(|e| e.to_string())?;
            let answer = transport::post(&target, body, hook.timeout()).await?;
            review::response(&answer, &review.uid)
        };
        let started = std::time::Instant::now();
        let result = called.await;
        let operation = rules::operation_name(attrs.operation);
        let outcome = match &result {
            Ok(response) => metrics::Outcome::Answered {
                rejected: !response.allowed,
                code: response.status["code"].as_u64().unwrap_or(400).max(400) as u16,
            },
            Err(_) if hook.ignores_failure() => metrics::Outcome::FailedOpen,
            Err(_) => metrics::Outcome::Failed,
        };
        metrics::record(self.kind, &name, operation, started.elapsed(), &outcome);
        match result {
            Ok(response) => Ok(Some(response)),
            Err(e) if hook.ignores_failure() => {
                warn!(webhook = %name, error = %e, "calling the webhook failed; failurePolicy Ignore");
                Ok(None)
            }
            Err(e) => Err(RegistryError::Internal(format!(
                "failed calling webhook \"{name}\": failed to call webhook: {e}"
            ))),
        }
    }
}

/// upstream's ToStatusErr: a webhook's refusal as the request's error.
fn denied(name: &str, status: &Value) -> RegistryError {
    let code = status["code"].as_u64().unwrap_or(0) as u16;
    let code = if code < 400 { 400 } else { code };
    let by = format!("admission webhook \"{name}\" denied the request");
    let message = match (status["message"].as_str(), status["reason"].as_str()) {
        (Some(m), _) if !m.is_empty() => format!("{by}: {m}"),
        (_, Some(r)) if !r.is_empty() => format!("{by}: {r}"),
        _ => format!("{by} without explanation"),
    };
    RegistryError::Rejected {
        code,
        reason: known_reason(status["reason"].as_str().unwrap_or_default()),
        message,
        details: None,
    }
}

/// What a response brings besides its verdict: warnings, audit annotations.
fn record(hook: &Hook, response: &review::Response) {
    for w in &response.warnings {
        registry::warning::add(w.clone());
    }
    for (key, value) in &response.audit_annotations {
        registry::audit::annotate(format!("{}/{key}", hook.name()), value.clone());
    }
}

#[async_trait]
impl Plugin for Webhooks {
    fn name(&self) -> &'static str {
        self.kind.plugin_name()
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        if rules::exempt(&info.group, &info.plural) {
            return false;
        }
        let Some(registry) = self.registry.upgrade() else {
            return false;
        };
        self.hooks().iter().any(|h| {
            rules::taken(
                registry.catalogue(),
                &h.webhook["rules"],
                &h.webhook["matchPolicy"],
                info,
                operation,
                subresource,
            )
            .is_some()
        })
    }

    fn mutates(&self) -> bool {
        self.kind == Kind::Mutating
    }

    fn validates(&self) -> bool {
        self.kind == Kind::Validating
    }

    async fn admit(&self, attrs: &Attributes<'_>, mut obj: Option<&mut Object>) -> Result<()> {
        let hooks = self.matching(attrs, obj.as_deref()).await;
        // Webhooks asking to be called again (IfNeeded), and whether another one changed the
        // object since each was last called.
        let mut reinvoke: Vec<usize> = Vec::new();
        let mut changed_after: Vec<bool> = vec![false; hooks.len()];
        for round in 0..2 {
            for (i, (hook, taken)) in hooks.iter().enumerate() {
                if round == 1 && !(reinvoke.contains(&i) && changed_after[i]) {
                    continue;
                }
                let converted = self.converted(taken, attrs, obj.as_deref()).await?;
                let Some(response) = self
                    .call(hook, attrs, obj.as_deref(), converted.as_ref())
                    .await?
                else {
                    continue;
                };
                record(hook, &response);
                if !response.allowed {
                    return Err(denied(hook.name(), &response.status));
                }
                let mut mutated = false;
                if let (Some(patch), Some(target)) = (&response.patch, obj.as_deref_mut()) {
                    // The patch is of the object as the webhook saw it, in its version.
                    let seen = converted.as_ref().and_then(|c| c.obj.as_ref());
                    let failed = |e: String| {
                        RegistryError::Internal(format!(
                            "failed calling webhook \"{}\": {e}",
                            hook.name()
                        ))
                    };
                    let mut patched =
                        review::apply(seen.unwrap_or(target), patch).map_err(failed)?;
                    if let Some(c) = &converted {
                        let (requested, equivalent) = self.stores(attrs.info, &c.info)?;
                        patched = equivalent.convert_for(&patched, &requested).await?;
                    }
                    mutated = patched != *target;
                    *target = patched;
                }
                registry::audit::annotate(
                    format!("mutation.webhook.admission.k8s.io/round_{round}_index_{i}"),
                    serde_json::json!({
                        "configuration": hook.configuration.as_ref(),
                        "webhook": hook.name(),
                        "mutated": mutated,
                    })
                    .to_string(),
                );
                if mutated {
                    for (j, flag) in changed_after.iter_mut().enumerate() {
                        if j != i {
                            *flag = true;
                        }
                    }
                }
                if round == 0 && hook.webhook["reinvocationPolicy"] == "IfNeeded" {
                    reinvoke.push(i);
                    changed_after[i] = false;
                }
            }
            if reinvoke.iter().all(|i| !changed_after[*i]) {
                break;
            }
        }
        Ok(())
    }

    async fn validate(&self, attrs: &Attributes<'_>, obj: Option<&Object>) -> Result<()> {
        let hooks = self.matching(attrs, obj).await;
        let calls = hooks.iter().map(|(hook, taken)| async move {
            let converted = self.converted(taken, attrs, obj).await?;
            let response = self.call(hook, attrs, obj, converted.as_ref()).await?;
            Ok::<_, RegistryError>((hook, response))
        });
        let results = futures::future::join_all(calls).await;
        let mut first_error = None;
        for result in results {
            match result {
                Ok((hook, Some(response))) => {
                    record(hook, &response);
                    if !response.allowed && first_error.is_none() {
                        first_error = Some(denied(hook.name(), &response.status));
                    }
                }
                Ok((_, None)) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
