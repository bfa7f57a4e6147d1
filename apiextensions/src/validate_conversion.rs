//! Validation of `spec.conversion` (upstream's validateCustomResourceConversion): a None
//! strategy carries no webhook; a Webhook strategy names its webhook by URL or Service, may
//! trust a CA bundle, and lists the ConversionReview versions it understands. Paths and words
//! are upstream's, which names the internal type's fields (`spec.conversion.webhookClientConfig`,
//! `spec.conversion.conversionReviewVersions`).

use base64::Engine;
use serde_json::Value;

use super::definition::{Conversion, Definition};
use registry::error::Cause;
use registry::validation::{is_dns1035_label, quote, webhook};

/// The ConversionReview versions this server sends (sorted, as upstream lists them).
pub const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

const CLIENT_CONFIG: &str = "spec.conversion.webhookClientConfig";
const VERSIONS: &str = "spec.conversion.conversionReviewVersions";

/// What an update may keep that a create may not: upstream relaxes two rules for a
/// definition that already broke them.
#[derive(Clone, Copy)]
pub struct Relaxed {
    /// The review versions must include one this server knows (not when the stored
    /// definition listed only unknown ones).
    pub require_known_version: bool,
    /// A CA bundle that does not parse is let through (while the stored definition is not
    /// established yet, or its own bundle did not parse either).
    pub allow_invalid_ca_bundle: bool,
}

impl Relaxed {
    /// The rules for a definition written over `old` (None: created).
    pub fn over(old: Option<&Definition>) -> Self {
        let Some(old) = old else {
            return Self {
                require_known_version: true,
                allow_invalid_ca_bundle: false,
            };
        };
        let old_webhook = old
            .spec
            .conversion
            .as_ref()
            .and_then(|c| c.webhook.as_ref());
        let old_versions = old_webhook
            .map(|w| w.conversion_review_versions.as_slice())
            .unwrap_or_default();
        let old_bundle = old_webhook
            .and_then(|w| w.client_config.as_ref())
            .map(ca_bundle_bytes)
            .unwrap_or_default();
        Self {
            require_known_version: old_versions.is_empty()
                || old_versions
                    .iter()
                    .any(|v| REVIEW_VERSIONS.contains(&v.as_str())),
            allow_invalid_ca_bundle: !old.established()
                || (!old_bundle.is_empty()
                    && !webhook::ca_bundle(&old_bundle, CLIENT_CONFIG).is_empty()),
        }
    }
}

/// The caBundle of a client configuration, decoded (JSON carries it in base64).
pub fn ca_bundle_bytes(client_config: &Value) -> Vec<u8> {
    client_config["caBundle"]
        .as_str()
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .unwrap_or_default()
}

/// Every problem of `spec.conversion`, given whether `spec.preserveUnknownFields` is set.
pub fn validate(
    conversion: &Conversion,
    preserve_unknown_fields: bool,
    relaxed: Relaxed,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    let client_config = conversion
        .webhook
        .as_ref()
        .and_then(|w| w.client_config.as_ref())
        .filter(|c| !c.is_null());
    let versions = conversion
        .webhook
        .as_ref()
        .map(|w| w.conversion_review_versions.as_slice())
        .unwrap_or_default();
    match conversion.strategy.as_str() {
        "" | "None" => {
            if client_config.is_some() {
                causes.push(Cause::forbidden(
                    CLIENT_CONFIG,
                    "should not be set when strategy is not set to Webhook",
                ));
            }
            if !versions.is_empty() {
                causes.push(Cause::forbidden(
                    VERSIONS,
                    "should not be set when strategy is not set to Webhook",
                ));
            }
            return causes;
        }
        "Webhook" => {}
        other => {
            causes.push(Cause::not_supported(
                "spec.conversion.strategy",
                other,
                &["None", "Webhook"],
            ));
            return causes;
        }
    }
    if preserve_unknown_fields {
        causes.push(Cause::invalid(
            "spec.conversion.strategy",
            quote("Webhook"),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    match client_config {
        None => causes.push(Cause::required_because(
            CLIENT_CONFIG,
            "required when strategy is set to Webhook",
        )),
        Some(config) => {
            causes.extend(webhook::client_config(config, CLIENT_CONFIG));
            let bundle = ca_bundle_bytes(config);
            if !bundle.is_empty() && !relaxed.allow_invalid_ca_bundle {
                causes.extend(webhook::ca_bundle(
                    &bundle,
                    &format!("{CLIENT_CONFIG}.caBundle"),
                ));
            }
        }
    }
    causes.extend(review_versions(versions, relaxed.require_known_version));
    causes
}

/// validateConversionReviewVersions: at least one, no duplicates, DNS labels, and (unless
/// relaxed) one this server sends.
fn review_versions(versions: &[String], require_known: bool) -> Vec<Cause> {
    if versions.is_empty() {
        return vec![Cause::required(VERSIONS)];
    }
    let mut causes = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let at = format!("{VERSIONS}[{i}]");
        if seen.contains(&v.as_str()) {
            causes.push(Cause::invalid(&at, quote(v), "duplicate version"));
            continue;
        }
        seen.push(v);
        for why in is_dns1035_label(v) {
            causes.push(Cause::invalid(&at, quote(v), &why));
        }
    }
    if require_known
        && !versions
            .iter()
            .any(|v| REVIEW_VERSIONS.contains(&v.as_str()))
    {
        let quoted: Vec<String> = versions.iter().map(|v| quote(v)).collect();
        causes.push(Cause::invalid(
            VERSIONS,
            format!("[]string{{{}}}", quoted.join(", ")),
            &format!(
                "must include at least one of {}",
                REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    causes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::definition::WebhookConversion;

    fn webhook(config: Value, versions: &[&str]) -> Conversion {
        Conversion {
            strategy: "Webhook".into(),
            webhook: Some(WebhookConversion {
                client_config: Some(config),
                conversion_review_versions: versions.iter().map(|v| v.to_string()).collect(),
            }),
        }
    }

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    const STRICT: Relaxed = Relaxed {
        require_known_version: true,
        allow_invalid_ca_bundle: false,
    };

    #[test]
    fn a_webhook_by_url_with_a_known_version_passes() {
        let ok = webhook(
            json!({"url": "https://127.0.0.1:8443/convert"}),
            &["v2", "v1"],
        );
        assert!(validate(&ok, false, STRICT).is_empty());
    }

    #[test]
    fn webhook_problems_in_upstreams_words() {
        let missing = Conversion {
            strategy: "Webhook".into(),
            webhook: None,
        };
        assert_eq!(
            messages(validate(&missing, false, STRICT)),
            [
                "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                "spec.conversion.conversionReviewVersions: Required value",
            ]
        );
        let both = webhook(
            json!({"url": "https://a.example.com", "service": {"name": "s", "namespace": "n"}}),
            &["v3", "v3"],
        );
        assert_eq!(
            messages(validate(&both, true, STRICT)),
            [
                "spec.conversion.strategy: Invalid value: \"Webhook\": must be None if spec.preserveUnknownFields is true",
                "spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required",
                "spec.conversion.conversionReviewVersions[1]: Invalid value: \"v3\": duplicate version",
                "spec.conversion.conversionReviewVersions: Invalid value: []string{\"v3\", \"v3\"}: must include at least one of v1, v1beta1",
            ]
        );
        let bad_ca = webhook(
            json!({"url": "http://a.example.com", "caBundle": "bm90IGEgY2VydA=="}),
            &["v1"],
        );
        let found = messages(validate(&bad_ca, false, STRICT));
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme"));
        assert!(found[1].starts_with(
            "spec.conversion.webhookClientConfig.caBundle: Invalid value: []byte{0x6e,"
        ));
        assert!(found[1].ends_with("data does not contain any valid RSA or ECDSA certificates"));
        let relaxed = Relaxed {
            require_known_version: false,
            allow_invalid_ca_bundle: true,
        };
        assert_eq!(validate(&bad_ca, false, relaxed).len(), 1);
    }

    #[test]
    fn a_none_strategy_carries_no_webhook() {
        let mut none = webhook(json!({"url": "https://a.example.com"}), &["v1"]);
        none.strategy = "None".into();
        assert_eq!(
            messages(validate(&none, false, STRICT)),
            [
                "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
                "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
            ]
        );
    }
}
