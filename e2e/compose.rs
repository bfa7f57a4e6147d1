//! The repository's compose.yaml and Dockerfile in a real Docker engine: etcd and the server
//! in containers on the compose network, the server published on 127.0.0.1 only, and the
//! admin kubeconfig it generates copied out and used by the real kubectl over verified TLS.
//!
//! No image registry is needed: tools/docker/local-images.sh builds a Debian bookworm base
//! (debootstrap, kept once built), etcd from Debian's packages, the Dockerfile's `runtime`
//! stage and the server image from this test run's binary; compose.yaml runs them as it is,
//! given only its environment variables. `.ci/run` installs and starts the engine, so in CI
//! (`CI` set) a missing one fails the test; elsewhere the test says why it cannot run and
//! passes. `COMPOSE` picks the compose command (default: `docker-compose`, else
//! `docker compose`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use test_support::{free_port, wait_until};

const PREFIX: &str = "apiserver-rs-local";
const HEALTHY_WITHIN: Duration = Duration::from_secs(120);
const CONFIGMAP: &str = "compose-e2e";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn output(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("run {command:?}: {e}"))
}

/// Runs the command; its stdout, failing the test with its output when it fails.
fn ok(command: &mut Command) -> String {
    let out = output(command);
    assert!(
        out.status.success(),
        "{command:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn docker(args: &[&str]) -> String {
    ok(Command::new("docker").args(args))
}

fn succeeds(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The compose command: `COMPOSE` (words), else docker-compose, else `docker compose`.
fn compose_command() -> Option<Vec<String>> {
    let chosen: Vec<String> = std::env::var("COMPOSE")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    if !chosen.is_empty() {
        return Some(chosen);
    }
    if succeeds("docker-compose", &["version"]) {
        return Some(vec!["docker-compose".into()]);
    }
    succeeds("docker", &["compose", "version"]).then(|| vec!["docker".into(), "compose".into()])
}

/// What this machine lacks to run the test, if anything.
fn missing() -> Option<String> {
    if !succeeds("docker", &["info"]) {
        return Some("no Docker engine answers `docker info` (.ci/run installs docker.io and starts dockerd)".into());
    }
    if compose_command().is_none() {
        return Some("neither docker-compose nor `docker compose` is installed".into());
    }
    let base = format!("{PREFIX}/debian:bookworm");
    if !succeeds("docker", &["image", "inspect", &base]) {
        if !succeeds("debootstrap", &["--version"]) {
            return Some(format!(
                "{base} is not built and debootstrap is not installed"
            ));
        }
        if !succeeds("sh", &["-c", "test \"$(id -u)\" = 0"]) {
            return Some(format!("{base} is not built and debootstrap needs root"));
        }
    }
    None
}

/// Whether the test can run here; panics when it cannot in CI.
fn can_run() -> bool {
    let Some(why) = missing() else { return true };
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
    assert!(!ci, "CI is set, and the compose test cannot run: {why}");
    eprintln!("SKIPPED: the compose test cannot run on this machine: {why}");
    false
}

/// A compose project of the repository's compose.yaml; taken down with its volumes, and its
/// server image removed, however the test ends (after printing its logs if it failed).
struct Stack {
    compose: Vec<String>,
    project: String,
    env: Vec<(String, String)>,
    apiserver_image: String,
}

impl Stack {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.compose[0]);
        command
            .args(&self.compose[1..])
            .arg("-f")
            .arg(repo().join("compose.yaml"))
            .args(["-p", &self.project])
            .args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    fn run(&self, args: &[&str]) -> String {
        ok(&mut self.command(args))
    }

    fn container(&self, service: &str) -> String {
        let id = self.run(&["ps", "-q", service]).trim().to_string();
        assert!(!id.is_empty(), "no container for {service}");
        id
    }

    fn health(&self, service: &str) -> String {
        let id = self.container(service);
        docker(&["inspect", "-f", "{{.State.Health.Status}}", &id])
            .trim()
            .to_string()
    }

    fn wait_healthy(&self) {
        wait_until("etcd and apiserver healthy", HEALTHY_WITHIN, || {
            let states = ["etcd", "apiserver"].map(|s| self.health(s));
            assert!(
                !states.iter().any(|s| s == "unhealthy"),
                "a container is unhealthy: {states:?}"
            );
            std::thread::sleep(Duration::from_millis(500));
            states.iter().all(|s| s == "healthy")
        });
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if std::thread::panicking() {
            if let Ok(out) = self.command(&["logs", "--no-color"]).output() {
                eprintln!("compose logs:\n{}", String::from_utf8_lossy(&out.stdout));
            }
        }
        let _ = self.command(&["down", "-v", "--remove-orphans"]).output();
        let _ = Command::new("docker")
            .args(["rmi", &self.apiserver_image])
            .output();
    }
}

/// kubectl with the kubeconfig copied out of the container, as a user runs it.
fn kubectl(kubeconfig: &Path, home: &Path, args: &[&str]) -> String {
    ok(Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home))
}

fn timed(phase: &str, start: &mut Instant) {
    eprintln!("{phase}: {:.1}s", start.elapsed().as_secs_f64());
    *start = Instant::now();
}

#[test]
fn compose_runs_etcd_and_the_server_with_tls_on_loopback() {
    if !can_run() {
        return;
    }
    let compose = compose_command().expect("checked by can_run");
    let mut clock = Instant::now();
    let tag = format!("e2e-{}", std::process::id());
    let apiserver_image = format!("{PREFIX}/apiserver:{tag}");
    let images = ok(Command::new(repo().join("tools/docker/local-images.sh"))
        .arg(env!("CARGO_BIN_EXE_apiserver"))
        .env("LOCAL_IMAGE_PREFIX", PREFIX)
        .env("APISERVER_IMAGE", &apiserver_image));
    timed("images built", &mut clock);
    let port = free_port();
    let mut env: Vec<(String, String)> = images
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert!(
        env.iter().any(|(k, _)| k == "ETCD_IMAGE")
            && env.iter().any(|(k, _)| k == "APISERVER_IMAGE"),
        "local-images.sh printed {images:?}"
    );
    env.push(("APISERVER_PORT".into(), port.to_string()));
    let stack = Stack {
        compose,
        project: format!("apiserver-rs-{tag}"),
        env,
        apiserver_image,
    };

    stack.run(&["up", "-d", "--no-build"]);
    stack.wait_healthy();
    timed("stack up and healthy", &mut clock);
    let apiserver = stack.container("apiserver");
    let etcd = stack.container("etcd");

    // The image runs the server as its own user, not root.
    let user = docker(&["inspect", "-f", "{{.Config.User}}", &apiserver]);
    assert_eq!(user.trim(), "apiserver");

    // Published on the host's loopback and nowhere else: the compose network's gateway is an
    // address of the host too, and the port is closed there.
    let published = docker(&["port", &apiserver, &format!("{port}/tcp")]);
    assert_eq!(
        published.lines().collect::<Vec<_>>(),
        [format!("127.0.0.1:{port}")],
        "published as {published:?}"
    );
    let gateway = docker(&[
        "inspect",
        "-f",
        "{{range .NetworkSettings.Networks}}{{.Gateway}} {{end}}",
        &apiserver,
    ]);
    for address in gateway.split_whitespace() {
        let addr = format!("{address}:{port}");
        let reached = std::net::TcpStream::connect_timeout(
            &addr.parse().expect("gateway address"),
            Duration::from_secs(2),
        );
        assert!(
            reached.is_err(),
            "the server answers on {addr}, not loopback only"
        );
    }

    // The kubeconfig the server wrote, copied out as the README says, works as it is: it names
    // the published port and verifies the server with the generated CA.
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    docker(&[
        "cp",
        &format!("{apiserver}:/var/lib/apiserver/data/kubeconfig"),
        &kubeconfig.to_string_lossy(),
    ]);
    let text = std::fs::read_to_string(&kubeconfig).expect("read kubeconfig");
    assert!(
        text.contains(&format!("server: https://127.0.0.1:{port}\n")),
        "{text}"
    );
    assert!(text.contains("certificate-authority-data:"), "{text}");
    assert!(!text.contains("insecure-skip-tls-verify"), "{text}");
    kubectl(
        &kubeconfig,
        dir.path(),
        &[
            "create",
            "configmap",
            CONFIGMAP,
            "--from-literal=written=by-kubectl",
        ],
    );
    let read = kubectl(
        &kubeconfig,
        dir.path(),
        &[
            "get",
            "configmap",
            CONFIGMAP,
            "-o",
            "jsonpath={.data.written}",
        ],
    );
    assert_eq!(read, "by-kubectl");

    // The server stores in the etcd container, which it reaches over the compose network.
    let key = format!("/registry/configmaps/default/{CONFIGMAP}");
    let stored = docker(&["exec", &etcd, "etcdctl", "get", &key, "--print-value-only"]);
    assert!(
        stored.contains("by-kubectl"),
        "etcd holds {stored:?} at {key}"
    );
    timed("checks", &mut clock);

    // New containers on the same volumes: the CA is kept, so the copied kubeconfig still
    // verifies the server and authenticates, and the data is still in etcd.
    stack.run(&["down"]);
    stack.run(&["up", "-d", "--no-build"]);
    stack.wait_healthy();
    let read = kubectl(
        &kubeconfig,
        dir.path(),
        &[
            "get",
            "configmap",
            CONFIGMAP,
            "-o",
            "jsonpath={.data.written}",
        ],
    );
    assert_eq!(read, "by-kubectl");
    timed("recreated", &mut clock);
}
