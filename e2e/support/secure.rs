//! Clients of the secure port as users other than the admin kubeconfig's: static token files,
//! kubectl with a bearer token, curl verifying the server's CA.

use std::path::PathBuf;
use std::process::{Command, Output};

use super::Server;

/// A temp dir holding a `--token-auth-file` of `lines`, and the file's path.
pub fn token_file(lines: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("tokens.csv");
    std::fs::write(&path, lines).expect("token file");
    (dir, path)
}

/// The server's CA certificate (the generated PKI's).
pub fn ca(s: &Server) -> String {
    s.data_dir().join("pki/ca.crt").display().to_string()
}

/// `path` on the secure port.
pub fn url(s: &Server, path: &str) -> String {
    format!("https://127.0.0.1:{}{path}", s.secure_port)
}

/// kubectl as the user of `token`: no kubeconfig but the server, its CA and the token (and a
/// HOME of its own, so no cache is shared between users).
pub fn kubectl_with_token(s: &Server, token: &str, args: &[&str]) -> Output {
    let safe: String = token
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(40)
        .collect();
    let home = s.dir.path().join(format!("home-{safe}"));
    std::fs::create_dir_all(&home).expect("home");
    let empty = home.join("kubeconfig");
    std::fs::write(&empty, "").expect("empty kubeconfig");
    Command::new("kubectl")
        .arg(format!("--token={token}"))
        .arg(format!("--server={}", url(s, "")))
        .arg(format!("--certificate-authority={}", ca(s)))
        .args(args)
        .env("KUBECONFIG", &empty)
        .env("HOME", &home)
        .output()
        .expect("run kubectl")
}

/// curl verifying the server, paths sent as written (`--path-as-is`), with `args` (the URL
/// among them): the body and the status code (0 when there was no answer).
pub fn curl_tls(s: &Server, args: &[&str]) -> (String, u16) {
    let out = Command::new("curl")
        .args([
            "-sS",
            "--path-as-is",
            "--max-time",
            "20",
            "--cacert",
            &ca(s),
        ])
        .args(["-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("run curl (is it installed?)");
    let all = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = all.rsplit_once('\n').unwrap_or(("", &all));
    (body.to_string(), code.trim().parse().unwrap_or(0))
}

/// [`curl_tls`] with the admin's client certificate.
pub fn curl_as_admin(s: &Server, args: &[&str]) -> (String, u16) {
    let pki = s.data_dir().join("pki");
    let cert = pki.join("admin.crt").display().to_string();
    let key = pki.join("admin.key").display().to_string();
    let mut all = vec!["--cert", &cert, "--key", &key];
    all.extend_from_slice(args);
    curl_tls(s, &all)
}
