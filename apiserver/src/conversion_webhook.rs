//! The HTTPS side of CustomResourceDefinition conversion webhooks: a ConversionReview POSTed
//! to the definition's webhook by URL or Service, trusting its caBundle, through the same
//! transport as admission webhooks (upstream's webhook ClientManager serves both), with
//! upstream's 30 s client timeout; and upstream's metrics of each call
//! (`apiserver_conversion_webhook_request_total` and `_duration_seconds` by result and failure
//! type, `apiserver_crd_conversion_webhook_duration_seconds` by definition and versions).

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use apiextensions::conversion::Observation;
use apiextensions::ConversionWebhook;
use async_trait::async_trait;
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts};
use registry::Registry;
use serde_json::Value;

use crate::webhooks::transport;

/// The timeout of upstream's webhook REST client, which conversion calls are made with.
const TIMEOUT: Duration = Duration::from_secs(30);

static REQUESTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    IntCounterVec::new(
        Opts::new(
            "apiserver_conversion_webhook_request_total",
            "Counter for conversion webhook requests with success/failure and failure error type",
        ),
        &["result", "failure_type"],
    )
    .expect("apiserver_conversion_webhook_request_total")
});

static LATENCY: LazyLock<HistogramVec> = LazyLock::new(|| {
    HistogramVec::new(
        HistogramOpts::new(
            "apiserver_conversion_webhook_duration_seconds",
            "Conversion webhook request latency",
        )
        .buckets(vec![
            0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0,
        ]),
        &["result", "failure_type"],
    )
    .expect("apiserver_conversion_webhook_duration_seconds")
});

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
    registry.register(Box::new(REQUESTS.clone()))?;
    registry.register(Box::new(LATENCY.clone()))?;
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

    fn observe(&self, call: &Observation<'_>) {
        let (result, failure_type) = match call.failure {
            None => ("success", ""),
            Some(failure) => ("failure", failure.label()),
        };
        REQUESTS.with_label_values(&[result, failure_type]).inc();
        LATENCY
            .with_label_values(&[result, failure_type])
            .observe(call.seconds);
        // Upstream records only conversions between two versions here.
        if call.from != call.to {
            let succeeded = if call.failure.is_none() {
                "true"
            } else {
                "false"
            };
            DURATION
                .with_label_values(&[call.definition, call.from, call.to, succeeded])
                .observe(call.seconds);
        }
    }
}
