//! The serviceaccounts `token` subresource (upstream's TokenREST): an
//! authentication.k8s.io/v1 TokenRequest for an account, answered with a signed JWT bound to
//! the account and, if asked, to a pod, secret or node of its namespace.

use serde::Deserialize;
use serde_json::json;

use super::claims::{
    new_claims, Binding, Ref, EXTENDED_EXPIRATION_SECONDS, WARN_ONLY_EXPIRATION_SECONDS,
};
use crate::error::{Cause, Qualified, RegistryError, Result};
use crate::object::{self, Object};
use crate::options::{ListOptions, WriteOptions};
use crate::Registry;

/// upstream's SetDefaults_TokenRequestSpec.
const DEFAULT_EXPIRATION_SECONDS: i64 = 60 * 60;
const MIN_EXPIRATION_SECONDS: i64 = 10 * 60;
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct TokenRequest {
    api_version: String,
    kind: String,
    metadata: Meta,
    spec: Spec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Meta {
    name: String,
    namespace: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Spec {
    audiences: Vec<String>,
    expiration_seconds: Option<i64>,
    bound_object_ref: Option<BoundObjectRef>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct BoundObjectRef {
    kind: String,
    api_version: String,
    name: String,
    uid: String,
}

fn kind() -> Qualified {
    Qualified::new("authentication.k8s.io", "TokenRequest")
}

impl Registry {
    /// Issues a token for the service account `name` as the TokenRequest `request` asks
    /// (upstream's TokenREST.Create): the request back with `status.token` and
    /// `status.expirationTimestamp`.
    pub async fn create_token(
        &self,
        namespace: Option<&str>,
        name: &str,
        request: &Object,
        _opts: &WriteOptions,
    ) -> Result<Object> {
        let config = self
            .service_account_tokens()
            .cloned()
            .ok_or(RegistryError::NoSuchResource)?;
        let namespace = namespace
            .filter(|n| !n.is_empty())
            .ok_or_else(|| RegistryError::BadRequest("namespace is required".into()))?;
        let mut req: TokenRequest = serde_json::from_value(request.clone())
            .map_err(|e| RegistryError::BadRequest(format!("the TokenRequest is invalid: {e}")))?;
        if !matches!(req.api_version.as_str(), "" | "authentication.k8s.io/v1")
            || !matches!(req.kind.as_str(), "" | "TokenRequest")
        {
            return Err(RegistryError::BadRequest(format!(
                "not a TokenRequest object: {}, Kind={}",
                req.api_version, req.kind
            )));
        }
        if !req.metadata.name.is_empty() && req.metadata.name != name {
            let cause = Cause::invalid(
                "metadata.name",
                format!("{:?}", req.metadata.name),
                "must match the service account name if specified",
            );
            return Err(RegistryError::invalid(&kind(), name, vec![cause]));
        }
        if !req.metadata.namespace.is_empty() && req.metadata.namespace != namespace {
            let cause = Cause::invalid(
                "metadata.namespace",
                format!("{:?}", req.metadata.namespace),
                "must match the service account namespace if specified",
            );
            return Err(RegistryError::invalid(&kind(), name, vec![cause]));
        }
        let account = self
            .required_store("", "v1", "serviceaccounts")?
            .get(Some(namespace), name, &ListOptions::default())
            .await?;
        if req.spec.audiences.is_empty() {
            req.spec.audiences = config.api_audiences().to_vec();
        }
        let mut expiration = req
            .spec
            .expiration_seconds
            .unwrap_or(DEFAULT_EXPIRATION_SECONDS);
        let now = chrono::Utc::now();
        let mut causes = Vec::new();
        if expiration < MIN_EXPIRATION_SECONDS {
            causes.push(Cause::invalid(
                "spec.expirationSeconds",
                expiration,
                "may not specify a duration less than 10 minutes",
            ));
        }
        if expiration > MAX_EXPIRATION_SECONDS {
            causes.push(Cause::invalid(
                "spec.expirationSeconds",
                expiration,
                "may not specify a duration larger than 2^32 seconds",
            ));
        }
        if !causes.is_empty() {
            return Err(RegistryError::invalid(&kind(), "", causes));
        }

        let binding = match &req.spec.bound_object_ref {
            Some(bound) => self.bound_object(namespace, name, bound).await?,
            None => Binding::default(),
        };

        let max = config.max_expiration_seconds;
        if max > 0 && expiration > max {
            crate::warning::add(format!(
                "requested expiration of {expiration} seconds shortened to {max} seconds"
            ));
            expiration = max;
        }
        // A projected token of the admission's age lives a year, only warned about after
        // the asked time, so that clients that never reread it keep working.
        let kube_audiences = req
            .spec
            .audiences
            .iter()
            .all(|a| config.api_audiences().contains(a));
        let (token_expiration, warn_after) = if config.extend_expiration
            && binding.pod.is_some()
            && expiration == WARN_ONLY_EXPIRATION_SECONDS
            && kube_audiences
        {
            (EXTENDED_EXPIRATION_SECONDS, expiration)
        } else {
            (expiration, 0)
        };
        let mut claims = new_claims(
            (namespace, name, object::uid(&account)),
            binding,
            now.timestamp(),
            token_expiration,
            warn_after,
            req.spec.audiences.clone(),
        );
        claims.iss = config.issuer().to_string();
        let token = config
            .signer
            .sign(&claims)
            .map_err(|e| RegistryError::Internal(format!("failed to generate token: {e}")))?;

        let mut spec = json!({
            "audiences": req.spec.audiences,
            "expirationSeconds": expiration,
        });
        if let Some(bound) = request["spec"]
            .get("boundObjectRef")
            .filter(|b| !b.is_null())
        {
            spec["boundObjectRef"] = bound.clone();
        }
        let expires = now + chrono::Duration::seconds(expiration);
        Ok(json!({
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "creationTimestamp": object::timestamp(now),
            },
            "spec": spec,
            "status": {
                "token": token,
                "expirationTimestamp": object::timestamp(expires),
            },
        }))
    }

    /// The object a token is to be bound to, which must exist with the uid asked for.
    async fn bound_object(
        &self,
        namespace: &str,
        account: &str,
        bound: &BoundObjectRef,
    ) -> Result<Binding> {
        let group = bound
            .api_version
            .rsplit_once('/')
            .map(|(g, _)| g)
            .unwrap_or_default();
        let version = bound
            .api_version
            .rsplit_once('/')
            .map(|(_, v)| v)
            .unwrap_or(&bound.api_version);
        let get = |plural: &'static str, ns: Option<&'static str>| async move {
            let ns = ns.map(|_| namespace);
            self.required_store("", "v1", plural)?
                .get(ns, &bound.name, &ListOptions::default())
                .await
        };
        let mut binding = Binding::default();
        let found = match (group, bound.kind.as_str()) {
            ("", "Pod") => {
                let pod = get("pods", Some("")).await?;
                if pod["spec"]["serviceAccountName"]
                    .as_str()
                    .unwrap_or_default()
                    != account
                {
                    return Err(RegistryError::BadRequest(format!(
                        "cannot bind token for serviceaccount {account:?} to pod running with different serviceaccount name."
                    )));
                }
                let node_name = pod["spec"]["nodeName"].as_str().unwrap_or_default();
                if !node_name.is_empty() {
                    // The token is issued even when the pod's node is gone.
                    let cached = ListOptions::any();
                    match self
                        .required_store("", "v1", "nodes")?
                        .get(None, node_name, &cached)
                        .await
                    {
                        Ok(node) => binding.node = Some(Ref::of(&node)),
                        Err(e) => {
                            tracing::debug!(node = node_name, error = %e, "pod's node not found; token not bound to it")
                        }
                    }
                }
                binding.pod = Some(Ref::of(&pod));
                pod
            }
            ("", "Secret") => {
                let secret = get("secrets", Some("")).await?;
                binding.secret = Some(Ref::of(&secret));
                secret
            }
            ("", "Node") => {
                let node = get("nodes", None).await?;
                binding.node = Some(Ref::of(&node));
                node
            }
            _ => {
                return Err(RegistryError::BadRequest(format!(
                    "cannot bind token to object of type {group}/{version}, Kind={}",
                    bound.kind
                )))
            }
        };
        let uid = object::uid(&found);
        if !bound.uid.is_empty() && bound.uid != uid {
            return Err(RegistryError::conflict(
                &Qualified::new(group, &bound.kind),
                &bound.name,
                format!(
                    "the UID in the bound object reference ({}) does not match the UID in record. The object might have been deleted and then recreated",
                    bound.uid
                ),
            ));
        }
        Ok(binding)
    }
}
