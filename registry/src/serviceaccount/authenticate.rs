//! Service account tokens back into users (upstream's jwtTokenAuthenticator with its
//! validator in claims.go): a verified token names a user only while its account, and the
//! pod, secret or node it is bound to, still exist with the uids it names.

use std::collections::BTreeMap;

use serde_json::Value;

use super::claims::{group_names, username, Claims, LEEWAY_SECONDS};
use super::jwt::TokenError;
use crate::auth::{UserInfo, CREDENTIAL_ID};
use crate::error::RegistryError;
use crate::object;
use crate::options::ListOptions;
use crate::Registry;

/// upstream's serviceaccount.PodNameKey and friends (user extra keys).
pub const POD_NAME_KEY: &str = "authentication.kubernetes.io/pod-name";
pub const POD_UID_KEY: &str = "authentication.kubernetes.io/pod-uid";
pub const NODE_NAME_KEY: &str = "authentication.kubernetes.io/node-name";
pub const NODE_UID_KEY: &str = "authentication.kubernetes.io/node-uid";

impl Registry {
    /// The user of a service account token: None when the token is not one of ours (its
    /// issuer is not ours, or no tokens are configured), an error when it is ours but not
    /// (or no longer) good. Groups do not include `system:authenticated`; the authenticator
    /// adds it.
    pub async fn authenticate_service_account_token(
        &self,
        token: &str,
    ) -> Result<Option<UserInfo>, TokenError> {
        Ok(self
            .authenticate_service_account_token_for(token, None)
            .await?
            .map(|(user, _)| user))
    }

    /// The user of a service account token for `audiences` (None: the server's), and the
    /// audiences of those the token is for (upstream's TokenReview status.audiences).
    pub async fn authenticate_service_account_token_for(
        &self,
        token: &str,
        audiences: Option<&[String]>,
    ) -> Result<Option<(UserInfo, Vec<String>)>, TokenError> {
        let Some(config) = self.service_account_tokens() else {
            return Ok(None);
        };
        if token.len() > super::jwt::MAX_TOKEN_BYTES || !config.verifier.is_ours(token) {
            return Ok(None);
        }
        let now = chrono::Utc::now().timestamp();
        let target = audiences.unwrap_or(&config.verifier.audiences);
        let claims = config.verifier.verify_for(token, now, target)?;
        let matched: Vec<String> = if target.is_empty() {
            claims.aud.clone()
        } else {
            target
                .iter()
                .filter(|a| claims.aud.contains(a))
                .cloned()
                .collect()
        };
        let user = self.validate_binding(&claims, now).await?;
        Ok(Some((user, matched)))
    }

    async fn validate_binding(&self, claims: &Claims, now: i64) -> Result<UserInfo, TokenError> {
        let private = claims.kubernetes.clone().unwrap_or_default();
        let namespace = private.namespace.as_str();
        let account = &private.serviceaccount;
        // Things deleted before now minus the leeway are gone; a moment's grace for clocks.
        let gone = |obj: &Value| {
            object::deletion_timestamp(obj)
                .and_then(object::parse_time)
                .is_some_and(|at| at.timestamp() < now - LEEWAY_SECONDS)
        };
        let sa = self
            .live("serviceaccounts", Some(namespace), &account.name)
            .await?;
        if gone(&sa) {
            return Err(TokenError::Binding(format!(
                "service account {namespace}/{} has been deleted",
                account.name
            )));
        }
        if object::uid(&sa) != account.uid {
            return Err(TokenError::Binding(format!(
                "service account UID ({}) does not match claim ({})",
                object::uid(&sa),
                account.uid
            )));
        }
        if let Some(secret_ref) = &private.secret {
            let secret = self
                .live("secrets", Some(namespace), &secret_ref.name)
                .await?;
            if gone(&secret) {
                return Err(TokenError::Binding("secret has been deleted".into()));
            }
            if object::uid(&secret) != secret_ref.uid {
                return Err(TokenError::Binding(format!(
                    "secret UID ({}) does not match service account secret ref claim ({})",
                    object::uid(&secret),
                    secret_ref.uid
                )));
            }
        }
        let mut extra = BTreeMap::new();
        if let Some(pod_ref) = &private.pod {
            let pod = self.live("pods", Some(namespace), &pod_ref.name).await?;
            if gone(&pod) {
                return Err(TokenError::Binding("pod has been deleted".into()));
            }
            if object::uid(&pod) != pod_ref.uid {
                return Err(TokenError::Binding(format!(
                    "pod UID ({}) does not match claim ({})",
                    object::uid(&pod),
                    pod_ref.uid
                )));
            }
            if !pod_ref.name.is_empty() && !pod_ref.uid.is_empty() {
                extra.insert(POD_NAME_KEY.to_string(), vec![pod_ref.name.clone()]);
                extra.insert(POD_UID_KEY.to_string(), vec![pod_ref.uid.clone()]);
            }
        }
        if let Some(node_ref) = &private.node {
            // A pod-bound token only reports its node; a node-bound one lives with it.
            if private.pod.is_none() {
                let node = self.live("nodes", None, &node_ref.name).await?;
                if gone(&node) {
                    return Err(TokenError::Binding("node has been deleted".into()));
                }
                if object::uid(&node) != node_ref.uid {
                    return Err(TokenError::Binding(format!(
                        "node UID ({}) does not match claim ({})",
                        object::uid(&node),
                        node_ref.uid
                    )));
                }
            }
            if !node_ref.name.is_empty() {
                extra.insert(NODE_NAME_KEY.to_string(), vec![node_ref.name.clone()]);
                if !node_ref.uid.is_empty() {
                    extra.insert(NODE_UID_KEY.to_string(), vec![node_ref.uid.clone()]);
                }
            }
        }
        if !claims.jti.is_empty() {
            extra.insert(
                CREDENTIAL_ID.to_string(),
                vec![format!("JTI={}", claims.jti)],
            );
        }
        if let Some(warn_after) = private.warnafter.filter(|w| *w != 0 && now > *w) {
            tracing::debug!(
                subject = %claims.sub,
                seconds_after_warning = now - warn_after,
                "stale service account token"
            );
        }
        Ok(UserInfo {
            name: username(namespace, &account.name),
            uid: account.uid.clone(),
            groups: group_names(namespace),
            extra,
        })
    }

    /// An object as the watch cache has it, or from storage when the cache does not have
    /// it yet (upstream's getter: the lister, then the API).
    async fn live(
        &self,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, TokenError> {
        let store = self
            .store("", "v1", plural)
            .ok_or_else(|| TokenError::Binding(format!("no storage for {plural}")))?;
        let cached = ListOptions::any();
        let found = match store.get(namespace, name, &cached).await {
            Err(RegistryError::NotFound { .. }) => {
                store.get(namespace, name, &ListOptions::default()).await
            }
            other => other,
        };
        found.map_err(|e| TokenError::Binding(e.to_string()))
    }
}
