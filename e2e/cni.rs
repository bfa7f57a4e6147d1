//! Seed 001 with the real reference plugins (Debian's containernetworking-plugins): the real
//! binary runs inside a network namespace this test creates, with a bridge + host-local
//! conflist whose range is node-0's podCIDR, passed by the kubelet as the ipRanges capability. Two pods run in network namespaces of their own, each with
//! eth0 carrying its podIP and a veth on the server's side; one pings the other; after
//! `kubectl delete pod` the namespaces and veths are gone. Every address and packet stays in
//! namespaces the test made. Needs root and the plugins: without them the test says so and
//! passes.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use support::{start_wrapped, Kubectl, Server};
use test_support::wait_until;

const PLUGINS: &str = "/usr/lib/cni";
const NETNS_DIR: &str = "/var/run/netns";
const LONG: Duration = Duration::from_secs(60);

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {program}: {e}"))
}

fn ok(program: &str, args: &[&str]) -> String {
    let out = run(program, args);
    assert!(
        out.status.success(),
        "{program} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Why this machine cannot run the test, if it cannot.
fn missing() -> Option<String> {
    let uid = run("id", &["-u"]);
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("not root: network namespaces need it".into());
    }
    for plugin in ["bridge", "host-local", "loopback"] {
        if !Path::new(PLUGINS).join(plugin).is_file() {
            return Some(format!(
                "{PLUGINS}/{plugin} missing (containernetworking-plugins)"
            ));
        }
    }
    for tool in ["ip", "nsenter", "ping"] {
        if Command::new(tool).arg("-V").output().is_err() {
            return Some(format!("{tool} missing"));
        }
    }
    None
}

/// The test's network namespace, deleted however the test ends, with the pod namespaces'
/// pin files the server may leave behind when it is killed.
struct TestNetns {
    name: String,
    pod_netns: Vec<String>,
}

impl Drop for TestNetns {
    fn drop(&mut self) {
        for ns in &self.pod_netns {
            let _ = std::fs::remove_file(Path::new(NETNS_DIR).join(ns));
        }
        let _ = run("ip", &["netns", "del", &self.name]);
    }
}

/// The server's pid: the commands below enter its mount namespace, where the pods' network
/// namespaces are mounted (`ip netns exec` gave the server a mount namespace of its own).
fn in_server(s: &Server, args: &[&str]) -> Output {
    let pid = s.child.id().to_string();
    let mut all = vec!["-t", pid.as_str(), "-m", "--"];
    all.extend(args);
    run("nsenter", &all)
}

fn pod_netns_names(s: &Server) -> Vec<String> {
    let out = in_server(s, &["ls", NETNS_DIR]);
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter(|n| n.starts_with("cni-"))
        .map(str::to_string)
        .collect()
}

fn veths(netns: &str) -> usize {
    ok(
        "ip",
        &[
            "netns", "exec", netns, "ip", "-o", "link", "show", "type", "veth",
        ],
    )
    .lines()
    .count()
}

#[test]
fn pods_run_in_network_namespaces_of_the_reference_plugins() {
    if let Some(why) = missing() {
        eprintln!("skipped: {why}");
        return;
    }
    let pid = std::process::id();
    let mut guard = TestNetns {
        name: format!("e2e-cni-{pid}"),
        pod_netns: Vec::new(),
    };
    let added = run("ip", &["netns", "add", &guard.name]);
    if !added.status.success() {
        eprintln!(
            "skipped: cannot create a network namespace: {}",
            String::from_utf8_lossy(&added.stderr).trim()
        );
        return;
    }
    ok(
        "ip",
        &[
            "netns",
            "exec",
            &guard.name,
            "ip",
            "link",
            "set",
            "lo",
            "up",
        ],
    );

    let conf = tempfile::tempdir().expect("conf dir");
    let bridge = format!("e2ebr{}", pid % 100_000);
    let conflist = serde_json::json!({
        "cniVersion": "1.0.0",
        "name": format!("e2e-pods-{pid}"),
        "plugins": [{
            "type": "bridge", "bridge": bridge, "isGateway": true, "ipMasq": false,
            // No ranges: the kubelet passes node-0's podCIDR (10.244.0.0/24) as ipRanges.
            "capabilities": {"ipRanges": true},
            "ipam": {"type": "host-local",
                     "dataDir": conf.path().join("ipam").display().to_string()}
        }]
    });
    std::fs::write(conf.path().join("10-pods.conflist"), conflist.to_string()).expect("conf");
    let conf_dir = conf.path().display().to_string();
    let s = start_wrapped(
        &["ip", "netns", "exec", &guard.name],
        None,
        None,
        &[
            "--nodes",
            "1",
            "--scheduler",
            "--cni-conf-dir",
            &conf_dir,
            "--cni-bin-dir",
            PLUGINS,
        ],
    );
    wait_until("the kubelet to log that it runs CNI", LONG, || {
        s.logged("network plugin: CNI") == 1
    });

    for pod in ["a", "b"] {
        s.kubectl(&["run", pod, "--image=nginx"]);
    }
    s.kubectl(&[
        "wait",
        "--for=condition=Ready",
        "pod/a",
        "pod/b",
        "--timeout=60s",
    ]);
    let ip = |pod: &str| {
        let p = s.json(&["get", "pod", pod]);
        p["status"]["podIP"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let (ip_a, ip_b) = (ip("a"), ip("b"));
    assert!(
        ip_a.starts_with("10.244.0.") && ip_b.starts_with("10.244.0."),
        "{ip_a} {ip_b}"
    );
    assert_ne!(ip_a, ip_b);

    // Each pod's namespace has eth0 with its podIP.
    let names = pod_netns_names(&s);
    guard.pod_netns = names.clone();
    let netns_of = |ip: &str| {
        names
            .iter()
            .find(|ns| {
                let out = in_server(
                    &s,
                    &[
                        "ip", "netns", "exec", ns, "ip", "-4", "-o", "addr", "show", "dev", "eth0",
                    ],
                );
                String::from_utf8_lossy(&out.stdout).contains(&format!(" {ip}/24 "))
            })
            .cloned()
            .unwrap_or_else(|| panic!("no pod network namespace has eth0 with {ip}: {names:?}"))
    };
    let (ns_a, ns_b) = (netns_of(&ip_a), netns_of(&ip_b));
    assert_ne!(ns_a, ns_b);
    assert_eq!(
        veths(&guard.name),
        2,
        "a veth per pod in the server's namespace"
    );
    let link = ok(
        "ip",
        &[
            "netns",
            "exec",
            &guard.name,
            "ip",
            "-o",
            "link",
            "show",
            &bridge,
        ],
    );
    assert!(link.contains(&bridge), "{link}");

    // Pods on one node reach each other.
    let ping = in_server(
        &s,
        &["ip", "netns", "exec", &ns_a, "ping", "-c1", "-W2", &ip_b],
    );
    assert!(
        ping.status.success(),
        "ping {ip_b} from a: {}{}",
        String::from_utf8_lossy(&ping.stdout),
        String::from_utf8_lossy(&ping.stderr)
    );

    // Deletion tears the network down: namespaces and veths are gone.
    s.kubectl(&["delete", "pod", "a", "b", "--timeout=60s"]);
    wait_until("the pods' network namespaces removed", LONG, || {
        let left = pod_netns_names(&s);
        !left.contains(&ns_a) && !left.contains(&ns_b)
    });
    assert!(!Path::new(NETNS_DIR).join(&ns_a).exists());
    assert!(!Path::new(NETNS_DIR).join(&ns_b).exists());
    assert_eq!(veths(&guard.name), 0, "no veth left");
    drop(s);
}
