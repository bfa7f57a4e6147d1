//! A real etcd for tests and benchmarks: Debian's `etcd` binary on free loopback ports in a
//! temporary directory, stopped (and its data removed) on drop.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::free_port;

pub struct EtcdServer {
    child: Option<Child>,
    dir: tempfile::TempDir,
    client_port: u16,
    peer_port: u16,
}

/// The etcd binary: `$ETCD_BIN`, else `etcd` on the PATH.
/// An etcd member listening on `client` and `peer` (loopback URLs), its data in `data_dir`,
/// one of `initial_cluster`; quiet on stdout.
pub(crate) fn etcd_command(
    name: &str,
    data_dir: &std::path::Path,
    client: &str,
    peer: &str,
    initial_cluster: &str,
) -> Command {
    let mut command = Command::new(etcd_binary());
    command
        .arg(format!("--name={name}"))
        .arg(format!("--data-dir={}", data_dir.display()))
        .arg(format!("--listen-client-urls={client}"))
        .arg(format!("--advertise-client-urls={client}"))
        .arg(format!("--listen-peer-urls={peer}"))
        .arg(format!("--initial-advertise-peer-urls={peer}"))
        .arg(format!("--initial-cluster={initial_cluster}"))
        .arg("--log-level=error")
        .arg("--logger=zap")
        .stdout(Stdio::null());
    command
}

/// Starts `command`, saying how to install etcd when it is missing.
pub(crate) fn spawn_etcd(command: &mut Command) -> Child {
    command.spawn().unwrap_or_else(|e| {
        panic!(
            "cannot start etcd ({}): {e}; install it with `apt-get install -y etcd-server`",
            etcd_binary().display()
        )
    })
}

pub(crate) fn etcd_binary() -> PathBuf {
    std::env::var_os("ETCD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("etcd"))
}

impl EtcdServer {
    /// Starts etcd and waits until it answers. Panics with a clear message if it cannot: a
    /// test without its etcd has nothing to test.
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().expect("temp dir for etcd");
        let mut server = Self {
            child: None,
            dir,
            client_port: free_port(),
            peer_port: free_port(),
        };
        // Another test may grab the same free port first; then our etcd exits and we try
        // again on other ports.
        for _ in 0..5 {
            if server.spawn().await {
                return server;
            }
            server.client_port = free_port();
            server.peer_port = free_port();
        }
        panic!("etcd could not start on free ports after 5 tries");
    }

    /// [`start`](Self::start) for tests without a runtime of their own, such as those driving
    /// the binary over blocking HTTP.
    pub fn start_blocking() -> Self {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(Self::start())
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// Starts etcd; false if it exited (its ports were taken).
    async fn spawn(&mut self) -> bool {
        let client = self.endpoint();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::File::create(self.dir.path().join("etcd.log")).expect("etcd log");
        let mut command = etcd_command(
            "test",
            &self.dir.path().join("data"),
            &client,
            &peer,
            &format!("test={peer}"),
        );
        let child = spawn_etcd(command.stderr(log));
        self.child = Some(child);
        self.wait_ready().await
    }

    /// Waits until our etcd answers, or is found to have exited.
    async fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let exited = match self.child.as_mut().map(|c| c.try_wait()) {
                Some(Ok(Some(_))) | None => true,
                Some(Ok(None)) | Some(Err(_)) => false,
            };
            if exited {
                self.child = None;
                return false;
            }
            if self.healthy().await {
                // The answer may come from another test's etcd on a port we lost: only ours
                // being alive afterwards makes it ours.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)));
            }
            if Instant::now() > deadline {
                let log =
                    std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default();
                panic!("etcd did not become ready in 20s; its log:\n{log}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// etcd's `/health` over plain HTTP on the client port, which it serves beside gRPC; this
    /// crate stays free of the storage layer's client.
    async fn healthy(&self) -> bool {
        let Ok(mut conn) = TcpStream::connect(("127.0.0.1", self.client_port)).await else {
            return false;
        };
        let request = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
        if conn.write_all(request.as_bytes()).await.is_err() {
            return false;
        }
        let mut answer = Vec::new();
        let read = conn.read_to_end(&mut answer);
        match tokio::time::timeout(Duration::from_secs(2), read).await {
            Ok(Ok(_)) => String::from_utf8_lossy(&answer).contains("\"health\":\"true\""),
            _ => false,
        }
    }

    /// Its data directory's parent, a temp dir of its own.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Kills etcd (as a crash would), keeping its data.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts etcd again on the same ports and data.
    pub async fn restart(&mut self) {
        self.stop();
        assert!(self.spawn().await, "etcd did not restart on its ports");
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.stop();
    }
}
