use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;

use x509_parser::prelude::{FromDer, X509Certificate};

use super::certs::{self, Ensured, Pki, San};
use crate::authn::{self, UserInfo};

fn sans(extra: &[&str]) -> Vec<San> {
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    certs::serving_sans(
        Some("Node-A"),
        &["192.0.2.7".parse().expect("ip"), IpAddr::from([0, 0, 0, 0])],
        "10.96.0.1".parse().expect("ip"),
        &extra,
    )
    .expect("sans")
}

fn der(path: &std::path::Path) -> Vec<u8> {
    certs::first_der(&certs::read(path).expect("read"), path).expect("pem")
}

#[test]
fn the_serving_certificate_names_the_server() {
    let wanted = sans(&["api.example.com", "203.0.113.9"]);
    let dir = tempfile::tempdir().expect("tmp");
    let pki = Pki::in_dir(dir.path().join("pki"));
    certs::ensure(&pki, Some(&wanted)).expect("ensure");
    let der = der(&pki.serving_cert());
    let (_, cert) = X509Certificate::from_der(&der).expect("x509");
    let names = certs::names_of(&cert);
    for name in [
        "localhost",
        "node-a",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
        "api.example.com",
    ] {
        assert!(names.contains(&San::Dns(name.into())), "{name}: {names:?}");
    }
    for ip in ["127.0.0.1", "::1", "10.96.0.1", "192.0.2.7", "203.0.113.9"] {
        assert!(
            names.contains(&San::Ip(ip.parse().expect("ip"))),
            "{ip}: {names:?}"
        );
    }
    assert!(!names.contains(&San::Ip(IpAddr::from([0, 0, 0, 0]))));
    assert!(certs::serving_sans(
        None,
        &[],
        "10.96.0.1".parse().expect("ip"),
        &["bad name!".into()]
    )
    .is_err());
}

#[test]
fn generated_once_and_reused() {
    let dir = tempfile::tempdir().expect("tmp");
    let pki = Pki::in_dir(dir.path().join("pki"));
    let first = certs::ensure(&pki, Some(&sans(&[]))).expect("ensure");
    assert_eq!(
        first,
        Ensured {
            ca_created: true,
            serving_issued: true,
            admin_issued: true
        }
    );
    for key in [pki.ca_key(), pki.serving_key(), pki.admin_key()] {
        let mode = std::fs::metadata(&key).expect("key").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", key.display());
    }
    let files = |pki: &Pki| {
        [
            pki.ca_cert(),
            pki.ca_key(),
            pki.serving_cert(),
            pki.admin_cert(),
        ]
        .map(|p| std::fs::read(p).expect("read"))
    };
    let before = files(&pki);
    // A restart with the same names changes nothing.
    assert_eq!(
        certs::ensure(&pki, Some(&sans(&[]))).expect("again"),
        Ensured::default()
    );
    assert_eq!(files(&pki), before);
    // A new --tls-san re-issues the serving certificate only, from the same CA.
    let again = certs::ensure(&pki, Some(&sans(&["new.example"]))).expect("new san");
    assert_eq!(
        again,
        Ensured {
            serving_issued: true,
            ..Default::default()
        }
    );
    let after = files(&pki);
    assert_eq!(after[0], before[0]);
    assert_eq!(after[1], before[1]);
    assert_ne!(after[2], before[2]);
    assert_eq!(after[3], before[3]);
    let (_, ca) = X509Certificate::from_der(&der(&pki.ca_cert()))
        .map(|(r, c)| (r.to_vec(), c.public_key().raw.to_vec()))
        .expect("ca");
    let serving = der(&pki.serving_cert());
    let (_, serving) = X509Certificate::from_der(&serving).expect("serving");
    let (_, ca_spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(&ca).expect("spki");
    serving
        .verify_signature(Some(&ca_spki))
        .expect("signed by the kept CA");
}

#[test]
fn half_a_ca_is_not_replaced() {
    let dir = tempfile::tempdir().expect("tmp");
    let pki = Pki::in_dir(dir.path().join("pki"));
    certs::ensure(&pki, None).expect("ensure");
    std::fs::remove_file(pki.ca_key()).expect("rm");
    let ca = std::fs::read(pki.ca_cert()).expect("ca");
    assert!(certs::ensure(&pki, None).is_err());
    assert_eq!(std::fs::read(pki.ca_cert()).expect("ca"), ca);
}

#[test]
fn a_leaf_of_another_ca_is_issued_again() {
    let dir = tempfile::tempdir().expect("tmp");
    let pki = Pki::in_dir(dir.path().join("pki"));
    certs::ensure(&pki, None).expect("ensure");
    let other = Pki::in_dir(dir.path().join("other"));
    certs::ensure(&other, None).expect("other");
    std::fs::copy(other.admin_cert(), pki.admin_cert()).expect("copy");
    let again = certs::ensure(&pki, None).expect("again");
    assert!(again.admin_issued && !again.ca_created);
}

#[test]
fn the_user_of_a_client_certificate() {
    let dir = tempfile::tempdir().expect("tmp");
    let pki = Pki::in_dir(dir.path().join("pki"));
    certs::ensure(&pki, None).expect("ensure");
    let der = der(&pki.admin_cert());
    let user = authn::from_certificate(&der).expect("a user");
    assert_eq!(user.name, "system:admin");
    assert_eq!(user.groups, vec!["system:masters", "system:authenticated"]);
    assert_eq!(user.uid, "");
    let id = &user.extra[authn::CREDENTIAL_ID];
    assert_eq!(id.len(), 1);
    assert!(
        id[0].starts_with("X509SHA256=") && id[0].len() == 11 + 64,
        "{id:?}"
    );
    assert_eq!(
        authn::user_from_peer_certificates(Some(std::slice::from_ref(&der))),
        user
    );
    // No certificate, garbage, or no CN: anonymous.
    assert_eq!(
        authn::user_from_peer_certificates(None::<&[Vec<u8>]>),
        UserInfo::anonymous()
    );
    assert!(authn::from_certificate(b"garbage").is_none());
    assert!(
        authn::user_from_peer_certificates(Some(&[b"\x30\x03\x02\x01\x00".to_vec()]))
            .is_anonymous()
    );
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "team");
    let no_cn = params.self_signed(&key).expect("cert");
    assert!(authn::from_certificate(no_cn.der()).is_none());
    assert_eq!(
        UserInfo::anonymous().groups,
        vec!["system:unauthenticated".to_string()]
    );
}

#[test]
fn the_server_config_takes_the_generated_files() {
    let dir = tempfile::tempdir().expect("tmp");
    let pki = Pki::in_dir(dir.path().join("pki"));
    certs::ensure(&pki, Some(&sans(&[]))).expect("ensure");
    let config =
        super::serving::server_config(&pki.serving_cert(), &pki.serving_key(), &pki.ca_cert())
            .expect("config");
    assert_eq!(config.alpn_protocols[0], b"h2");
    // A key that is not the certificate's is refused with the file named.
    let err = super::serving::server_config(&pki.serving_cert(), &pki.admin_key(), &pki.ca_cert())
        .expect_err("mismatch");
    assert!(err.to_string().contains("apiserver.crt"), "{err}");
    let err = super::serving::server_config(&pki.serving_cert(), &pki.serving_key(), &pki.ca_key())
        .expect_err("not a CA");
    assert!(err.to_string().contains("ca.key"), "{err}");
}
