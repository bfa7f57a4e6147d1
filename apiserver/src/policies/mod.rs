//! ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA; upstream's
//! k8s.io/apiserver/pkg/admission/plugin/policy/validating): the ValidatingAdmissionPolicy
//! plugin of the admission chain. Each binding, in name order, applies its policy to the
//! requests the policy's `matchConstraints` and the binding's `matchResources` take in (rules,
//! excluded rules, namespace and object selectors), once per parameter object its `paramRef`
//! finds (or once without); the policy's `matchConditions` may pass the request over, its
//! `variables` are computed in order, and each of its `validations` that is false (or fails,
//! under `failurePolicy: Fail`) is a violation, worded by its `message`, its
//! `messageExpression` or upstream's `failed expression: ...`, acted on by the binding's
//! `validationActions`: Deny refuses in upstream's words and code, Warn warns the client,
//! Audit annotates the audit event. `auditAnnotations` annotate it too. Rules take requests
//! in through an equivalent version (`matchPolicy: Equivalent`, the default) as webhooks'
//! do; the policy then sees the objects in that version.
//!
//! The CEL environment is the one of CRD rules (`apiextensions::cel`), over JSON. Every
//! expression is compiled once, when the policies are loaded; a request's values are turned
//! into CEL values only when an expression reads them, and `variables` are computed when
//! first read and keep their CEL values (a quantity stays a quantity). `authorizer` asks the
//! server's authorizer as the requesting user (upstream's authorizer library). Each new
//! generation of a policy is type-checked against the kinds it matches (`typecheck`).

mod evaluate;
mod typecheck;

pub use evaluate::authorizer;

use std::collections::HashMap;
use std::sync::{Arc, RwLock, Weak};

use async_trait::async_trait;
use registry::admission::{Attributes, Operation, Plugin};
use registry::catalogue::{Catalogue, ResourceInfo};
use registry::error::Result;
use registry::object::Object;
use registry::Registry;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::webhooks::rules;

const GROUP: &str = "admissionregistration.k8s.io";

/// The policies and bindings, as last seen.
#[derive(Default)]
struct State {
    policies: HashMap<String, Arc<Value>>,
    /// By name.
    bindings: Vec<Arc<Value>>,
    programs: evaluate::Programs,
}

pub struct Policies {
    registry: Weak<Registry>,
    state: RwLock<Arc<State>>,
    /// The policies (name, generation) being type-checked: reloads while one is under way do
    /// not start it again.
    checking: std::sync::Mutex<std::collections::HashSet<(String, i64)>>,
}

impl Policies {
    /// Builds the plugin and hands it to the registry's admission chain.
    pub fn provide(registry: &Arc<Registry>) -> Arc<Self> {
        let plugin = Arc::new(Self {
            registry: Arc::downgrade(registry),
            state: RwLock::default(),
            checking: Default::default(),
        });
        registry.provide_admission_plugin("ValidatingAdmissionPolicy", plugin.clone());
        plugin
    }

    fn state(&self) -> Arc<State> {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Keeps the policies and bindings in step until `stop`.
    pub fn watch(
        self: &Arc<Self>,
        informers: &::client::informer::InformerFactory,
        stop: CancellationToken,
    ) {
        let (policies, bindings) = match (
            informers.informer(GROUP, "v1", "validatingadmissionpolicies"),
            informers.informer(GROUP, "v1", "validatingadmissionpolicybindings"),
        ) {
            (Ok(p), Ok(b)) => (p, b),
            _ => {
                warn!("admission policies are not served; the plugin stays off");
                return;
            }
        };
        let reload = {
            let this = self.clone();
            let (p, b) = (policies.indexer().clone(), bindings.indexer().clone());
            move || {
                let mut bound = b.list();
                bound.sort_by(|x, y| registry::object::name(x).cmp(registry::object::name(y)));
                let policies: HashMap<String, Arc<Value>> = p
                    .list()
                    .into_iter()
                    .map(|x| (registry::object::name(&x).to_string(), x))
                    .collect();
                this.type_check(policies.values());
                let state = State {
                    programs: evaluate::Programs::of(policies.values().map(|p| p.as_ref())),
                    policies,
                    bindings: bound,
                };
                *this.state.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(state);
            }
        };
        ::client::informer::reload_on_change([policies, bindings], stop, reload);
    }
}

impl Policies {
    /// Type-checks the policies whose status is behind their generation, each once, off the
    /// async threads (schemas are large), and writes their status.
    fn type_check<'a>(self: &Arc<Self>, policies: impl Iterator<Item = &'a Arc<Value>>) {
        for policy in policies.filter(|p| typecheck::stale(p)) {
            let key = (
                registry::object::name(policy).to_string(),
                policy["metadata"]["generation"].as_i64().unwrap_or(0),
            );
            let mut checking = self.checking.lock().unwrap_or_else(|e| e.into_inner());
            if !checking.insert(key.clone()) {
                continue;
            }
            drop(checking);
            let (this, policy) = (self.clone(), policy.clone());
            tokio::spawn(async move {
                if let Some(registry) = this.registry.upgrade() {
                    let check = registry.clone();
                    let checked = policy.clone();
                    let warnings =
                        tokio::task::spawn_blocking(move || typecheck::warnings(&check, &checked))
                            .await
                            .unwrap_or_default();
                    typecheck::sync(&registry, &policy, warnings).await;
                }
                this.checking
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&key);
            });
        }
    }
}

/// How the rules of a `matchResources` (or `matchConstraints`) take a request in: its
/// `resourceRules` (through an equivalent version unless its matchPolicy is Exact) and not its
/// `excludeResourceRules`; None when they do not.
fn rules_take(
    catalogue: &Catalogue,
    match_resources: &Value,
    attrs: &Attributes<'_>,
    name: &str,
) -> Option<rules::Taken> {
    let policy = &match_resources["matchPolicy"];
    let named = |key: &str| -> Value {
        let rules = match_resources[key].as_array().into_iter().flatten();
        Value::Array(
            rules
                .filter(|r| rules::names_match(r, name))
                .cloned()
                .collect(),
        )
    };
    let take = |key: &str| {
        rules::taken(
            catalogue,
            &named(key),
            policy,
            attrs.info,
            attrs.operation,
            attrs.subresource,
        )
    };
    let taken = take("resourceRules")?;
    take("excludeResourceRules").is_none().then_some(taken)
}

/// Whether `match_resources` takes the request in (rules, then selectors), and how.
fn selected(
    catalogue: &Catalogue,
    match_resources: &Value,
    attrs: &Attributes<'_>,
    name: &str,
    namespace_labels: Option<&Value>,
    objects: &[&Value],
) -> Option<rules::Taken> {
    let taken = rules_take(catalogue, match_resources, attrs, name)?;
    let namespace_ok = namespace_labels.is_none_or(|labels| {
        rules::selector_matches(&match_resources["namespaceSelector"], labels)
    });
    let object_ok = objects.is_empty()
        || objects.iter().any(|o| {
            rules::selector_matches(&match_resources["objectSelector"], &o["metadata"]["labels"])
        });
    (namespace_ok && object_ok).then_some(taken)
}

/// The request's objects in the version a policy takes it in through (upstream evaluates a
/// policy on the object converted to the version its rules matched).
async fn converted(
    registry: &Registry,
    info: &ResourceInfo,
    attrs: &Attributes<'_>,
    obj: Option<&Object>,
) -> Result<(Option<Object>, Option<Object>)> {
    let store = |i: &ResourceInfo| {
        registry
            .store(&i.group, &i.version, &i.plural)
            .ok_or_else(|| {
                registry::RegistryError::Internal(format!(
                    "{} is not served",
                    i.qualified_resource()
                ))
            })
    };
    let (from, to) = (store(attrs.info)?, store(info)?);
    let obj = match obj {
        Some(o) => Some(from.convert_for(o, &to).await?),
        None => None,
    };
    let old = match attrs.old {
        Some(o) => Some(from.convert_for(o, &to).await?),
        None => None,
    };
    Ok((obj, old))
}

#[async_trait]
impl Plugin for Policies {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionPolicy"
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        if rules::exempt(&info.group, &info.plural) {
            return false;
        }
        let state = self.state();
        if state.bindings.is_empty() {
            return false;
        }
        let Some(registry) = self.registry.upgrade() else {
            return false;
        };
        state.bindings.iter().any(|b| {
            let Some(policy) = b["spec"]["policyName"]
                .as_str()
                .and_then(|p| state.policies.get(p))
            else {
                return false;
            };
            let constraints = &policy["spec"]["matchConstraints"];
            rules::taken(
                registry.catalogue(),
                &constraints["resourceRules"],
                &constraints["matchPolicy"],
                info,
                operation,
                subresource,
            )
            .is_some()
        })
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes<'_>, obj: Option<&Object>) -> Result<()> {
        let Some(registry) = self.registry.upgrade() else {
            return Ok(());
        };
        let state = self.state();
        let catalogue = registry.catalogue();
        let name = if attrs.name.is_empty() {
            obj.map(registry::object::name).unwrap_or_default()
        } else {
            attrs.name
        };
        let objects: Vec<&Value> = [obj, attrs.old].into_iter().flatten().collect();
        let namespace_labels = rules::namespace_labels(&registry, attrs, obj).await;
        let namespace_object = rules::namespace_object(&registry, attrs).await;
        let mut context = None;
        for binding in &state.bindings {
            let Some(policy) = binding["spec"]["policyName"]
                .as_str()
                .and_then(|p| state.policies.get(p))
            else {
                continue;
            };
            let select = |match_resources: &Value| {
                selected(
                    catalogue,
                    match_resources,
                    attrs,
                    name,
                    namespace_labels.as_ref(),
                    &objects,
                )
            };
            let Some(taken) = select(&policy["spec"]["matchConstraints"]) else {
                continue;
            };
            let binding_match = &binding["spec"]["matchResources"];
            if binding_match.is_object()
                && binding_match.get("resourceRules").is_some()
                && select(binding_match).is_none()
            {
                continue;
            }
            if let rules::Taken::As(info) = &taken {
                // Evaluated on the objects in the version the policy's rules name.
                let (seen, old) = converted(&registry, info, attrs, obj).await?;
                let seen_attrs = Attributes {
                    info,
                    old: old.as_ref(),
                    ..*attrs
                };
                let context = evaluate::Context::new(
                    &registry,
                    &seen_attrs,
                    seen.as_ref(),
                    namespace_object.clone(),
                    attrs.info,
                );
                evaluate::apply(
                    &registry,
                    &state.programs,
                    policy,
                    binding,
                    &context,
                    attrs,
                    obj,
                )
                .await?;
                continue;
            }
            let context = context.get_or_insert_with(|| {
                evaluate::Context::new(&registry, attrs, obj, namespace_object.clone(), attrs.info)
            });
            evaluate::apply(
                &registry,
                &state.programs,
                policy,
                binding,
                context,
                attrs,
                obj,
            )
            .await?;
        }
        Ok(())
    }
}
