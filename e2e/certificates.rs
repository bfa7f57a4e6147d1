//! certificates.k8s.io with the real kubectl on both backends: a user's key and request, the
//! request shown as upstream shows it, `kubectl certificate approve` and the signer issuing a
//! certificate that then authenticates its holder; denial; the admission checks (no
//! system:masters certificates from kube-apiserver-client, approving takes `approve` on the
//! signer); a kubelet's client request approved by the approver controller.

mod support;

use std::time::Duration;

use base64::Engine;
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
use serde_json::Value;
use support::{start, start_on_etcd, Kubectl, Server};
use test_support::wait_until;

#[test]
fn certificate_requests_with_kubectl() {
    certificate_requests(start());
}

#[test]
fn certificate_requests_with_kubectl_on_etcd() {
    certificate_requests(start_on_etcd());
}

/// A fresh key and a PEM request for CN `user`, O `groups`.
fn request(user: &str, groups: &[&str]) -> (KeyPair, String) {
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    for group in groups {
        name.push(DnType::OrganizationName, *group);
    }
    name.push(DnType::CommonName, user);
    params.distinguished_name = name;
    let csr = params.serialize_request(&key).expect("request");
    (key, csr.pem().expect("pem"))
}

fn manifest(name: &str, pem: &str, signer: &str, usages: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(pem);
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: {name}\nspec:\n  request: {encoded}\n  signerName: {signer}\n  expirationSeconds: 86400\n  usages: {usages}\n"
    )
}

const CLIENT: &str = "kubernetes.io/kube-apiserver-client";

/// The CONDITION column of `kubectl get csr <name>`.
fn condition(s: &Server, name: &str) -> String {
    let out = s.kubectl(&["get", "csr", name, "--no-headers"]);
    out.split_whitespace()
        .last()
        .unwrap_or_default()
        .to_string()
}

fn failure(out: &std::process::Output) -> String {
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).trim().to_string()
}

fn certificate_requests(s: Server) {
    // Jane's request, made by the admin.
    let (key, pem) = request("jane", &["devs"]);
    s.with_manifest("create", &manifest("jane", &pem, CLIENT, "[client auth]"));
    let header = s.kubectl(&["get", "csr", "jane"]);
    let mut lines = header.lines();
    let columns: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        columns,
        [
            "NAME",
            "AGE",
            "SIGNERNAME",
            "REQUESTOR",
            "REQUESTEDDURATION",
            "CONDITION"
        ]
    );
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row[0], "jane");
    assert_eq!(&row[2..], [CLIENT, "system:admin", "24h", "Pending"]);
    let stored = s.json(&["get", "csr", "jane", "-o", "json"]);
    assert_eq!(
        stored["spec"]["groups"],
        serde_json::json!(["system:masters", "system:authenticated"])
    );
    assert_eq!(stored["status"], serde_json::json!({}));

    // Approved, then issued by the signer with the server's CA.
    assert_eq!(
        s.kubectl(&["certificate", "approve", "jane"]).trim(),
        "certificatesigningrequest.certificates.k8s.io/jane approved"
    );
    wait_until("the certificate issued", Duration::from_secs(20), || {
        condition(&s, "jane") == "Approved,Issued"
    });
    let approved = s.json(&["get", "csr", "jane", "-o", "json"]);
    let approval = &approved["status"]["conditions"][0];
    assert_eq!(approval["type"], "Approved");
    assert_eq!(approval["reason"], "KubectlApprove");
    assert!(approval["lastTransitionTime"].is_string(), "{approval}");
    let cert = base64::engine::general_purpose::STANDARD
        .decode(
            approved["status"]["certificate"]
                .as_str()
                .unwrap_or_default(),
        )
        .expect("base64 certificate");

    // The certificate authenticates Jane, in her groups.
    let dir = s.dir.path();
    std::fs::write(dir.join("jane.crt"), &cert).expect("write cert");
    std::fs::write(dir.join("jane.key"), key.serialize_pem()).expect("write key");
    let crt = dir.join("jane.crt").display().to_string();
    let key_path = dir.join("jane.key").display().to_string();
    s.kubectl(&[
        "config",
        "set-credentials",
        "jane",
        &format!("--client-certificate={crt}"),
        &format!("--client-key={key_path}"),
    ]);
    let whoami = s.json(&["--user", "jane", "auth", "whoami", "-o", "json"]);
    assert_eq!(whoami["status"]["userInfo"]["username"], "jane", "{whoami}");
    assert_eq!(
        whoami["status"]["userInfo"]["groups"],
        serde_json::json!(["devs", "system:authenticated"])
    );
    let refused = failure(&s.kubectl_raw(&["--user", "jane", "get", "pods"]));
    assert!(
        refused.contains("User \"jane\" cannot list resource \"pods\""),
        "{refused}"
    );

    // Updating the approval takes `approve` on the signer, beyond RBAC on the subresource.
    s.kubectl(&[
        "create",
        "clusterrole",
        "csr-updater",
        "--verb=get,list,update",
        "--resource=certificatesigningrequests,certificatesigningrequests/approval",
    ]);
    s.kubectl(&[
        "create",
        "clusterrolebinding",
        "jane-csr",
        "--clusterrole=csr-updater",
        "--user=jane",
    ]);
    let (_, other) = request("joe", &[]);
    s.with_manifest(
        "create",
        &manifest("joe", &other, CLIENT, "[client auth, digital signature]"),
    );
    let refused = failure(&s.kubectl_raw(&["--user", "jane", "certificate", "approve", "joe"]));
    assert!(
        refused.contains(&format!(
            "certificatesigningrequests.certificates.k8s.io \"joe\" is forbidden: user not permitted to approve requests with signerName \"{CLIENT}\""
        )),
        "{refused}"
    );
    // Denied by the admin: never issued.
    s.kubectl(&["certificate", "deny", "joe"]);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(condition(&s, "joe"), "Denied");

    // No system:masters certificates from the client signer.
    let (_, masters) = request("mallory", &["system:masters"]);
    let refused = failure(&s.manifest_output(
        &["create", "-f", "-"],
        &manifest("mallory", &masters, CLIENT, "[client auth]"),
    ));
    assert!(
        refused.ends_with(&format!(
            "is forbidden: use of {CLIENT} signer with system:masters group is not allowed"
        )),
        "{refused}"
    );
    // Validation in upstream's words.
    let refused = failure(&s.manifest_output(
        &["create", "-f", "-"],
        &manifest("bad", "not a request", "example", "[flying]"),
    ));
    for part in [
        "spec.request: Invalid value: []byte{0x6e, 0x6f, 0x74",
        "PEM block type must be CERTIFICATE REQUEST",
        "spec.usages[0]: Unsupported value: \"flying\"",
        "spec.signerName: Invalid value: \"example\": must be a fully qualified domain and path of the form 'example.com/signer-name'",
    ] {
        assert!(refused.contains(part), "{part} in {refused}");
    }

    // A kubelet's client request is approved by the approver (the admin may create
    // nodeclient requests) and issued.
    let (_, node) = request("system:node:worker-1", &["system:nodes"]);
    s.with_manifest(
        "create",
        &manifest(
            "node-worker-1",
            &node,
            "kubernetes.io/kube-apiserver-client-kubelet",
            "[digital signature, client auth]",
        ),
    );
    wait_until(
        "the kubelet certificate issued",
        Duration::from_secs(20),
        || condition(&s, "node-worker-1") == "Approved,Issued",
    );
    let node_csr: Value = s.json(&["get", "csr", "node-worker-1", "-o", "json"]);
    assert_eq!(
        node_csr["status"]["conditions"][0]["reason"],
        "AutoApproved"
    );
    assert_eq!(
        node_csr["status"]["conditions"][0]["message"],
        "Auto approving kubelet client certificate after SubjectAccessReview."
    );
}
