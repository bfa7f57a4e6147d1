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

    /// One call's outcome and duration, for upstream's conversion webhook metrics.
    fn observe(&self, _call: &Observation<'_>) {}
}

/// Why a call failed, as upstream's conversion webhook metrics name it (`failure_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// No answer (the call, or decoding what came back).
    Call,
    /// An answer that is not a successful review of this request.
    MalformedResponse,
    /// Fewer or more objects than were sent.
    PartialResponse,
    /// An object in the wrong version or kind, another identity, or bad metadata.
    InvalidConvertedObject,
}

impl Failure {
    pub fn label(self) -> &'static str {
        match self {
            Self::Call => "conversion_webhook_call_failure",
            Self::MalformedResponse => "conversion_webhook_malformed_response_failure",
            Self::PartialResponse => "conversion_webhook_partial_response_failure",
            Self::InvalidConvertedObject => "conversion_webhook_invalid_converted_object_failure",
        }
    }
}

/// One call of a definition's conversion webhook.
pub struct Observation<'a> {
    /// The definition's name.
    pub definition: &'a str,
    /// The version the (first) object sent was in, and the version asked for.
    pub from: &'a str,
    pub to: &'a str,
    pub failure: Option<Failure>,
    pub seconds: f64,
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
    ) -> std::result::Result<(), (Failure, String)> {
        let failed = |failure: Failure| {
            move |why: String| {
                (
                    failure,
                    format!("conversion webhook for {subject} failed: {why}"),
                )
            }
        };
        let version = ReviewVersion::first_of(&self.review_versions).ok_or_else(|| {
            (
                Failure::Call,
                "no supported conversion review versions".to_string(),
            )
        })?;
        let uid = uuid::Uuid::new_v4().to_string();
        let sent: Vec<&Value> = pending.iter().map(|&i| &objects[i]).collect();
        let body = request(version, &uid, desired, &sent)
            .to_string()
            .into_bytes();
        let answer = self
            .webhook
            .post(&self.client_config, body)
            .await
            .map_err(failed(Failure::Call))?;
        let answer: Value =
            serde_json::from_slice(&answer).map_err(|e| failed(Failure::Call)(e.to_string()))?;
        let converted = converted_objects(version, &uid, &answer)
            .map_err(failed(Failure::MalformedResponse))?;
        if converted.len() != pending.len() {
            return Err((
                Failure::PartialResponse,
                format!(
                    "conversion webhook for {subject} returned {} objects, expected {}",
                    converted.len(),
                    pending.len()
                ),
            ));
        }
        self.take_converted(objects, pending, converted, desired, subject, list)
            .map_err(|why| (Failure::InvalidConvertedObject, why))
    }

    /// The answered objects checked and put in place of those sent.
    fn take_converted(
        &self,
        objects: &mut [Value],
        pending: &[usize],
        converted: Vec<Value>,
        desired: &str,
        subject: &str,
        list: bool,
    ) -> std::result::Result<(), String> {
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
        self.webhook.observe(&Observation {
            definition: &self.definition,
            from: version_of(&from),
            to: version_of(desired),
            failure: outcome.as_ref().err().map(|(failure, _)| *failure),
            seconds: started.elapsed().as_secs_f64(),
        });
        // Upstream hands the client the converter's error as it is: a 500 with no reason.
        outcome.map_err(|(_, why)| RegistryError::Unclassified(why))?;
        Ok(objects)
    }
}

/// The version of an apiVersion (`group/version`).
fn version_of(api_version: &str) -> &str {
    api_version.rsplit('/').next().unwrap_or_default()
}

#[cfg(test)]
mod tests;
