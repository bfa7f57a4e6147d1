//! `--encryption-provider-config`: upstream's EncryptionConfiguration
//! (apiserver.config.k8s.io/v1), its validation with upstream's messages, and the transformer
//! each configured resource gets.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use serde::Deserialize;

use super::aes_cbc::AesCbcTransformer;
use super::aes_gcm::AesGcmTransformer;
use super::resources::GroupResource;
use super::secretbox::SecretboxTransformer;
use super::transformer::{message, DynTransformer, Identity, PrefixTransformers};
use crate::{Result, StorageError};

pub const API_VERSION: &str = "apiserver.config.k8s.io/v1";
pub const KIND: &str = "EncryptionConfiguration";

const AES_GCM_PREFIX: &str = "k8s:enc:aesgcm:v1:";
const AES_CBC_PREFIX: &str = "k8s:enc:aescbc:v1:";
const SECRETBOX_PREFIX: &str = "k8s:enc:secretbox:v1:";

const AES_KEY_SIZES: &[usize] = &[16, 24, 32];
const SECRETBOX_KEY_SIZES: &[usize] = &[32];

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    resources: Option<Vec<ResourceConfiguration>>,
}

#[derive(Debug, Default, Deserialize)]
struct ResourceConfiguration {
    #[serde(default)]
    resources: Option<Vec<String>>,
    #[serde(default)]
    providers: Option<Vec<ProviderConfiguration>>,
}

#[derive(Debug, Default, Deserialize, serde::Serialize)]
struct ProviderConfiguration {
    #[serde(skip_serializing_if = "Option::is_none")]
    aesgcm: Option<KeysConfiguration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    aescbc: Option<KeysConfiguration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    secretbox: Option<KeysConfiguration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    identity: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kms: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize, serde::Serialize)]
struct KeysConfiguration {
    #[serde(default)]
    keys: Option<Vec<Key>>,
}

#[derive(Debug, Default, Deserialize, serde::Serialize)]
struct Key {
    #[serde(default)]
    name: Option<String>,
    #[serde(default, skip_serializing)]
    secret: Option<String>,
}

/// The transformers of the configured resources (upstream's map of GroupResource to
/// Transformer); every other resource is stored as it is.
#[derive(Clone, Default)]
pub struct EncryptionConfig {
    transformers: HashMap<GroupResource, DynTransformer>,
}

fn config_error(message: String) -> StorageError {
    StorageError::EncryptionConfig(message)
}

impl EncryptionConfig {
    /// Reads, validates and builds the configuration in `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let shown = path.display().to_string();
        let data = std::fs::read(path).map_err(|e| {
            config_error(format!(
                "error while parsing file: error opening encryption provider configuration file {shown:?}: {e}"
            ))
        })?;
        Self::parse(&data, &shown)
    }

    /// As [`Self::load`], from the file's contents; `origin` names the file in errors.
    pub fn parse(data: &[u8], origin: &str) -> Result<Self> {
        if data.is_empty() {
            return Err(config_error(format!(
                "error while parsing file: encryption provider configuration file {origin:?} is empty"
            )));
        }
        let document: Document = serde_yaml_ng::from_slice(data).map_err(|e| {
            config_error(format!(
                "error while parsing file: error decoding encryption provider configuration file {origin:?}: {e}"
            ))
        })?;
        check_type(&document).map_err(|e| {
            config_error(format!(
                "error while parsing file: error decoding encryption provider configuration file {origin:?}: {e}"
            ))
        })?;
        let errors = validate(&document);
        if !errors.is_empty() {
            return Err(config_error(format!(
                "error while parsing file: {}",
                aggregate(&errors)
            )));
        }
        build(&document)
            .map_err(|e| config_error(format!("error while building transformers: {e}")))
    }

    /// The transformer of `resource` in `group` (core: ""): its own rule, else its group's
    /// `*.<group>`, else `*.*`, else none (values stored as they are, encrypted ones refused).
    pub fn transformer_for(&self, group: &str, resource: &str) -> DynTransformer {
        GroupResource::new(group, resource)
            .candidates()
            .iter()
            .find_map(|gr| self.transformers.get(gr).cloned())
            .unwrap_or_else(|| Arc::new(Identity))
    }
}

fn check_type(document: &Document) -> std::result::Result<(), String> {
    let kind = document.kind.as_deref().unwrap_or_default();
    let api_version = document.api_version.as_deref().unwrap_or_default();
    if kind.is_empty() {
        return Err("Object 'Kind' is missing".into());
    }
    if api_version.is_empty() {
        return Err("Object 'apiVersion' is missing".into());
    }
    if kind != KIND || api_version != API_VERSION {
        return Err(format!(
            "no kind {kind:?} is registered for version {api_version:?}"
        ));
    }
    Ok(())
}

/// Field errors as upstream's field.ErrorList prints them.
struct Errors(Vec<String>);

impl Errors {
    fn required(&mut self, path: &str, detail: &str) {
        self.0.push(format!("{path}: Required value: {detail}"));
    }

    fn invalid(&mut self, path: &str, value: &str, detail: &str) {
        self.0
            .push(format!("{path}: Invalid value: {value}: {detail}"));
    }

    fn forbidden(&mut self, path: &str, detail: &str) {
        self.0.push(format!("{path}: Forbidden: {detail}"));
    }
}

/// One error alone, several in brackets (upstream's aggregate).
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

fn quoted(value: &str) -> String {
    format!("{value:?}")
}

fn validate(document: &Document) -> Vec<String> {
    let mut errs = Errors(Vec::new());
    let resources = document.resources.as_deref().unwrap_or_default();
    if resources.is_empty() {
        errs.required("resources", "at least one resources is required");
        return errs.0;
    }
    for (i, rule) in resources.iter().enumerate() {
        let r = format!("resources[{i}].resources");
        let p = format!("resources[{i}].providers");
        let names = rule.resources.as_deref().unwrap_or_default();
        if names.is_empty() {
            errs.required(&r, &format!("at least one {r} is required"));
        }
        validate_overlap(names, &r, &mut errs);
        validate_names(names, &r, &mut errs);
        let providers = rule.providers.as_deref().unwrap_or_default();
        if providers.is_empty() {
            errs.required(&p, &format!("at least one {p} is required"));
        }
        for (j, provider) in providers.iter().enumerate() {
            let path = format!("{p}[{j}]");
            if !validate_single_provider(provider, &path, &mut errs) {
                continue;
            }
            if let Some(aes) = &provider.aesgcm {
                validate_keys(
                    aes,
                    &format!("{path}.aesgcm.keys"),
                    AES_KEY_SIZES,
                    &mut errs,
                );
            } else if let Some(aes) = &provider.aescbc {
                validate_keys(
                    aes,
                    &format!("{path}.aescbc.keys"),
                    AES_KEY_SIZES,
                    &mut errs,
                );
            } else if let Some(sb) = &provider.secretbox {
                let keys_path = format!("{path}.secretbox.keys");
                validate_keys(sb, &keys_path, SECRETBOX_KEY_SIZES, &mut errs);
            } else if provider.kms.is_some() {
                errs.forbidden(
                    &format!("{path}.kms"),
                    "KMS providers are not supported by this server; use aesgcm, aescbc or secretbox",
                );
            }
        }
    }
    errs.0
}

fn validate_overlap(names: &[String], path: &str, errs: &mut Errors) {
    if names.len() < 2 {
        return;
    }
    let parsed: Vec<GroupResource> = names.iter().map(|n| GroupResource::parse(n)).collect();
    let (mut duplicate, mut overlap) = (false, false);
    for (i, a) in parsed.iter().enumerate() {
        for (j, b) in parsed.iter().enumerate() {
            if i == j {
                continue;
            }
            if a == b && !duplicate {
                duplicate = true;
                continue;
            }
            if overlap {
                continue;
            }
            if *a == GroupResource::any() {
                overlap = true;
                continue;
            }
            if a.group == b.group && (a.resource == "*" || b.resource == "*") {
                overlap = true;
            }
        }
    }
    let listed = serde_json::to_string(names).unwrap_or_default();
    if duplicate {
        errs.invalid(
            path,
            &listed,
            "the same resource cannot be specified multiple times",
        );
    }
    if overlap {
        errs.invalid(path, &listed, "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked");
    }
}

fn validate_names(names: &[String], path: &str, errs: &mut Errors) {
    for (j, name) in names.iter().enumerate() {
        let at = format!("{path}[{j}]");
        let value = quoted(name);
        let gr = GroupResource::parse(name);
        let detail = if name.to_lowercase() != *name {
            "resource name should not contain capital letters"
        } else if name == "*" {
            "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
        } else if matches!(
            name.as_str(),
            "apiserveripinfo" | "serviceipallocations" | "servicenodeportallocations"
        ) {
            "resources which do not have REST API/s cannot be encrypted"
        } else if gr.group == "events.k8s.io" {
            "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"
        } else if gr.group == "extensions" {
            "'extensions' group has been removed and cannot be used for encryption"
        } else if gr.group == "*" && gr.resource != "*" {
            "encrypting the same resource across groups is not supported"
        } else {
            continue;
        };
        errs.invalid(&at, &value, detail);
    }
}

/// Exactly one provider per list element; false when that does not hold.
fn validate_single_provider(p: &ProviderConfiguration, path: &str, errs: &mut Errors) -> bool {
    let found = [
        p.kms.is_some(),
        p.aesgcm.is_some(),
        p.aescbc.is_some(),
        p.secretbox.is_some(),
        p.identity.is_some(),
    ]
    .iter()
    .filter(|set| **set)
    .count();
    let shown = serde_json::to_string(p).unwrap_or_default();
    match found {
        0 => errs.invalid(path, &shown, "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"),
        1 => return true,
        _ => errs.invalid(path, &shown, "more than one provider specified in a single element, should split into different list elements"),
    }
    false
}

fn validate_keys(config: &KeysConfiguration, path: &str, sizes: &[usize], errs: &mut Errors) {
    let keys = config.keys.as_deref().unwrap_or_default();
    if keys.is_empty() {
        errs.required(path, "at least one keys is required");
        return;
    }
    for (i, key) in keys.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if key.name.as_deref().unwrap_or_default().is_empty() {
            errs.required(&format!("{at}.name"), "name is a mandatory field for a key");
        }
        let secret = key.secret.as_deref().unwrap_or_default();
        if secret.is_empty() {
            errs.required(
                &format!("{at}.secret"),
                "secret is a mandatory field for a key",
            );
            continue;
        }
        let secret_path = format!("{at}.secret");
        match base64::engine::general_purpose::STANDARD.decode(secret) {
            Err(_) => errs.invalid(
                &secret_path,
                "\"REDACTED\"",
                "secrets must be base64 encoded",
            ),
            Ok(bytes) if !sizes.contains(&bytes.len()) => {
                let expected: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
                errs.invalid(
                    &secret_path,
                    "\"REDACTED\"",
                    &format!(
                        "secret is not of the expected length, got {}, expected one of [{}]",
                        bytes.len(),
                        expected.join(" ")
                    ),
                );
            }
            Ok(_) => {}
        }
    }
}

type Entry = (Vec<u8>, DynTransformer);

/// Each rule's providers, in order, for each resource it names; a resource named by several
/// rules gets their providers in rule order, as upstream.
fn build(document: &Document) -> std::result::Result<EncryptionConfig, String> {
    let mut by_resource: HashMap<GroupResource, Vec<Entry>> = HashMap::new();
    for rule in document.resources.as_deref().unwrap_or_default() {
        let mut entries = Vec::new();
        for provider in rule.providers.as_deref().unwrap_or_default() {
            entries.push(provider_entry(provider)?);
        }
        for name in rule.resources.as_deref().unwrap_or_default() {
            let gr = GroupResource::parse(name);
            for masking in [GroupResource::any_in_group(&gr.group), GroupResource::any()] {
                if by_resource.contains_key(&masking) {
                    return Err(format!(
                        "resource {:?} is masked by earlier rule {:?}",
                        gr.to_string(),
                        masking.to_string()
                    ));
                }
            }
            by_resource
                .entry(gr)
                .or_default()
                .extend(entries.iter().cloned());
        }
    }
    let transformers = by_resource
        .into_iter()
        .map(|(gr, entries)| {
            let t: DynTransformer =
                Arc::new(PrefixTransformers::new(entries, "no matching prefix found"));
            (gr, t)
        })
        .collect();
    Ok(EncryptionConfig { transformers })
}

fn provider_entry(provider: &ProviderConfiguration) -> std::result::Result<Entry, String> {
    if let Some(aes) = &provider.aesgcm {
        let keys = key_entries(aes, |k| Ok(Arc::new(AesGcmTransformer::new(k)?)))?;
        let t = PrefixTransformers::new(
            keys,
            "no matching key was found for the provided AES transformer",
        );
        return Ok((AES_GCM_PREFIX.into(), Arc::new(t)));
    }
    if let Some(aes) = &provider.aescbc {
        let keys = key_entries(aes, |k| Ok(Arc::new(AesCbcTransformer::new(k)?)))?;
        let t = PrefixTransformers::new(
            keys,
            "no matching key was found for the provided AES transformer",
        );
        return Ok((AES_CBC_PREFIX.into(), Arc::new(t)));
    }
    if let Some(sb) = &provider.secretbox {
        let keys = key_entries(sb, |k| Ok(Arc::new(SecretboxTransformer::new(k)?)))?;
        let t = PrefixTransformers::new(
            keys,
            "no matching key was found for the provided Secretbox transformer",
        );
        return Ok((SECRETBOX_PREFIX.into(), Arc::new(t)));
    }
    if provider.identity.is_some() {
        return Ok((Vec::new(), Arc::new(Identity)));
    }
    Err("provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity".into())
}

/// One entry per key, prefixed `<name>:`.
fn key_entries(
    config: &KeysConfiguration,
    make: impl Fn(&[u8]) -> Result<DynTransformer>,
) -> std::result::Result<Vec<Entry>, String> {
    let mut entries = Vec::new();
    for key in config.keys.as_deref().unwrap_or_default() {
        let name = key.name.as_deref().unwrap_or_default();
        let secret = base64::engine::general_purpose::STANDARD
            .decode(key.secret.as_deref().unwrap_or_default())
            .map_err(|e| format!("could not obtain secret for named key {name}: {e}"))?;
        let transformer = make(&secret).map_err(|e| {
            format!(
                "error while creating cipher for named key {name}: {}",
                message(e)
            )
        })?;
        entries.push((format!("{name}:").into_bytes(), transformer));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests;
