//! The ConfigMap `kube-system/extension-apiserver-authentication` (upstream's
//! ClusterAuthenticationTrustController): what an aggregated server reads to trust this
//! server's clients and its front proxy: the client CA, the requestheader CA, the names it
//! accepts from that CA and the headers the user arrives in (JSON lists, as upstream writes
//! them).

use registry::options::{ListOptions, WriteOptions};
use registry::{Registry, RegistryError};
use serde_json::{json, Value};

use super::proxy::{EXTRA_PREFIX, GROUP_HEADER, USER_HEADER};
use crate::tls::front_proxy::FrontProxy;

const NAMESPACE: &str = "kube-system";
const NAME: &str = "extension-apiserver-authentication";

fn list(values: &[&str]) -> String {
    serde_json::to_string(values).unwrap_or_else(|_| "[]".into())
}

/// The ConfigMap's data.
pub fn data(client_ca: Option<&str>, front_proxy: &FrontProxy) -> Value {
    let names: Vec<&str> = front_proxy
        .allowed_names
        .iter()
        .map(String::as_str)
        .collect();
    let mut data = json!({
        "requestheader-client-ca-file": front_proxy.ca_pem,
        "requestheader-allowed-names": list(&names),
        "requestheader-username-headers": list(&[USER_HEADER]),
        "requestheader-group-headers": list(&[GROUP_HEADER]),
        "requestheader-extra-headers-prefix": list(&[EXTRA_PREFIX]),
    });
    if let Some(ca) = client_ca {
        data["client-ca-file"] = json!(ca);
    }
    data
}

/// Writes the ConfigMap (created, or its data replaced when it differs).
pub async fn publish(
    registry: &Registry,
    client_ca: Option<&str>,
    front_proxy: &FrontProxy,
) -> Result<(), RegistryError> {
    let Some(store) = registry.store("", "v1", "configmaps") else {
        return Ok(());
    };
    let data = data(client_ca, front_proxy);
    let opts = WriteOptions::by("kube-apiserver");
    match store
        .get(Some(NAMESPACE), NAME, &ListOptions::default())
        .await
    {
        Ok(mut existing) => {
            if existing["data"] == data {
                return Ok(());
            }
            existing["data"] = data;
            store
                .update(
                    Some(NAMESPACE),
                    NAME,
                    existing,
                    registry::Subresource::Main,
                    &opts,
                )
                .await
                .map(|_| ())
        }
        Err(RegistryError::NotFound { .. }) => {
            let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": NAME, "namespace": NAMESPACE}, "data": data});
            match store.create(Some(NAMESPACE), object, &opts).await {
                Ok(_) | Err(RegistryError::AlreadyExists { .. }) => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}
