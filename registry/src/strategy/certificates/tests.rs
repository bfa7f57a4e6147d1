//! Upstream's messages for CertificateSigningRequests, the requester they record and the
//! approval and issuance rules of their subresources.

use super::*;

fn pem_request() -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let params = rcgen::CertificateParams::new(vec!["walk".to_string()]).expect("params");
    params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem")
}

fn csr(request: &str, usages: Value, signer: &str) -> Value {
    json!({
        "metadata": {"name": "c"},
        "spec": {
            "request": base64::engine::general_purpose::STANDARD.encode(request),
            "usages": usages, "signerName": signer,
        },
    })
}

fn messages(causes: Vec<Cause>) -> Vec<String> {
    causes.iter().map(Cause::full_message).collect()
}

#[test]
fn requests_usages_and_signers_are_checked() {
    let good = csr(
        &pem_request(),
        json!(["client auth"]),
        KUBE_APISERVER_CLIENT,
    );
    assert!(messages(CertificateSigningRequestStrategy.validate(&good)).is_empty());
    let bad = csr(
        "no",
        json!(["client auth", "client auth", "x"]),
        "example.com/a/b",
    );
    assert_eq!(
        messages(CertificateSigningRequestStrategy.validate(&bad)),
        [
            "spec.request: Invalid value: []byte{0x6e, 0x6f}: PEM block type must be CERTIFICATE REQUEST",
            format!("spec.usages[2]: Unsupported value: \"x\": supported values: {}", USAGES.iter().map(|u| format!("\"{u}\"")).collect::<Vec<_>>().join(", ")).as_str(),
            "spec.usages[1]: Duplicate value: \"client auth\"",
            "spec.signerName: Invalid value: \"example.com/a/b\": must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ]
    );
    let legacy = csr(&pem_request(), json!(["client auth"]), LEGACY_UNKNOWN);
    assert_eq!(
        messages(CertificateSigningRequestStrategy.validate(&legacy)),
        ["spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy signerName is not allowed via this API version"]
    );
    let one_label = csr(&pem_request(), json!(["client auth"]), "example/signer");
    assert_eq!(
        messages(CertificateSigningRequestStrategy.validate(&one_label)),
        ["spec.signerName: Invalid value: \"example\": should be a domain with at least two segments separated by dots"]
    );
}

#[test]
fn creates_record_the_requester_and_start_pending() {
    let mut obj = csr(
        &pem_request(),
        json!(["client auth"]),
        KUBE_APISERVER_CLIENT,
    );
    obj["spec"]["username"] = json!("forged");
    obj["status"] = json!({"conditions": [{"type": "Approved"}]});
    let s = CertificateSigningRequestStrategy;
    s.prepare_for_create(&mut obj);
    let user = UserInfo {
        name: "jane".into(),
        groups: vec!["devs".into()],
        ..Default::default()
    };
    s.record_requester(&mut obj, Some(&user));
    assert_eq!(obj["spec"]["username"], "jane");
    assert_eq!(obj["spec"]["groups"], json!(["devs"]));
    assert!(obj["spec"].get("uid").is_none());
    assert_eq!(obj["status"], json!({}));
}

#[test]
fn approvals_go_through_approval_and_certificates_through_status_once() {
    let s = CertificateSigningRequestStrategy;
    let old = csr(
        &pem_request(),
        json!(["client auth"]),
        KUBE_APISERVER_CLIENT,
    );
    let mut approved = old.clone();
    approved["status"] = json!({"conditions": [{"type": "Approved", "status": "True"}]});
    assert_eq!(
        messages(s.validate_status_update(&approved, &old)),
        ["status.conditions: Forbidden: updates may not add a condition of type \"Approved\""]
    );
    assert!(messages(s.validate_approval_update(&approved, &old)).is_empty());
    let mut both = approved.clone();
    both["status"]["conditions"]
        .as_array_mut()
        .expect("list")
        .push(json!({"type": "Denied", "status": "True"}));
    assert_eq!(
        messages(s.validate_approval_update(&both, &approved)),
        ["status.conditions: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"]
    );
    let mut removed = approved.clone();
    removed["status"] = json!({});
    assert_eq!(
        messages(s.validate_approval_update(&removed, &approved)),
        ["status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""]
    );
    let mut issued = approved.clone();
    issued["status"]["certificate"] =
        json!(base64::engine::general_purpose::STANDARD.encode("junk"));
    assert_eq!(
        messages(s.validate_approval_update(&issued, &approved)),
        [
            "status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block",
            "status.certificate: Forbidden: updates may not set certificate content",
        ]
    );
    // Through status, with a status condition of the wrong value.
    let mut failed = approved.clone();
    failed["status"]["conditions"]
        .as_array_mut()
        .expect("list")
        .push(json!({"type": "Failed", "status": "False"}));
    assert_eq!(
        messages(s.validate_status_update(&failed, &approved)),
        ["status.conditions[1].status: Unsupported value: \"False\": supported values: \"True\""]
    );
}

#[test]
fn status_writes_keep_the_approval_and_time_the_conditions() {
    let s = CertificateSigningRequestStrategy;
    let old = json!({"status": {"conditions": [
        {"type": "Approved", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    ]}});
    let mut new = json!({"status": {"conditions": [{"type": "Failed"}]}});
    s.prepare_for_subresource_update(Subresource::Status, &mut new, &old);
    let types: Vec<&str> = conditions(&new).into_iter().map(condition_type).collect();
    assert_eq!(types, ["Failed", "Approved"]);
    assert_eq!(new["status"]["conditions"][0]["status"], "True");
    assert!(new["status"]["conditions"][0]["lastUpdateTime"].is_string());
    // Approval keeps an unchanged condition's transition time.
    let mut again = old.clone();
    again["status"]["conditions"][0]
        .as_object_mut()
        .expect("condition")
        .remove("lastTransitionTime");
    s.prepare_for_subresource_update(Subresource::Approval, &mut again, &old);
    assert_eq!(
        again["status"]["conditions"][0]["lastTransitionTime"],
        "2026-01-01T00:00:00Z"
    );
}
