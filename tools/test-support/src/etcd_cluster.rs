//! A real three-member etcd cluster on loopback, for failover tests: members can be killed
//! (SIGKILL, as a crash) and restarted on their ports and data. Blocking, for tests that drive
//! the server binary from plain threads.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::{Duration, Instant};

use crate::etcd::{etcd_command, spawn_etcd};
use crate::free_port;

struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

pub struct EtcdCluster {
    members: Vec<Member>,
    dir: tempfile::TempDir,
}

impl EtcdCluster {
    /// Starts three members and waits until each answers healthy (a leader is elected).
    /// Panics with the logs if they cannot: a failover test without its cluster tests nothing.
    pub fn start() -> Self {
        // Ports found free may be taken before etcd binds them; then start over on new ones.
        for _ in 0..3 {
            let mut cluster = Self {
                members: (0..3)
                    .map(|i| Member {
                        name: format!("m{i}"),
                        client_port: free_port(),
                        peer_port: free_port(),
                        child: None,
                    })
                    .collect(),
                dir: tempfile::tempdir().expect("temp dir for etcd"),
            };
            for i in 0..3 {
                cluster.spawn(i);
            }
            if cluster.wait_all_healthy(Duration::from_secs(30)) {
                return cluster;
            }
        }
        panic!("a three-member etcd cluster did not start after 3 tries");
    }

    /// Every member's client URL, comma-separated as `--etcd-servers` takes them.
    pub fn endpoints(&self) -> String {
        (0..self.members.len())
            .map(|i| self.endpoint(i))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn endpoint(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}", self.members[i].client_port)
    }

    fn initial_cluster(&self) -> String {
        self.members
            .iter()
            .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer_port))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn spawn(&mut self, i: usize) {
        let initial_cluster = self.initial_cluster();
        let member = &mut self.members[i];
        let client = format!("http://127.0.0.1:{}", member.client_port);
        let peer = format!("http://127.0.0.1:{}", member.peer_port);
        let log_path = self.dir.path().join(format!("{}.log", member.name));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("etcd log");
        let mut command = etcd_command(
            &member.name,
            &self.dir.path().join(&member.name),
            &client,
            &peer,
            &initial_cluster,
        );
        command
            .arg("--initial-cluster-token=failover-test")
            // A restarted member must not unseat a working leader (etcd 3.5's default).
            .arg("--pre-vote=true")
            .stderr(log);
        let child = spawn_etcd(&mut command);
        member.child = Some(child);
    }

    fn running(&mut self, i: usize) -> bool {
        matches!(
            self.members[i].child.as_mut().map(|c| c.try_wait()),
            Some(Ok(None))
        )
    }

    /// Waits until every running member reports itself healthy; false if one exited.
    pub fn wait_all_healthy(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            let mut all = true;
            for i in 0..self.members.len() {
                if !self.running(i) {
                    return false;
                }
                let health = http_get(self.members[i].client_port, "/health");
                all &= health.is_some_and(|h| h.contains("\"health\":\"true\""));
            }
            if all {
                return true;
            }
            if Instant::now() > deadline {
                panic!(
                    "etcd cluster not healthy in {within:?}; logs:\n{}",
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The member that is currently the raft leader, from etcd's own metrics.
    pub fn leader(&self) -> Option<usize> {
        (0..self.members.len()).find(|&i| {
            http_get(self.members[i].client_port, "/metrics")
                .is_some_and(|m| m.lines().any(|l| l.trim() == "etcd_server_is_leader 1"))
        })
    }

    /// Kills member `i` with SIGKILL, keeping its data.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops member `i` with SIGSTOP: its sockets stay open and the kernel still accepts
    /// connections and data for it, but nothing answers (a stalled process, or a partition
    /// as its clients see it).
    pub fn pause(&mut self, i: usize) {
        self.signal(i, "-STOP");
    }

    /// Lets a paused member run again.
    pub fn resume(&mut self, i: usize) {
        self.signal(i, "-CONT");
    }

    fn signal(&self, i: usize, signal: &str) {
        if let Some(child) = &self.members[i].child {
            let status = std::process::Command::new("kill")
                .args([signal, &child.id().to_string()])
                .status();
            assert!(
                status.is_ok_and(|s| s.success()),
                "kill {signal} etcd member {i}"
            );
        }
    }

    /// Starts member `i` again on its ports and data.
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        self.spawn(i);
    }

    fn logs(&self) -> String {
        self.members
            .iter()
            .map(|m| {
                let log = std::fs::read_to_string(self.dir.path().join(format!("{}.log", m.name)))
                    .unwrap_or_default();
                format!("--- {} ---\n{log}", m.name)
            })
            .collect()
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}

/// One plain HTTP GET on the client port, which etcd serves beside gRPC; None if it did not
/// answer within two seconds.
fn http_get(port: u16, path: &str) -> Option<String> {
    http_get_at(([127, 0, 0, 1], port).into(), path)
}

/// [`http_get`] at any address.
pub(crate) fn http_get_at(addr: std::net::SocketAddr, path: &str) -> Option<String> {
    let mut conn = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).ok()?;
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer).ok()?;
    Some(String::from_utf8_lossy(&answer).into_owned())
}
