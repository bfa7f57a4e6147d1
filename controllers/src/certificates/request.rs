//! What the certificate controllers read of a CertificateSigningRequest: its conditions, its
//! parsed PKCS#10 request, and upstream's checks of what kubelets may ask for
//! (ValidateKubeletClientCSR, ValidateKubeletServingCSR).

use std::collections::BTreeSet;

use registry::strategy::certificates::{request_bytes, request_der};
use serde_json::Value;
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer;

/// The condition of this type, if the request has one.
pub(super) fn condition<'a>(csr: &'a Value, kind: &str) -> Option<&'a Value> {
    csr.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

pub(super) fn has(csr: &Value, kind: &str) -> bool {
    condition(csr, kind).is_some()
}

pub(super) fn issued(csr: &Value) -> bool {
    csr.pointer("/status/certificate")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty())
}

pub(super) fn text<'a>(csr: &'a Value, pointer: &str) -> &'a str {
    csr.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub(super) fn usages(csr: &Value) -> BTreeSet<String> {
    csr.pointer("/spec/usages")
        .and_then(Value::as_array)
        .map(|u| {
            u.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// What the checks look at in a request.
#[derive(Debug, Default)]
pub(super) struct Subject {
    pub common_name: String,
    pub organizations: Vec<String>,
    pub dns: usize,
    pub ips: usize,
    pub emails: usize,
    pub uris: usize,
}

/// The request's DER, when it parses.
pub(super) fn der(csr: &Value) -> Result<Vec<u8>, String> {
    request_der(&request_bytes(csr))
}

pub(super) fn subject(der: &[u8]) -> Result<Subject, String> {
    let (_, request) = X509CertificationRequest::from_der(der).map_err(|e| e.to_string())?;
    let info = &request.certification_request_info;
    let mut subject = Subject {
        common_name: info
            .subject
            .iter_common_name()
            .next()
            .and_then(|c| c.as_str().ok())
            .unwrap_or_default()
            .to_string(),
        organizations: info
            .subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok().map(str::to_string))
            .collect(),
        ..Default::default()
    };
    for ext in request.requested_extensions().into_iter().flatten() {
        if let ParsedExtension::SubjectAlternativeName(san) = ext {
            for name in &san.general_names {
                match name {
                    GeneralName::DNSName(_) => subject.dns += 1,
                    GeneralName::IPAddress(_) => subject.ips += 1,
                    GeneralName::RFC822Name(_) => subject.emails += 1,
                    GeneralName::URI(_) => subject.uris += 1,
                    _ => {}
                }
            }
        }
    }
    Ok(subject)
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// `[a b c]`, as Go prints the sorted usages.
fn go_list(items: &BTreeSet<String>) -> String {
    format!("[{}]", items.iter().cloned().collect::<Vec<_>>().join(" "))
}

const NOT_NODES: &str = "subject organization is not system:nodes";
const NOT_NODE_NAME: &str = "subject common name does not begin with system:node:";

/// What makes a request not a kubelet's client certificate request.
pub(super) fn kubelet_client_problem(s: &Subject, usages: &BTreeSet<String>) -> Option<String> {
    if s.organizations != ["system:nodes"] {
        return Some(NOT_NODES.into());
    }
    for (count, kind) in [
        (s.dns, "DNS"),
        (s.emails, "Email"),
        (s.ips, "IP"),
        (s.uris, "URI"),
    ] {
        if count > 0 {
            return Some(format!("{kind} subjectAltNames are not allowed"));
        }
    }
    if !s.common_name.starts_with("system:node:") {
        return Some(NOT_NODE_NAME.into());
    }
    let required = set(&["client auth", "digital signature", "key encipherment"]);
    if *usages != required && *usages != set(&["client auth", "digital signature"]) {
        return Some(format!("usages did not match {}", go_list(&required)));
    }
    None
}

/// What makes a request not a kubelet's serving certificate request.
pub(super) fn kubelet_serving_problem(s: &Subject, usages: &BTreeSet<String>) -> Option<String> {
    if s.organizations != ["system:nodes"] {
        return Some(NOT_NODES.into());
    }
    if s.dns == 0 && s.ips == 0 {
        return Some("DNS or IP subjectAltName is required".into());
    }
    for (count, kind) in [(s.emails, "Email"), (s.uris, "URI")] {
        if count > 0 {
            return Some(format!("{kind} subjectAltNames are not allowed"));
        }
    }
    let required = set(&["digital signature", "key encipherment", "server auth"]);
    if *usages != required && *usages != set(&["digital signature", "server auth"]) {
        return Some(format!("usages did not match {}", go_list(&required)));
    }
    if !s.common_name.starts_with("system:node:") {
        return Some(NOT_NODE_NAME.into());
    }
    None
}

/// What makes usages unfit for an apiserver client certificate.
pub(super) fn client_usages_problem(usages: &BTreeSet<String>) -> Option<String> {
    for usage in usages {
        if !matches!(
            usage.as_str(),
            "digital signature" | "key encipherment" | "client auth"
        ) {
            return Some(format!("invalid usage for client certificate: {usage}"));
        }
    }
    (!usages.contains("client auth"))
        .then(|| "missing required usage for client certificate: client auth".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(cn: &str, orgs: &[&str], dns: usize) -> Subject {
        Subject {
            common_name: cn.into(),
            organizations: orgs.iter().map(|o| o.to_string()).collect(),
            dns,
            ..Default::default()
        }
    }

    #[test]
    fn kubelet_requests_as_upstream_checks_them() {
        let client = set(&["digital signature", "client auth"]);
        assert_eq!(
            kubelet_client_problem(&subject("system:node:a", &["system:nodes"], 0), &client),
            None
        );
        assert_eq!(
            kubelet_client_problem(&subject("system:node:a", &["devs"], 0), &client).as_deref(),
            Some("subject organization is not system:nodes")
        );
        assert_eq!(
            kubelet_client_problem(&subject("system:node:a", &["system:nodes"], 1), &client)
                .as_deref(),
            Some("DNS subjectAltNames are not allowed")
        );
        assert_eq!(
            kubelet_client_problem(&subject("a", &["system:nodes"], 0), &client).as_deref(),
            Some("subject common name does not begin with system:node:")
        );
        assert_eq!(
            kubelet_client_problem(
                &subject("system:node:a", &["system:nodes"], 0),
                &set(&["client auth"])
            )
            .as_deref(),
            Some("usages did not match [client auth digital signature key encipherment]")
        );
        let serving = set(&["digital signature", "server auth"]);
        assert_eq!(
            kubelet_serving_problem(&subject("system:node:a", &["system:nodes"], 0), &serving)
                .as_deref(),
            Some("DNS or IP subjectAltName is required")
        );
        assert_eq!(
            kubelet_serving_problem(&subject("system:node:a", &["system:nodes"], 1), &serving),
            None
        );
        assert_eq!(
            client_usages_problem(&set(&["server auth", "client auth"])).as_deref(),
            Some("invalid usage for client certificate: server auth")
        );
        assert_eq!(
            client_usages_problem(&set(&["digital signature"])).as_deref(),
            Some("missing required usage for client certificate: client auth")
        );
    }
}
