//! Encryption at rest (--encryption-provider-config) on both backends: secrets are stored as
//! upstream's ciphertext (read straight from etcd with etcd-client, or from the embedded
//! store's file), kubectl and the watch cache see plaintext, unlisted resources stay plain;
//! key rotation by restart and `kubectl replace` moves every secret to the new key while old
//! ones keep reading; data written before encryption reads while identity is listed; a value
//! no configured key opens is a 500 naming its key; a bad file refuses to start.

mod support;

use std::path::{Path, PathBuf};

use base64::Engine;
use support::{start_embedded_with, start_on_etcd_with, Kubectl, Server};

/// base64 of 32 random-looking bytes each (AES-256 / secretbox keys) and of 16 (AES-128).
const KEY1: &str = "c2VjcmV0IGlzIHNlY3VyZSwgc2VjcmV0IGlzIHNhZmU=";
const KEY2: &str = "YW5vdGhlciBrZXksIGFub3RoZXIgZGF5LCBmaW5lISE=";
const KEY3: &str = "dGhpcmQga2V5LCBhZXMhIQ==";

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// An EncryptionConfiguration for secrets with these providers (YAML list items).
fn secrets_config(providers: &[String]) -> String {
    let mut out = String::from(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources:\n      - secrets\n    providers:\n",
    );
    for p in providers {
        out.push_str(&format!("      - {p}\n"));
    }
    out
}

fn provider(kind: &str, name: &str, secret: &str) -> String {
    format!("{kind}: {{keys: [{{name: {name}, secret: \"{secret}\"}}]}}")
}

fn identity() -> String {
    "identity: {}".into()
}

/// The config file, rewritten between restarts as an operator would.
struct ConfigFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl ConfigFile {
    fn new(content: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("encryption.yaml");
        std::fs::write(&path, content).expect("write config");
        Self { _dir: dir, path }
    }

    fn set(&self, content: &str) {
        std::fs::write(&self.path, content).expect("write config");
    }

    fn flag(&self) -> String {
        format!("--encryption-provider-config={}", self.path.display())
    }
}

/// The stored bytes of `keys` as the backend holds them, read around the server: from etcd
/// with etcd-client, or through the embedded store's backend API on its file (which the server
/// must have let go of: it is stopped first, on both backends alike).
fn stored<const N: usize>(s: &mut Server, keys: [&str; N]) -> [Vec<u8>; N] {
    s.terminate();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let values: Vec<Vec<u8>> = match &s.etcd {
        Some(etcd) => rt.block_on(async {
            let mut client = etcd_client::Client::connect([etcd.endpoint()], None)
                .await
                .expect("connect to etcd");
            let mut out = Vec::new();
            for key in keys {
                let resp = client.get(key, None).await.expect("etcd get");
                let kv = resp
                    .kvs()
                    .first()
                    .unwrap_or_else(|| panic!("{key} in etcd"));
                out.push(kv.value().to_vec());
            }
            out
        }),
        None => rt.block_on(async {
            let backend = storage::backend::open(&[], &s.data_dir())
                .await
                .expect("open the embedded store");
            let mut out = Vec::new();
            for key in keys {
                let resp = backend
                    .range(storage::backend::RangeRequest {
                        range: Some(storage::backend::KeyRange::key(key)),
                        ..Default::default()
                    })
                    .await
                    .expect("range");
                let kv = resp.kvs.first().unwrap_or_else(|| panic!("{key} stored"));
                out.push(kv.value.to_vec());
            }
            out
        }),
    };
    drop(rt);
    if s.etcd.is_none() {
        released(&s.data_dir().join("store.redb"));
    }
    values
        .try_into()
        .unwrap_or_else(|_| panic!("one value per key"))
}

/// Waits until the embedded store's file is free again: the backend's threads let go of it a
/// moment after it is dropped, and the restarted server must be able to open it. A bare redb
/// open lets go the moment it is dropped.
fn released(file: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while redb::Database::open(file).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "{} still locked",
            file.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Every file under the embedded store's data dir, as bytes, with its path.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read data dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, bytes));
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

fn starts(value: &[u8], prefix: &str) -> bool {
    value.starts_with(prefix.as_bytes())
}

fn shown(value: &[u8]) -> String {
    String::from_utf8_lossy(&value[..value.len().min(80)]).into_owned()
}

/// The secret's password as kubectl shows it.
fn password(s: &Server, name: &str) -> String {
    let data = s.kubectl(&["get", "secret", name, "-o", "jsonpath={.data.password}"]);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .expect("base64 data");
    String::from_utf8(bytes).expect("utf-8")
}

fn restart(s: &mut Server) {
    s.crash_and_restart();
}

fn encryption_at_rest(start: fn(&[&str]) -> Server) {
    // Before encryption: the only provider is identity.
    let config = ConfigFile::new(&secrets_config(&[identity()]));
    let flag = config.flag();
    let mut s = start(&[&flag]);
    s.kubectl(&[
        "create",
        "secret",
        "generic",
        "early",
        "--from-literal=password=early-plaintext-value",
    ]);

    // Encryption on, aesgcm key1 writing; identity last keeps the early secret readable.
    config.set(&secrets_config(&[
        provider("aesgcm", "key1", KEY1),
        identity(),
    ]));
    restart(&mut s);
    s.kubectl(&[
        "create",
        "secret",
        "generic",
        "s1",
        "--from-literal=password=s1-plaintext-value",
    ]);
    s.kubectl(&[
        "create",
        "configmap",
        "plain",
        "--from-literal=k=cm-plaintext-value",
    ]);
    assert_eq!(password(&s, "s1"), "s1-plaintext-value");
    assert_eq!(password(&s, "early"), "early-plaintext-value");
    // The watch cache serves resourceVersion=0 lists: plaintext there too.
    let cached = s.get("/api/v1/namespaces/default/secrets?resourceVersion=0");
    assert_eq!(cached.status, 200, "{}", cached.body);
    assert!(
        cached.body.contains(&b64("s1-plaintext-value")),
        "{}",
        cached.body
    );

    let [secret, early, configmap] = stored(
        &mut s,
        [
            "/registry/secrets/default/s1",
            "/registry/secrets/default/early",
            "/registry/configmaps/default/plain",
        ],
    );
    assert!(
        starts(&secret, "k8s:enc:aesgcm:v1:key1:"),
        "{}",
        shown(&secret)
    );
    assert!(!contains(&secret, &b64("s1-plaintext-value")));
    assert!(!contains(&secret, "\"kind\""));
    assert!(starts(&early, "{"), "{}", shown(&early));
    assert!(starts(&configmap, "{"), "{}", shown(&configmap));
    assert!(contains(&configmap, "cm-plaintext-value"));
    if s.etcd.is_none() {
        let files = files_under(&s.data_dir());
        for (path, bytes) in &files {
            for plain in ["s1-plaintext-value", &b64("s1-plaintext-value")] {
                assert!(!contains(bytes, plain), "{plain} in {}", path.display());
            }
        }
        assert!(files
            .iter()
            .any(|(_, b)| contains(b, "k8s:enc:aesgcm:v1:key1:")));
    }

    // Rotation: aescbc key2 now writes, key1 and identity still read.
    config.set(&secrets_config(&[
        provider("aescbc", "key2", KEY2),
        provider("aesgcm", "key1", KEY1),
        identity(),
    ]));
    restart(&mut s);
    assert_eq!(password(&s, "s1"), "s1-plaintext-value");
    assert_eq!(password(&s, "early"), "early-plaintext-value");
    let all = s.kubectl(&["get", "secrets", "-A", "-o", "json"]);
    s.with_manifest("replace", &all);
    let [secret, early] = stored(
        &mut s,
        [
            "/registry/secrets/default/s1",
            "/registry/secrets/default/early",
        ],
    );
    assert!(
        starts(&secret, "k8s:enc:aescbc:v1:key2:"),
        "{}",
        shown(&secret)
    );
    assert!(
        starts(&early, "k8s:enc:aescbc:v1:key2:"),
        "{}",
        shown(&early)
    );

    // Every secret moved: key2 alone reads them all.
    config.set(&secrets_config(&[provider("aescbc", "key2", KEY2)]));
    restart(&mut s);
    assert_eq!(password(&s, "s1"), "s1-plaintext-value");
    assert_eq!(password(&s, "early"), "early-plaintext-value");
    s.kubectl(&["get", "secrets", "-A"]);

    // A key no provider has: the read is a 500 naming the storage key, and the server stays up.
    config.set(&secrets_config(&[provider("aesgcm", "key3", KEY3)]));
    restart(&mut s);
    let failed = s.get("/api/v1/namespaces/default/secrets/s1");
    assert_eq!(failed.status, 500, "{}", failed.body);
    let status = failed.json();
    assert_eq!(status["reason"], "InternalError", "{status}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(r#"unable to transform key "/registry/secrets/default/s1""#),
        "{message}"
    );
    assert!(message.contains("no matching prefix found"), "{message}");
    assert_eq!(
        s.json(&["get", "configmap", "plain"])["data"]["k"],
        "cm-plaintext-value"
    );
}

#[test]
fn secrets_are_encrypted_at_rest_and_rotate_on_embedded() {
    encryption_at_rest(start_embedded_with);
}

#[test]
fn secrets_are_encrypted_at_rest_and_rotate_on_etcd() {
    encryption_at_rest(start_on_etcd_with);
}

#[test]
fn secretbox_round_trip() {
    let config = ConfigFile::new(&secrets_config(&[provider("secretbox", "box", KEY1)]));
    let flag = config.flag();
    let mut s = start_embedded_with(&[&flag]);
    s.kubectl(&[
        "create",
        "secret",
        "generic",
        "boxed",
        "--from-literal=password=boxed-plaintext-value",
    ]);
    assert_eq!(password(&s, "boxed"), "boxed-plaintext-value");
    // Updates write through the provider too, and watchers see plaintext.
    s.kubectl(&["label", "secret", "boxed", "tier=gold"]);
    let listed = s.json(&["get", "secrets", "-l", "tier=gold"]);
    assert_eq!(listed["items"][0]["metadata"]["name"], "boxed", "{listed}");
    let [secret] = stored(&mut s, ["/registry/secrets/default/boxed"]);
    assert!(
        starts(&secret, "k8s:enc:secretbox:v1:box:"),
        "{}",
        shown(&secret)
    );
    assert!(!contains(&secret, &b64("boxed-plaintext-value")));
    assert!(!contains(&secret, "tier"));
    restart(&mut s);
    assert_eq!(password(&s, "boxed"), "boxed-plaintext-value");
}

#[test]
fn an_invalid_configuration_refuses_to_start() {
    let config = ConfigFile::new(&secrets_config(&[provider("aesgcm", "key1", "c2hvcnQ=")]));
    let dir = tempfile::tempdir().expect("temp dir");
    let said = support::refused_start(dir.path(), &[&config.flag()]);
    assert!(
        said.contains(r#"resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 5, expected one of [16 24 32]"#),
        "{said}"
    );
    config.set(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources: []\n",
    );
    let said = support::refused_start(dir.path(), &[&config.flag()]);
    assert!(
        said.contains("resources: Required value: at least one resources is required"),
        "{said}"
    );
    let missing = format!(
        "--encryption-provider-config={}",
        dir.path().join("none.yaml").display()
    );
    let said = support::refused_start(dir.path(), &[&missing]);
    assert!(
        said.contains("error opening encryption provider configuration file"),
        "{said}"
    );
}
