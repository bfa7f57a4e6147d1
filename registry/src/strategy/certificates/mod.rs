//! CertificateSigningRequests (certificates.k8s.io/v1; upstream's pkg/apis/certificates
//! validation and pkg/registry/certificates strategies): a PEM PKCS#10 request for a signer,
//! stamped with who asked; approval conditions written only through `approval`, the issued
//! certificate only through `status` and only once; Approved, Denied and Failed never
//! removed.

use base64::Engine;
use serde_json::{json, Value};
use x509_parser::prelude::FromDer;

use crate::auth::UserInfo;
use crate::error::Cause;
use crate::store::update::Subresource;
use crate::strategy::Strategy;
use crate::validation::webhook::go_bytes;
use crate::validation::{names, quote};

/// The signer of client certificates the apiserver accepts.
pub const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";
/// The signer of kubelets' client certificates.
pub const KUBE_APISERVER_CLIENT_KUBELET: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// The signer of kubelets' serving certificates.
pub const KUBELET_SERVING: &str = "kubernetes.io/kubelet-serving";
/// The signer v1 refuses (v1beta1's default).
pub const LEGACY_UNKNOWN: &str = "kubernetes.io/legacy-unknown";

/// Every key usage a request may name (upstream's allValidUsages, sorted).
pub const USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// The condition types that may only be True.
const TRUE_ONLY: &[&str] = &["Approved", "Denied", "Failed"];

pub struct CertificateSigningRequestStrategy;

/// The request's bytes (spec.request, base64 in JSON).
pub fn request_bytes(csr: &Value) -> Vec<u8> {
    let text = csr
        .pointer("/spec/request")
        .and_then(Value::as_str)
        .unwrap_or_default();
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_else(|_| text.as_bytes().to_vec())
}

/// The DER of the request's first PEM block, which must be a CERTIFICATE REQUEST.
pub fn request_der(pem: &[u8]) -> Result<Vec<u8>, String> {
    const WRONG: &str = "PEM block type must be CERTIFICATE REQUEST";
    match x509_parser::pem::parse_x509_pem(pem) {
        Ok((_, block)) if block.label == "CERTIFICATE REQUEST" => Ok(block.contents),
        _ => Err(WRONG.into()),
    }
}

/// Why the request is not a well-signed PKCS#10 request, if it is not.
fn request_problem(csr: &Value) -> Option<String> {
    let der = match request_der(&request_bytes(csr)) {
        Ok(der) => der,
        Err(e) => return Some(e),
    };
    match x509_parser::certification_request::X509CertificationRequest::from_der(&der) {
        Err(e) => Some(format!("x509: malformed certificate request: {e}")),
        Ok((_, request)) => request
            .verify_signature()
            .err()
            .map(|_| "x509: signature verification failure".to_string()),
    }
}

/// Why status.certificate is not a chain of PEM CERTIFICATE blocks, if it is not.
fn certificate_problem(csr: &Value) -> Option<String> {
    let text = csr
        .pointer("/status/certificate")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let data = base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_else(|_| text.as_bytes().to_vec());
    if data.is_empty() {
        return None;
    }
    let mut blocks = 0;
    for block in x509_parser::pem::Pem::iter_from_buffer(&data) {
        let Ok(block) = block else { break };
        if block.label != "CERTIFICATE" {
            return Some(format!(
                "only CERTIFICATE PEM blocks are allowed, found {}",
                quote(&block.label)
            ));
        }
        if let Err(e) = x509_parser::parse_x509_certificate(&block.contents) {
            return Some(format!("x509: malformed certificate: {e}"));
        }
        blocks += 1;
    }
    (blocks == 0).then(|| "must contain at least one CERTIFICATE PEM block".to_string())
}

fn conditions(csr: &Value) -> Vec<&Value> {
    csr.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|c| c.iter().collect())
        .unwrap_or_default()
}

fn condition_type(c: &Value) -> &str {
    c.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn of_type<'a>(csr: &'a Value, kind: &str) -> Vec<&'a Value> {
    conditions(csr)
        .into_iter()
        .filter(|c| condition_type(c) == kind)
        .collect()
}

/// v1's SetDefaults_CertificateSigningRequestCondition: a condition's status is True.
fn default_conditions(csr: &mut Value) {
    let Some(list) = csr
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for c in list.iter_mut().filter_map(Value::as_object_mut) {
        if c.get("status")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .is_empty()
        {
            c.insert("status".into(), json!("True"));
        }
    }
}

/// Condition times the writer left out (upstream's populateConditionTimestamps): updated now;
/// the transition kept from an old condition of the same type and status, else now.
fn populate_timestamps(new: &mut Value, old: &Value) {
    let now = crate::object::now();
    let previous: Vec<Value> = conditions(old).into_iter().cloned().collect();
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let unset = |c: &serde_json::Map<String, Value>, f: &str| {
        c.get(f)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .is_empty()
    };
    for c in list.iter_mut().filter_map(Value::as_object_mut) {
        if unset(c, "lastUpdateTime") {
            c.insert("lastUpdateTime".into(), json!(now));
        }
        if unset(c, "lastTransitionTime") {
            let kept = previous.iter().find(|o| {
                o.get("type") == c.get("type")
                    && o.get("status") == c.get("status")
                    && !o["lastTransitionTime"]
                        .as_str()
                        .unwrap_or_default()
                        .is_empty()
            });
            let at = kept.map_or_else(|| json!(now), |o| o["lastTransitionTime"].clone());
            c.insert("lastTransitionTime".into(), at);
        }
    }
}

/// A status write keeps the approval conditions as they were (upstream's
/// preserveConditionInstances for Approved and Denied).
fn preserve_approval(new: &mut Value, old: &Value) {
    let kept: Vec<Value> = conditions(old)
        .into_iter()
        .filter(|c| matches!(condition_type(c), "Approved" | "Denied"))
        .cloned()
        .collect();
    let mut list: Vec<Value> = conditions(new)
        .into_iter()
        .filter(|c| !matches!(condition_type(c), "Approved" | "Denied"))
        .cloned()
        .collect();
    list.extend(kept);
    if let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) {
        if list.is_empty() {
            status.remove("conditions");
        } else {
            status.insert("conditions".into(), Value::Array(list));
        }
    }
}

/// What an update may do that a create may not.
#[derive(Default)]
struct Allowed {
    certificate: bool,
    approval: bool,
}

impl Strategy for CertificateSigningRequestStrategy {
    /// Any name will do.
    fn name_problems(&self, _name: &str) -> Vec<String> {
        Vec::new()
    }

    /// No requester but the one the server records, and no pre-approved requests.
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            for field in ["username", "uid", "groups", "extra"] {
                spec.remove(field);
            }
        }
        if let Some(map) = obj.as_object_mut() {
            map.insert("status".into(), json!({}));
        }
    }

    fn record_requester(&self, obj: &mut Value, user: Option<&UserInfo>) {
        let (Some(user), Some(spec)) = (user, obj.get_mut("spec").and_then(Value::as_object_mut))
        else {
            return;
        };
        spec.insert("username".into(), json!(user.name));
        if !user.uid.is_empty() {
            spec.insert("uid".into(), json!(user.uid));
        }
        if !user.groups.is_empty() {
            spec.insert("groups".into(), json!(user.groups));
        }
        if !user.extra.is_empty() {
            spec.insert("extra".into(), json!(user.extra));
        }
    }

    /// The main resource changes only metadata.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        for part in ["spec", "status"] {
            match old.get(part) {
                Some(v) => new[part] = v.clone(),
                None => {
                    if let Some(map) = new.as_object_mut() {
                        map.remove(part);
                    }
                }
            }
        }
    }

    fn prepare_for_subresource_update(&self, sub: Subresource, new: &mut Value, old: &Value) {
        default_conditions(new);
        match sub {
            Subresource::Status => {
                preserve_approval(new, old);
                populate_timestamps(new, old);
            }
            Subresource::Approval => populate_timestamps(new, old),
            _ => {}
        }
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        validate_request(obj, None)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        validate_update(new, old, &Allowed::default())
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let allowed = Allowed {
            certificate: true,
            ..Default::default()
        };
        validate_update(new, old, &allowed)
    }

    fn validate_approval_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let allowed = Allowed {
            approval: true,
            ..Default::default()
        };
        validate_update(new, old, &allowed)
    }
}

/// The object's own rules; `old` relaxes those existing data already breaks (upstream's
/// getValidationOptions).
fn validate_request(csr: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(problem) = request_problem(csr) {
        causes.push(Cause::invalid(
            "spec.request",
            go_bytes(&request_bytes(csr)),
            &problem,
        ));
    }
    let usages: Vec<&str> = csr
        .pointer("/spec/usages")
        .and_then(Value::as_array)
        .map(|u| u.iter().map(|v| v.as_str().unwrap_or_default()).collect())
        .unwrap_or_default();
    if usages.is_empty() {
        causes.push(Cause::required("spec.usages"));
    }
    let old_usages: Vec<&str> = old
        .and_then(|o| o.pointer("/spec/usages"))
        .and_then(Value::as_array)
        .map(|u| u.iter().map(|v| v.as_str().unwrap_or_default()).collect())
        .unwrap_or_default();
    if !old_usages.iter().any(|u| !USAGES.contains(u)) {
        for (i, usage) in usages.iter().enumerate() {
            if !USAGES.contains(usage) {
                causes.push(Cause::not_supported(
                    &format!("spec.usages[{i}]"),
                    usage,
                    USAGES,
                ));
            }
        }
    }
    let duplicated = |list: &[&str]| list.iter().enumerate().any(|(i, u)| list[..i].contains(u));
    if !duplicated(&old_usages) {
        for (i, usage) in usages.iter().enumerate() {
            if usages[..i].contains(usage) {
                causes.push(Cause::duplicate(&format!("spec.usages[{i}]"), quote(usage)));
            }
        }
    }
    let signer = csr
        .pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let old_signer = old.and_then(|o| o.pointer("/spec/signerName"));
    if signer == LEGACY_UNKNOWN && old_signer != Some(&json!(LEGACY_UNKNOWN)) {
        causes.push(Cause::invalid(
            "spec.signerName",
            quote(signer),
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        causes.extend(signer_name_causes(signer));
    }
    if let Some(seconds) = csr
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .filter(|s| *s < 600)
    {
        causes.push(Cause::invalid(
            "spec.expirationSeconds",
            seconds,
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    causes.extend(condition_causes(csr, old));
    let untouched =
        old.is_some_and(|o| o.pointer("/status/certificate") == csr.pointer("/status/certificate"));
    let broken_before = old.is_some_and(|o| certificate_problem(o).is_some());
    if !untouched && !broken_before {
        if let Some(problem) = certificate_problem(csr) {
            causes.push(Cause::invalid(
                "status.certificate",
                "\"<certificate data>\"",
                &problem,
            ));
        }
    }
    causes
}

/// upstream's ValidateSignerName: `<domain>/<path>`, the domain two or more DNS labels, the
/// path DNS subdomains.
fn signer_name_causes(signer: &str) -> Vec<Cause> {
    const FIELD: &str = "spec.signerName";
    if signer.is_empty() {
        return vec![Cause::required(FIELD)];
    }
    let Some((domain, path)) = signer.split_once('/').filter(|(_, p)| !p.contains('/')) else {
        return vec![Cause::invalid(
            FIELD,
            quote(signer),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        )];
    };
    let mut causes = Vec::new();
    if domain.len() > 253 {
        causes.push(Cause::too_long(FIELD, 253));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    for label in &labels {
        let problems = names::is_dns1123_label(label);
        if !problems.is_empty() {
            for p in problems {
                causes.push(Cause::invalid(
                    FIELD,
                    quote(domain),
                    &format!("validating label {}: {p}", quote(label)),
                ));
            }
            break;
        }
    }
    if labels.len() < 2 {
        causes.push(Cause::invalid(
            FIELD,
            quote(domain),
            "should be a domain with at least two segments separated by dots",
        ));
    }
    for component in path.split('.') {
        let problems = names::is_dns1123_subdomain(component);
        if !problems.is_empty() {
            for p in problems {
                causes.push(Cause::invalid(
                    FIELD,
                    quote(path),
                    &format!("validating component {}: {p}", quote(component)),
                ));
            }
            break;
        }
    }
    causes
}

fn condition_causes(csr: &Value, old: Option<&Value>) -> Vec<Cause> {
    const FIELD: &str = "status.conditions";
    let mut causes = Vec::new();
    let old_types: Vec<&str> = old
        .map(conditions)
        .unwrap_or_default()
        .into_iter()
        .map(condition_type)
        .collect();
    let allow_empty = old_types.contains(&"");
    let allow_duplicates = old_types
        .iter()
        .enumerate()
        .any(|(i, t)| old_types[..i].contains(t));
    let allow_both = old_types.contains(&"Approved") && old_types.contains(&"Denied");
    let (mut approved, mut denied) = (false, false);
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in conditions(csr).into_iter().enumerate() {
        let kind = condition_type(c);
        if kind.is_empty() && !allow_empty {
            causes.push(Cause::required(&format!("{FIELD}[{i}].type")));
        }
        let status = c.get("status").and_then(Value::as_str).unwrap_or_default();
        let allowed: &[&str] = if TRUE_ONLY.contains(&kind) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        if status.is_empty() {
            causes.push(Cause::required(&format!("{FIELD}[{i}].status")));
        } else if !allowed.contains(&status) {
            causes.push(Cause::not_supported(
                &format!("{FIELD}[{i}].status"),
                status,
                allowed,
            ));
        }
        if !allow_both {
            let conflict = match kind {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if conflict {
                causes.push(Cause::invalid(
                    FIELD,
                    quote(kind),
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !allow_duplicates && seen.contains(&kind) {
            causes.push(Cause::duplicate(&format!("{FIELD}[{i}].type"), quote(kind)));
        }
        seen.push(kind);
    }
    causes
}

fn validate_update(new: &Value, old: &Value, allowed: &Allowed) -> Vec<Cause> {
    let mut causes = validate_request(new, Some(old));
    for kind in ["Approved", "Denied", "Failed"] {
        if of_type(new, kind).len() < of_type(old, kind).len() {
            causes.push(Cause::forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type {}", quote(kind)),
            ));
        }
    }
    if !allowed.approval {
        for kind in ["Approved", "Denied"] {
            let (before, after) = (of_type(old, kind), of_type(new, kind));
            if after.len() > before.len() {
                causes.push(Cause::forbidden(
                    "status.conditions",
                    &format!("updates may not add a condition of type {}", quote(kind)),
                ));
            } else if after.len() == before.len() && after != before {
                causes.push(Cause::forbidden(
                    "status.conditions",
                    &format!("updates may not modify a condition of type {}", quote(kind)),
                ));
            }
        }
    }
    let certificate = |o: &Value| {
        o.pointer("/status/certificate")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    if certificate(new) != certificate(old) {
        if !allowed.certificate {
            causes.push(Cause::forbidden(
                "status.certificate",
                "updates may not set certificate content",
            ));
        } else if !certificate(old).is_empty() {
            causes.push(Cause::forbidden(
                "status.certificate",
                "updates may not modify existing certificate content",
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests;
