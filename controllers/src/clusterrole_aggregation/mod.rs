//! The ClusterRole aggregation controller (upstream's pkg/controller/clusterroleaggregation): a
//! ClusterRole with an aggregationRule holds the rules of every ClusterRole its selectors
//! match, so `admin`, `edit` and `view` grow with the roles labelled to aggregate into them
//! (CRD authors' roles among them) and shrink when such a role goes or loses its label.

use std::collections::BTreeMap;
use std::sync::Arc;

use registry::options::WriteOptions;
use registry::rbac::bootstrap::rule::{rules_of, to_json, PolicyRule};
use registry::selector::LabelSelector;
use registry::{object, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use client::controller::Controller;
use client::informer::{InformerFactory, SharedInformer};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

/// Upstream's field manager for the aggregated rules.
pub const FIELD_MANAGER: &str = "clusterrole-aggregation-controller";
const WORKERS: usize = 5;
const GROUP: &str = "rbac.authorization.k8s.io";

#[derive(Debug, Error)]
pub enum ClusterRoleAggregationError {
    #[error("the registry serves no rbac.authorization.k8s.io/v1 clusterroles")]
    NoClusterRoles,
}

pub struct ClusterRoleAggregationController {
    cluster_roles: SharedInformer,
    store: Arc<Store>,
    /// Names of aggregated ClusterRoles.
    queue: RateLimitingQueue<String>,
}

impl ClusterRoleAggregationController {
    pub fn new(informers: &InformerFactory) -> Result<Arc<Self>, ClusterRoleAggregationError> {
        let store = informers
            .registry()
            .store(GROUP, "v1", "clusterroles")
            .ok_or(ClusterRoleAggregationError::NoClusterRoles)?;
        Ok(Arc::new(Self {
            cluster_roles: informers.informer_for(&store),
            store,
            queue: RateLimitingQueue::with_default_rate_limiter("ClusterRoleAggregator"),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let name = "clusterrole-aggregation-controller";
        Controller::new(name, self.clone(), self.queue.clone())
            .workers(WORKERS)
            // Which aggregated role a change feeds is not known without the whole graph, and
            // ClusterRoles are few: any change looks at every aggregated role again.
            .handles(&self.cluster_roles, |cra, _| cra.enqueue_aggregated())
            .run(stop, |cra, role| async move {
                Next::after_sync(cra.sync(&role).await, |e| {
                    warn!(clusterrole = %role, error = %e, "aggregating rules failed; retrying")
                })
            })
            .await
    }

    fn enqueue_aggregated(&self) {
        for role in self.cluster_roles.indexer().list() {
            if aggregation_rule(&role).is_some() {
                self.queue.add(object::name(&role).to_string());
            }
        }
    }

    async fn sync(&self, name: &str) -> Result<(), RegistryError> {
        let Some(role) = self.cluster_roles.indexer().get(name) else {
            return Ok(());
        };
        let Some(selectors) = aggregation_rule(&role) else {
            return Ok(());
        };
        let all = self.cluster_roles.indexer().list();
        // By name, as upstream orders the union, each role once however many selectors match.
        let mut matched: BTreeMap<&str, &Value> = BTreeMap::new();
        for selector in selectors {
            let selector = LabelSelector::from_label_selector_json(selector)
                .map_err(|e| RegistryError::BadRequest(e.message().to_string()))?;
            for other in &all {
                if selector.matches_labels(object::labels(other)) {
                    matched.insert(object::name(other), other);
                }
            }
        }
        let mut rules: Vec<PolicyRule> = Vec::new();
        for (other, source) in matched {
            if other == name {
                continue;
            }
            for rule in rules_of(source.get("rules")) {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
        }
        if rules == rules_of(role.get("rules")) {
            return Ok(());
        }
        let mut applied = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
        });
        if !rules.is_empty() {
            applied["rules"] = Value::Array(rules.iter().map(to_json).collect());
        }
        let body = serde_json::to_vec(&applied)
            .map_err(|e| RegistryError::Internal(format!("encoding {name}: {e}")))?;
        let opts = WriteOptions {
            force: true,
            ..WriteOptions::by(FIELD_MANAGER)
        };
        self.store
            .apply(None, name, &body, Subresource::Main, &opts)
            .await?;
        debug!(clusterrole = name, rules = rules.len(), "aggregated rules");
        Ok(())
    }
}

/// The role's clusterRoleSelectors, when it is aggregated.
fn aggregation_rule(role: &Value) -> Option<&[Value]> {
    let rule = role.get("aggregationRule").filter(|r| !r.is_null())?;
    Some(
        rule.get("clusterRoleSelectors")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]),
    )
}
