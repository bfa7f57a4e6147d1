//! The HTTPS side of CustomResourceDefinition conversion webhooks: a ConversionReview POSTed
//! to the definition's webhook by URL or Service, trusting its caBundle, through the same
//! transport as admission webhooks (upstream's webhook ClientManager serves both), with
//! upstream's 30 s client timeout; and the duration of each conversion as
//! `apiserver_crd_conversion_webhook_duration_seconds`.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use apiextensions::ConversionWebhook;
use async_trait::async_trait;
use prometheus::{HistogramOpts, HistogramVec};
use registry::Registry;
use serde_json::Value;

use crate::webhooks::transport;

/// The timeout of upstream's webhook REST client, which conversion calls are made with.
const TIMEOUT: Duration = Duration::from_secs(30);

static DURATION: LazyLock<HistogramVec> = LazyLock::new(|| {
    HistogramVec::new(
        HistogramOpts::new(
            "apiserver_crd_conversion_webhook_duration_seconds",
            "CRD webhook conversion duration in seconds",
        )
        // Upstream's ExponentialBuckets(0.001, 2, 15).
        .buckets(prometheus::exponential_buckets(0.001, 2.0, 15).unwrap_or_default()),
        &["crd_name", "from_version", "to_version", "succeeded"],
    )
    .expect("apiserver_crd_conversion_webhook_duration_seconds")
});

pub fn register(registry: &prometheus::Registry) -> prometheus::Result<()> {
    registry.register(Box::new(DURATION.clone()))
}

/// Calls conversion webhooks for the definitions `registry` serves.
pub struct HttpsConversionWebhook {
    registry: Arc<Registry>,
}

impl HttpsConversionWebhook {
    pub fn new(registry: Arc<Registry>) -> Self {
        Self { registry }
    }
}

#[async_trait]
impl ConversionWebhook for HttpsConversionWebhook {
    async fn post(&self, client_config: &Value, body: Vec<u8>) -> Result<Vec<u8>, String> {
        let target = transport::resolve(&self.registry, client_config).await?;
        transport::post(&target, body, TIMEOUT).await
    }

    fn observe(&self, definition: &str, from: &str, to: &str, succeeded: bool, seconds: f64) {
        // Upstream records only conversions between two versions.
        if from != to {
            DURATION
                .with_label_values(&[
                    definition,
                    from,
                    to,
                    if succeeded { "true" } else { "false" },
                ])
                .observe(seconds);
        }
    }
}
