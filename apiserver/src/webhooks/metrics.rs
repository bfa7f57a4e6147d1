//! The webhook families of upstream's admission metrics (k8s.io/apiserver/pkg/admission/
//! metrics): how long each webhook call took, how many requests each webhook got and
//! rejected, and how often one that could not be called was passed over.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts};

use super::Kind;

static DURATION: LazyLock<HistogramVec> = LazyLock::new(|| {
    HistogramVec::new(
        HistogramOpts::new(
            "apiserver_admission_webhook_admission_duration_seconds",
            "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
        )
        .buckets(vec![0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0]),
        &["name", "type", "operation", "rejected"],
    )
    .expect("apiserver_admission_webhook_admission_duration_seconds")
});

static REQUESTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    IntCounterVec::new(
        Opts::new(
            "apiserver_admission_webhook_request_total",
            "Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
        ),
        &["name", "type", "operation", "code", "rejected"],
    )
    .expect("apiserver_admission_webhook_request_total")
});

static REJECTIONS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    IntCounterVec::new(
        Opts::new(
            "apiserver_admission_webhook_rejection_count",
            "Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
        ),
        &["name", "type", "operation", "error_type", "rejection_code"],
    )
    .expect("apiserver_admission_webhook_rejection_count")
});

static FAIL_OPEN: LazyLock<IntCounterVec> = LazyLock::new(|| {
    IntCounterVec::new(
        Opts::new(
            "apiserver_admission_webhook_fail_open_count",
            "Admission webhook fail open count, identified by name and broken out for each admission type (validating or admit).",
        ),
        &["name", "type"],
    )
    .expect("apiserver_admission_webhook_fail_open_count")
});

pub fn register(registry: &prometheus::Registry) -> prometheus::Result<()> {
    registry.register(Box::new(DURATION.clone()))?;
    registry.register(Box::new(REQUESTS.clone()))?;
    registry.register(Box::new(REJECTIONS.clone()))?;
    registry.register(Box::new(FAIL_OPEN.clone()))
}

/// Upstream's `type` label.
fn kind_label(kind: Kind) -> &'static str {
    match kind {
        Kind::Mutating => "admit",
        Kind::Validating => "validating",
    }
}

/// How one call ended.
pub enum Outcome {
    /// Answered; `rejected` with `code` when it refused.
    Answered { rejected: bool, code: u16 },
    /// Not called successfully and passed over (failurePolicy Ignore).
    FailedOpen,
    /// Not called successfully, refusing the request.
    Failed,
}

pub fn record(kind: Kind, name: &str, operation: &str, elapsed: Duration, outcome: &Outcome) {
    let kind = kind_label(kind);
    let truncate = |code: u16| code.min(600).to_string();
    let rejected = matches!(
        outcome,
        Outcome::Answered { rejected: true, .. } | Outcome::Failed
    );
    let rejected_text = if rejected { "true" } else { "false" };
    DURATION
        .with_label_values(&[name, kind, operation, rejected_text])
        .observe(elapsed.as_secs_f64());
    match outcome {
        Outcome::Answered { rejected, code } => {
            REQUESTS
                .with_label_values(&[name, kind, operation, "200", rejected_text])
                .inc();
            if *rejected {
                REJECTIONS
                    .with_label_values(&[name, kind, operation, "no_error", &truncate(*code)])
                    .inc();
            }
        }
        Outcome::FailedOpen => {
            REQUESTS
                .with_label_values(&[name, kind, operation, "0", "false"])
                .inc();
            FAIL_OPEN.with_label_values(&[name, kind]).inc();
        }
        Outcome::Failed => {
            REQUESTS
                .with_label_values(&[name, kind, operation, "0", "true"])
                .inc();
            REJECTIONS
                .with_label_values(&[name, kind, operation, "calling_webhook_error", "0"])
                .inc();
        }
    }
}
