//! Conversion webhooks (upstream's webhookConverter): a definition with strategy Webhook has
//! its objects converted between versions by POSTing a ConversionReview to its webhook. This
//! crate builds the review and judges the answer; the HTTPS call is the server's
//! ([`ConversionWebhook`], injected into the [`crate::Installer`]).

pub mod review;

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use serde_json::Value;

use self::review::{
    check_identity, converted_objects, gvk, request, restore_metadata, ReviewVersion,
};
use super::definition::Definition;
use registry::error::{RegistryError, Result};
use registry::strategy::Converter;

/// How a conversion webhook is reached: the server's HTTPS client.
#[async_trait]
pub trait ConversionWebhook: Send + Sync {
    /// POSTs `body` to the webhook `client_config` names (`url` or `service`, `caBundle`):
    /// the answer's body, or why the call failed, in Go's HTTP client's words.
    async fn post(
        &self,
        client_config: &Value,
        body: Vec<u8>,
    ) -> std::result::Result<Vec<u8>, String>;

    /// One conversion's duration (upstream's apiserver_crd_conversion_webhook_duration_seconds).
    fn observe(&self, _definition: &str, _from: &str, _to: &str, _succeeded: bool, _seconds: f64) {}
}

/// The converter of one definition's objects.
pub struct WebhookConverter {
    definition: String,
    kind: String,
    storage_api_version: String,
    client_config: Value,
    review_versions: Vec<String>,
    webhook: Arc<dyn ConversionWebhook>,
}

impl WebhookConverter {
    /// The converter of `crd`, if its strategy is Webhook and it has a storage version.
    pub fn of(crd: &Definition, webhook: Arc<dyn ConversionWebhook>) -> Option<Self> {
        let conversion = crd
            .spec
            .conversion
            .as_ref()
            .filter(|c| c.strategy == "Webhook")?;
        let hook = conversion.webhook.as_ref()?;
        let storage = crd.storage_version()?;
        let kind = if crd.status.accepted_names.kind.is_empty() {
            crd.spec.names.kind.clone()
        } else {
            crd.status.accepted_names.kind.clone()
        };
        Some(Self {
            definition: crd.metadata.name.clone(),
            kind,
            storage_api_version: format!("{}/{}", crd.spec.group, storage.name),
            client_config: hook.client_config.clone().unwrap_or_default(),
            review_versions: hook.conversion_review_versions.clone(),
            webhook,
        })
    }

    /// The objects at `pending` of `objects` converted to `desired`, in their places, or why
    /// not (the message upstream gives, without the error's kind).
    async fn call(
        &self,
        objects: &mut [Value],
        pending: &[usize],
        desired: &str,
        subject: &str,
        list: bool,
    ) -> std::result::Result<(), String> {
        let failed = |why: String| format!("conversion webhook for {subject} failed: {why}");
        let version = ReviewVersion::first_of(&self.review_versions)
            .ok_or_else(|| "no supported conversion review versions".to_string())?;
        let uid = uuid::Uuid::new_v4().to_string();
        let sent: Vec<&Value> = pending.iter().map(|&i| &objects[i]).collect();
        let body = request(version, &uid, desired, &sent)
            .to_string()
            .into_bytes();
        let answer = self
            .webhook
            .post(&self.client_config, body)
            .await
            .map_err(failed)?;
        let answer: Value = serde_json::from_slice(&answer).map_err(|e| failed(e.to_string()))?;
        let converted = converted_objects(version, &uid, &answer).map_err(failed)?;
        if converted.len() != pending.len() {
            return Err(format!(
                "conversion webhook for {subject} returned {} objects, expected {}",
                converted.len(),
                pending.len()
            ));
        }
        let (what, at) = if list {
            ("invalid converted object", " at index ")
        } else {
            ("invalid object", "")
        };
        for (n, (mut object, &i)) in converted.into_iter().zip(pending).enumerate() {
            let index = if list { n.to_string() } else { String::new() };
            let invalid = |why: String| {
                format!("conversion webhook for {subject} returned {what}{at}{index}: {why}")
            };
            let original = &objects[i];
            let api_version = object["apiVersion"].as_str().unwrap_or_default();
            if api_version != desired {
                // Upstream names the index even for a single object here.
                return Err(format!(
                    "conversion webhook for {subject} returned {what} at index {n}: invalid groupVersion (expected {desired}, received {api_version})"
                ));
            }
            let (expected, got) = (
                original["kind"].as_str().unwrap_or_default(),
                object["kind"].as_str().unwrap_or_default(),
            );
            if expected != got {
                return Err(format!(
                    "conversion webhook for {subject} returned {what} at index {n}: invalid kind (expected {expected}, received {got})"
                ));
            }
            check_identity(original, &object).map_err(invalid)?;
            restore_metadata(original, &mut object).map_err(|why| {
                let whose = if list {
                    format!(" in object at index {n}")
                } else {
                    String::new()
                };
                format!("conversion webhook for {subject} returned invalid metadata{whose}: {why}")
            })?;
            objects[i] = object;
        }
        Ok(())
    }
}

#[async_trait]
impl Converter for WebhookConverter {
    fn storage_api_version(&self) -> &str {
        &self.storage_api_version
    }

    async fn convert(
        &self,
        mut objects: Vec<Value>,
        desired: &str,
        list: bool,
    ) -> Result<Vec<Value>> {
        let pending: Vec<usize> = (0..objects.len())
            .filter(|&i| objects[i]["apiVersion"].as_str() != Some(desired))
            .collect();
        let Some(&first) = pending.first() else {
            return Ok(objects);
        };
        let from = objects[first]["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let subject = match list {
            true => gvk(&from, &format!("{}List", self.kind)),
            false => gvk(&from, &self.kind),
        };
        let started = Instant::now();
        let outcome = self
            .call(&mut objects, &pending, desired, &subject, list)
            .await;
        let version = |api_version: &str| {
            api_version
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_string()
        };
        self.webhook.observe(
            &self.definition,
            &version(&from),
            &version(desired),
            outcome.is_ok(),
            started.elapsed().as_secs_f64(),
        );
        // Upstream hands the client the converter's error as it is: a 500 with no reason.
        outcome.map_err(RegistryError::Unclassified)?;
        Ok(objects)
    }
}

#[cfg(test)]
mod tests;
