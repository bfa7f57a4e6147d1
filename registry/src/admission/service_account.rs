//! The ServiceAccount admission plugin on pod creates (upstream's
//! plugin/pkg/admission/serviceaccount): a pod runs as `default` unless it names an account,
//! the account must exist, its token is projected into every container at
//! /var/run/secrets/kubernetes.io/serviceaccount unless automounting is off, and it lends the
//! pod its image pull secrets. Mirror pods (a kubelet's static pods) are left as they are,
//! but may not use accounts or secrets. Runs on dry runs too.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rand::Rng;
use serde_json::{json, Value};
use storage::{Interface, ReadRevision, StorageError};

use super::{on_main, watched, Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::{Qualified, RegistryError, Result};
use crate::object::{self, Object};
use crate::serviceaccount::claims::WARN_ONLY_EXPIRATION_SECONDS;
use crate::validation::names::generate_name;
use crate::Registry;

pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
pub const DEFAULT_API_TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The projected volume's name prefix (upstream's ServiceAccountVolumeName).
pub const VOLUME_NAME_PREFIX: &str = "kube-api-access-";
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
const ENFORCE_MOUNTABLE_SECRETS: &str = "kubernetes.io/enforce-mountable-secrets";
/// The ConfigMap every namespace has with the cluster's CA (the root CA publisher's).
const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// Upstream's ProjectedVolumeSourceDefaultMode (0644).
const PROJECTED_DEFAULT_MODE: i64 = 0o644;
/// Live lookups of an account missing from the cache: `default` is made by a controller just
/// after its namespace, so it is waited for a little (upstream: 10 tries 100-200 ms apart).
const DEFAULT_ACCOUNT_TRIES: usize = 10;

pub(super) fn build(registry: &Registry) -> Arc<dyn Plugin> {
    let (accounts, prefix) = watched(registry, "", "serviceaccounts");
    Arc::new(ServiceAccountAdmission { accounts, prefix })
}

pub struct ServiceAccountAdmission {
    /// The storage of ServiceAccounts (their watch cache).
    accounts: Arc<dyn Interface>,
    /// Their key path (`/serviceaccounts`).
    prefix: String,
}

fn pods() -> Qualified {
    Qualified::new("", "pods")
}

/// The name admission errors name: a generated name does not exist yet when upstream's
/// admission runs, so it names the generateName.
fn error_name(pod: &Value) -> String {
    match object::str_field(pod, "generateName").filter(|g| !g.is_empty()) {
        Some(base) => base.to_string(),
        None => object::name(pod).to_string(),
    }
}

#[async_trait]
impl Plugin for ServiceAccountAdmission {
    fn name(&self) -> &'static str {
        "ServiceAccount"
    }

    /// Upstream's plugin admits pod creates only.
    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        operation == Operation::Create && on_main(info, subresource, "", "pods")
    }

    async fn admit(&self, _: &Attributes<'_>, pod: Option<&mut Object>) -> Result<()> {
        match pod {
            Some(pod) => self.admit_pod(pod).await,
            None => Ok(()),
        }
    }

    fn mutates(&self) -> bool {
        true
    }

    // Upstream validates too, checking again what its mutation made sure of; with the one
    // chain here nothing can change the pod between the two.
    fn validates(&self) -> bool {
        false
    }
}

impl ServiceAccountAdmission {
    async fn admit_pod(&self, pod: &mut Object) -> Result<()> {
        let namespace = object::namespace(pod).to_string();
        let forbidden = |pod: &Value, message: String| {
            RegistryError::forbidden(&pods(), &error_name(pod), message)
        };
        if pod["metadata"]["annotations"]
            .get(MIRROR_ANNOTATION)
            .is_some()
        {
            return check_mirror_pod(pod).map_err(|why| forbidden(pod, why.into()));
        }
        if !pod["spec"].is_object() {
            return Ok(());
        }
        let named = pod["spec"]["serviceAccountName"]
            .as_str()
            .filter(|n| !n.is_empty())
            .unwrap_or(DEFAULT_SERVICE_ACCOUNT)
            .to_string();
        pod["spec"]["serviceAccountName"] = json!(named);
        // v1's deprecated alias, which upstream's conversion always fills from the name.
        pod["spec"]["serviceAccount"] = json!(named);
        let account = match self.account(&namespace, &named).await {
            Ok(account) => account,
            Err(e) => {
                return Err(forbidden(
                    pod,
                    format!("error looking up service account {namespace}/{named}: {e}"),
                ))
            }
        };
        if should_automount(&account, pod) {
            mount_token(pod);
        }
        let pull_secrets_empty = pod["spec"]["imagePullSecrets"]
            .as_array()
            .is_none_or(Vec::is_empty);
        if pull_secrets_empty {
            if let Some(secrets) = account["imagePullSecrets"]
                .as_array()
                .filter(|s| !s.is_empty())
            {
                pod["spec"]["imagePullSecrets"] = Value::Array(secrets.clone());
            }
        }
        let enforce = account["metadata"]["annotations"][ENFORCE_MOUNTABLE_SECRETS]
            .as_str()
            .is_some_and(|v| parse_go_bool(v) == Some(true));
        if enforce {
            limit_secret_references(&account, pod).map_err(|why| forbidden(pod, why))?;
        }
        Ok(())
    }

    /// The account from the cache, else from storage: once, or for `default`, which its
    /// controller is about to make, several times a little apart.
    async fn account(&self, namespace: &str, name: &str) -> Result<Value> {
        let key = format!("{}/{namespace}/{name}", self.prefix);
        let not_found = || RegistryError::not_found(&Qualified::new("", "serviceaccount"), name);
        let decode = |bytes: &[u8]| {
            serde_json::from_slice::<Value>(bytes)
                .map_err(|e| RegistryError::Internal(e.to_string()))
        };
        let storage_err =
            |e| RegistryError::from_storage(e, &Qualified::new("", "serviceaccount"), name);
        match self.accounts.get(&key, ReadRevision::Any).await {
            Ok(kv) => return decode(&kv.value),
            Err(StorageError::NotFound { .. }) => {}
            Err(e) => return Err(storage_err(e)),
        }
        let tries = if name == DEFAULT_SERVICE_ACCOUNT {
            DEFAULT_ACCOUNT_TRIES
        } else {
            1
        };
        let interval = Duration::from_millis(rand::rng().random_range(100..200));
        for attempt in 0..tries {
            if attempt != 0 {
                tokio::time::sleep(interval).await;
            }
            match self.accounts.get(&key, ReadRevision::Latest).await {
                Ok(kv) => return decode(&kv.value),
                Err(StorageError::NotFound { .. }) => {}
                Err(e) => return Err(storage_err(e)),
            }
        }
        Err(not_found())
    }
}

/// Go's strconv.ParseBool.
fn parse_go_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The pod's preference, then the account's, else yes.
fn should_automount(account: &Value, pod: &Value) -> bool {
    pod["spec"]["automountServiceAccountToken"]
        .as_bool()
        .or_else(|| account["automountServiceAccountToken"].as_bool())
        .unwrap_or(true)
}

/// The projected volume of upstream's TokenVolumeSource: the token, the cluster's CA and the
/// namespace.
fn token_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "defaultMode": PROJECTED_DEFAULT_MODE,
            "sources": [
                {"serviceAccountToken": {
                    "expirationSeconds": WARN_ONLY_EXPIRATION_SECONDS,
                    "path": "token",
                }},
                {"configMap": {
                    "name": ROOT_CA_CONFIG_MAP,
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                }},
                {"downwardAPI": {
                    "items": [{
                        "path": "namespace",
                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                    }],
                }},
            ],
        },
    })
}

/// Mounts the token volume (an existing `kube-api-access-*` one, else a new one) in every
/// init container and container that has nothing at the token's path.
pub(crate) fn mount_token(pod: &mut Value) {
    let existing = pod["spec"]["volumes"].as_array().and_then(|volumes| {
        volumes
            .iter()
            .filter_map(|v| v["name"].as_str())
            .find(|n| n.starts_with(VOLUME_NAME_PREFIX))
            .map(str::to_string)
    });
    let volume_name = existing
        .clone()
        .unwrap_or_else(|| generate_name(VOLUME_NAME_PREFIX));
    let mount = json!({
        "name": volume_name,
        "readOnly": true,
        "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH,
    });
    let mut mounted = false;
    for list in ["initContainers", "containers"] {
        let Some(containers) = object::array_at_mut(pod, &["spec", list]) else {
            continue;
        };
        for container in containers.iter_mut().filter(|c| c.is_object()) {
            let has_mount = container["volumeMounts"].as_array().is_some_and(|mounts| {
                mounts
                    .iter()
                    .any(|m| m["mountPath"].as_str() == Some(DEFAULT_API_TOKEN_MOUNT_PATH))
            });
            if has_mount {
                continue;
            }
            match container["volumeMounts"].as_array_mut() {
                Some(mounts) => mounts.push(mount.clone()),
                None => container["volumeMounts"] = json!([mount.clone()]),
            }
            mounted = true;
        }
    }
    if existing.is_none() && mounted {
        match pod["spec"]["volumes"].as_array_mut() {
            Some(volumes) => volumes.push(token_volume(&volume_name)),
            None => pod["spec"]["volumes"] = json!([token_volume(&volume_name)]),
        }
    }
}

/// The containers of every kind, with the word upstream's messages call each kind by.
fn all_containers(pod: &Value) -> impl Iterator<Item = (&'static str, &Value)> {
    [
        ("init container", "initContainers"),
        ("container", "containers"),
        ("ephemeral container", "ephemeralContainers"),
    ]
    .into_iter()
    .flat_map(move |(word, list)| {
        pod["spec"][list]
            .as_array()
            .into_iter()
            .flatten()
            .map(move |c| (word, c))
    })
}

/// Whether the pod names a secret anywhere (upstream's VisitPodSecretNames).
fn references_secrets(pod: &Value) -> bool {
    let spec = &pod["spec"];
    let named = |v: &Value| v.as_str().is_some_and(|s| !s.is_empty());
    if spec["imagePullSecrets"]
        .as_array()
        .is_some_and(|s| s.iter().any(|s| named(&s["name"])))
    {
        return true;
    }
    for (_, c) in all_containers(pod) {
        let env_from = c["envFrom"].as_array().into_iter().flatten();
        if env_from.into_iter().any(|e| named(&e["secretRef"]["name"])) {
            return true;
        }
        let env = c["env"].as_array().into_iter().flatten();
        if env
            .into_iter()
            .any(|e| named(&e["valueFrom"]["secretKeyRef"]["name"]))
        {
            return true;
        }
    }
    spec["volumes"].as_array().into_iter().flatten().any(|v| {
        named(&v["secret"]["secretName"])
            || v["projected"]["sources"]
                .as_array()
                .is_some_and(|s| s.iter().any(|s| named(&s["secret"]["name"])))
            || [
                "azureFile",
                "cephfs",
                "cinder",
                "flexVolume",
                "iscsi",
                "rbd",
                "scaleIO",
                "storageos",
                "csi",
            ]
            .iter()
            .any(|kind| {
                let source = &v[*kind];
                named(&source["secretRef"]["name"])
                    || named(&source["secretName"])
                    || named(&source["nodePublishSecretRef"]["name"])
            })
    })
}

/// What upstream's Validate allows a mirror pod.
pub(crate) fn check_mirror_pod(pod: &Value) -> std::result::Result<(), &'static str> {
    if pod["spec"]["serviceAccountName"]
        .as_str()
        .is_some_and(|n| !n.is_empty())
    {
        return Err("a mirror pod may not reference service accounts");
    }
    if references_secrets(pod) {
        return Err("a mirror pod may not reference secrets");
    }
    let projects_token = pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|v| {
            v["projected"]["sources"]
                .as_array()
                .is_some_and(|s| s.iter().any(|s| s.get("serviceAccountToken").is_some()))
        });
    if projects_token {
        return Err("a mirror pod may not use ServiceAccountToken volume projections");
    }
    Ok(())
}

/// The `kubernetes.io/enforce-mountable-secrets` check: the pod may only use the secrets its
/// account lists.
pub(crate) fn limit_secret_references(
    account: &Value,
    pod: &Value,
) -> std::result::Result<(), String> {
    let account_name = object::name(account);
    let listed = |field: &str| -> Vec<String> {
        account[field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["name"].as_str().map(str::to_string))
            .collect()
    };
    let mountable = listed("secrets");
    let allowed = |name: &str| mountable.iter().any(|m| m == name);
    for volume in pod["spec"]["volumes"].as_array().into_iter().flatten() {
        if let Some(secret) = volume["secret"]["secretName"].as_str() {
            if !allowed(secret) {
                return Err(format!("volume with secret.secretName=\"{secret}\" is not allowed because service account {account_name} does not reference that secret"));
            }
        }
    }
    for (word, c) in all_containers(pod).filter(|(w, _)| *w != "ephemeral container") {
        let container = c["name"].as_str().unwrap_or_default();
        for env in c["env"].as_array().into_iter().flatten() {
            if let Some(secret) = env["valueFrom"]["secretKeyRef"]["name"].as_str() {
                if !allowed(secret) {
                    let var = env["name"].as_str().unwrap_or_default();
                    return Err(format!("{word} {container} with envVar {var} referencing secret.secretName=\"{secret}\" is not allowed because service account {account_name} does not reference that secret"));
                }
            }
        }
        for from in c["envFrom"].as_array().into_iter().flatten() {
            if let Some(secret) = from["secretRef"]["name"].as_str() {
                if !allowed(secret) {
                    return Err(format!("{word} {container} with envFrom referencing secret.secretName=\"{secret}\" is not allowed because service account {account_name} does not reference that secret"));
                }
            }
        }
    }
    let pull = listed("imagePullSecrets");
    for (i, secret) in pod["spec"]["imagePullSecrets"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = secret["name"].as_str().unwrap_or_default();
        if !pull.iter().any(|p| p == name) {
            return Err(format!("imagePullSecrets[{i}].name=\"{name}\" is not allowed because service account {account_name} does not reference that imagePullSecret"));
        }
    }
    Ok(())
}
