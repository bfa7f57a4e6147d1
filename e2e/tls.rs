//! Secure serving: kubectl over the written kubeconfig verifies the server (no insecure flag)
//! and authenticates with the admin client certificate; curl verifies with the CA; a TLS
//! client without a certificate is answered (anonymous, no authorization yet); the CA is kept
//! across restarts; garbage, half handshakes and plain HTTP on the TLS port disturb nothing;
//! plain HTTP is refused on a non-loopback address.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Output};
use std::time::Duration;

use support::secure::url;
use support::{start, start_on_etcd, Kubectl, Server};

fn curl(args: &[&str]) -> Output {
    Command::new("curl")
        .args(["-sS", "--max-time", "20"])
        .args(args)
        .output()
        .expect("run curl (is it installed?)")
}

fn text(out: &Output) -> String {
    support::output_text(out)
}

fn pki(s: &Server, file: &str) -> String {
    s.data_dir().join("pki").join(file).display().to_string()
}

/// kubectl still answers: the server was not disturbed.
fn still_serves(s: &Server) {
    assert!(s
        .kubectl(&["get", "namespace", "default", "-o", "name"])
        .contains("default"));
}

fn secure_serving(s: &Server) {
    // The written kubeconfig: HTTPS on the secure port, the CA and the admin certificate.
    let config = std::fs::read_to_string(&s.kubeconfig).expect("kubeconfig");
    assert!(
        config.contains(&format!("server: https://127.0.0.1:{}", s.secure_port)),
        "{config}"
    );
    for field in [
        "certificate-authority-data:",
        "client-certificate-data:",
        "client-key-data:",
    ] {
        assert!(config.contains(field), "{field} in {config}");
    }
    assert!(!config.contains("insecure-skip-tls-verify"));

    // Every namespace holds the CA that verifies the server (the root CA publisher).
    let ca = std::fs::read_to_string(pki(s, "ca.crt")).expect("ca.crt");
    s.kubectl(&["create", "namespace", "trusting"]);
    for ns in ["default", "trusting"] {
        let mut published = serde_json::Value::Null;
        for _ in 0..100 {
            let out = s.kubectl_raw(&[
                "get",
                "configmap",
                "kube-root-ca.crt",
                "-n",
                ns,
                "-o",
                "json",
            ]);
            if out.status.success() {
                published = serde_json::from_slice(&out.stdout).expect("json");
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(
            published["data"]["ca.crt"],
            ca.as_str(),
            "kube-root-ca.crt in {ns}"
        );
    }

    // kubectl verifies the server and writes through it.
    s.kubectl(&["create", "configmap", "over-tls", "--from-literal=a=b"]);
    let got = s.json(&["get", "configmap", "over-tls"]);
    assert_eq!(got["data"]["a"], "b");
    let info = s.kubectl(&["cluster-info"]);
    assert!(
        info.contains(&format!("https://127.0.0.1:{}", s.secure_port)),
        "{info}"
    );

    // curl verifies with the CA; by the names of the serving certificate too.
    let out = curl(&["--cacert", &pki(s, "ca.crt"), &url(s, "/version")]);
    assert!(out.status.success(), "{}", text(&out));
    let version: serde_json::Value = serde_json::from_slice(&out.stdout).expect("version");
    assert_eq!(version["major"], "1");
    let out = curl(&[
        "--cacert",
        &pki(s, "ca.crt"),
        &format!("https://localhost:{}/readyz", s.secure_port),
    ]);
    assert_eq!(text(&out), "ok");
    // Without the CA, verification fails.
    assert!(!curl(&[&url(s, "/version")]).status.success());
    // With the admin client certificate.
    let out = curl(&[
        "--cacert",
        &pki(s, "ca.crt"),
        "--cert",
        &pki(s, "admin.crt"),
        "--key",
        &pki(s, "admin.key"),
        "-w",
        "\n%{http_code}",
        &url(s, "/api/v1/namespaces/default/configmaps/over-tls"),
    ]);
    assert!(text(&out).ends_with("\n200"), "{}", text(&out));
    // Without a client certificate: anonymous, which RBAC lets read the public-info paths
    // only.
    let out = curl(&[
        "-k",
        "-w",
        "\n%{http_code}",
        &url(s, "/api/v1/namespaces/default/configmaps/over-tls"),
    ]);
    let answer = text(&out);
    assert!(
        answer.ends_with("\n403")
            && answer.contains(r#"User \"system:anonymous\" cannot get resource \"configmaps\""#),
        "{answer}"
    );
    let out = curl(&["-k", "-w", "\n%{http_code}", &url(s, "/version")]);
    assert!(text(&out).ends_with("\n200"), "{}", text(&out));

    // Plain HTTP on the TLS port: 400, as Go's servers answer it.
    let out = curl(&[
        "-w",
        "\n%{http_code}",
        &format!("http://127.0.0.1:{}/version", s.secure_port),
    ]);
    let answer = text(&out);
    assert!(
        answer.contains("Client sent an HTTP request to an HTTPS server"),
        "{answer}"
    );
    assert!(answer.ends_with("\n400"), "{answer}");

    // Garbage, a handshake cut short, a connection closed at once, one left idle.
    let connect = || {
        let c = TcpStream::connect(("127.0.0.1", s.secure_port)).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(15)))
            .expect("timeout");
        c
    };
    let mut garbage = connect();
    garbage
        .write_all(b"\x16\x03\x01\x00\x10not a client hello at all")
        .expect("send");
    let mut rest = Vec::new();
    let _ = garbage.read_to_end(&mut rest);
    let mut binary = connect();
    binary.write_all(&[0u8, 1, 2, 3, 255, 254]).expect("send");
    let _ = binary.read_to_end(&mut rest);
    let mut half = connect();
    half.write_all(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        .expect("send");
    drop(half);
    drop(connect());
    let idle = connect();
    still_serves(s);
    drop(idle);

    // A client certificate of another CA is refused at the handshake; the server carries on.
    let other = tempfile::tempdir().expect("tmp");
    let foreign = apiserver::tls::certs::Pki::in_dir(other.path());
    apiserver::tls::certs::ensure(&foreign, None).expect("a foreign CA");
    let out = curl(&[
        "--cacert",
        &pki(s, "ca.crt"),
        "--cert",
        &foreign.admin_cert().display().to_string(),
        "--key",
        &foreign.admin_key().display().to_string(),
        &url(s, "/version"),
    ]);
    assert!(!out.status.success(), "{}", text(&out));
    still_serves(s);

    // The loopback HTTP port still serves the plain helpers.
    assert_eq!(s.get("/version").status, 200);
    // Handshake failures are logged at debug only (the tests log at info).
    assert_eq!(s.logged("handshake"), 0);
}

#[test]
fn secure_serving_embedded() {
    secure_serving(&start());
}

#[test]
fn secure_serving_on_etcd() {
    secure_serving(&start_on_etcd());
}

fn restart_keeps_the_ca(mut s: Server) {
    s.kubectl(&["create", "namespace", "before-restart"]);
    let ca = std::fs::read(pki(&s, "ca.crt")).expect("ca");
    let key = std::fs::read(pki(&s, "ca.key")).expect("ca key");
    let serving = std::fs::read(pki(&s, "apiserver.crt")).expect("serving");
    let old_config = s.dir.path().join("kubeconfig.before");
    std::fs::copy(&s.kubeconfig, &old_config).expect("copy kubeconfig");
    s.crash_and_restart();
    assert_eq!(std::fs::read(pki(&s, "ca.crt")).expect("ca"), ca);
    assert_eq!(std::fs::read(pki(&s, "ca.key")).expect("ca key"), key);
    assert_eq!(
        std::fs::read(pki(&s, "apiserver.crt")).expect("serving"),
        serving
    );
    // The kubeconfig written before the restart is still good.
    let out = s
        .command(&["get", "namespace", "before-restart", "-o", "name"])
        .env("KUBECONFIG", &old_config)
        .output()
        .expect("kubectl");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read(&s.kubeconfig).expect("kubeconfig"),
        std::fs::read(&old_config).expect("old kubeconfig")
    );
}

#[test]
fn restart_keeps_the_ca_embedded() {
    restart_keeps_the_ca(start());
}

#[test]
fn restart_keeps_the_ca_on_etcd() {
    restart_keeps_the_ca(start_on_etcd());
}

#[test]
fn plain_http_only_on_loopback() {
    let dir = tempfile::tempdir().expect("tmp");
    let port = test_support::free_port().to_string();
    let said = support::refused_start(dir.path(), &["--bind-address", "0.0.0.0", "--port", &port]);
    assert!(
        said.contains("--bind-address 0.0.0.0 is not a loopback address")
            && said.contains("--port 0"),
        "{said}"
    );

    // With the plain port off, the secure port may bind every address; the kubeconfig
    // reaches it through loopback.
    let s = support::start_embedded_with(&["--bind-address", "0.0.0.0", "--port", "0"]);
    let config = std::fs::read_to_string(&s.kubeconfig).expect("kubeconfig");
    assert!(
        config.contains(&format!("server: https://127.0.0.1:{}", s.secure_port)),
        "{config}"
    );
    still_serves(&s);
    assert_eq!(s.get("/version").status, 0, "no plain HTTP port");
}
