//! The client configuration of a webhook (upstream's apiserver/pkg/util/webhook validation):
//! admission webhooks and CustomResourceDefinition conversion webhooks are reached alike, by
//! an https URL or a Service, trusting a CA bundle.

use serde_json::Value;

use super::names::is_dns1123_subdomain;
use super::net::is_valid_port_num;
use super::quote;
use crate::error::Cause;

const URL_FORM: &str = "; desired format: https://host[/path]";

/// A webhook's client configuration: exactly one of an https URL and a Service.
pub fn client_config(config: &Value, field: &str) -> Vec<Cause> {
    let url = config["url"].as_str();
    let service = config.get("service").filter(|s| !s.is_null());
    match (url, service) {
        (Some(url), None) => webhook_url(url, &format!("{field}.url")),
        (None, Some(service)) => webhook_service(service, &format!("{field}.service")),
        _ => vec![Cause::required_because(
            field,
            "exactly one of url or service is required",
        )],
    }
}

/// ValidateWebhookURL with https forced: a host, no user, query or fragment.
pub fn webhook_url(url: &str, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    if scheme != "https" {
        causes.push(Cause::invalid(
            field,
            quote(scheme),
            &format!("'https' is the only allowed URL scheme{URL_FORM}"),
        ));
    }
    let (before_fragment, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (before_query, query) = before_fragment
        .split_once('?')
        .unwrap_or((before_fragment, ""));
    let authority = before_query.split('/').next().unwrap_or_default();
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    if scheme.is_empty() || host.is_empty() {
        causes.push(Cause::invalid(
            field,
            "\"\"",
            &format!("host must be specified{URL_FORM}"),
        ));
    }
    if let Some(user) = user {
        causes.push(Cause::invalid(
            field,
            quote(user),
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        causes.push(Cause::invalid(
            field,
            quote(fragment),
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        causes.push(Cause::invalid(
            field,
            quote(query),
            "query parameters are not permitted in the URL",
        ));
    }
    causes
}

/// ValidateWebhookService: a name, a namespace, a valid port, a path of DNS segments.
pub fn webhook_service(service: &Value, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if service["name"].as_str().unwrap_or_default().is_empty() {
        causes.push(Cause::required_because(
            &format!("{field}.name"),
            "service name is required",
        ));
    }
    if service["namespace"].as_str().unwrap_or_default().is_empty() {
        causes.push(Cause::required_because(
            &format!("{field}.namespace"),
            "service namespace is required",
        ));
    }
    let port = service["port"].as_i64().unwrap_or(443);
    let problems = is_valid_port_num(port);
    if !problems.is_empty() {
        causes.push(Cause::invalid(
            &format!("{field}.port"),
            port,
            &format!("port is not valid: {}", problems.join(", ")),
        ));
    }
    let Some(path) = service["path"].as_str() else {
        return causes;
    };
    let path_field = format!("{field}.path");
    if path.is_empty() || path == "/" {
        return causes;
    }
    if path == "//" {
        causes.push(Cause::invalid(
            &path_field,
            quote(path),
            "segment[0] may not be empty",
        ));
        return causes;
    }
    if !path.starts_with('/') {
        causes.push(Cause::invalid(
            &path_field,
            quote(path),
            "must start with a '/'",
        ));
    }
    let trimmed = path.get(1..).unwrap_or_default();
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    for (i, step) in trimmed.split('/').enumerate() {
        if step.is_empty() {
            causes.push(Cause::invalid(
                &path_field,
                quote(path),
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for m in is_dns1123_subdomain(step) {
            causes.push(Cause::invalid(
                &path_field,
                quote(path),
                &format!("segment[{i}]: {m}"),
            ));
        }
    }
    causes
}

/// ValidateCABundle: PEM CERTIFICATE blocks that parse (`bundle` as decoded from base64).
pub fn ca_bundle(bundle: &[u8], field: &str) -> Vec<Cause> {
    let mut certificates = 0;
    for block in x509_parser::pem::Pem::iter_from_buffer(bundle) {
        let Ok(block) = block else { break };
        if block.label != "CERTIFICATE" {
            continue;
        }
        if let Err(e) = x509_parser::parse_x509_certificate(&block.contents) {
            return vec![Cause::invalid(
                field,
                go_bytes(bundle),
                &format!("x509: malformed certificate: {e}"),
            )];
        }
        certificates += 1;
    }
    if certificates > 0 {
        return Vec::new();
    }
    vec![Cause::invalid(
        field,
        go_bytes(bundle),
        "data does not contain any valid RSA or ECDSA certificates",
    )]
}

/// Go's `%#v` of a byte slice, as field errors print one.
pub fn go_bytes(bytes: &[u8]) -> String {
    let items: Vec<String> = bytes.iter().map(|b| format!("0x{b:x}")).collect();
    format!("[]byte{{{}}}", items.join(", "))
}
