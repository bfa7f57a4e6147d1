//! The real apiserver binary, started for a benchmark or a soak: one launcher, so that every
//! such run picks its ports, lays out its data dir, chooses its storage, waits for readiness
//! and stops the process the same way.
//!
//! [`Launch`] says how (backend, flags, environment, token users, what happens to the log);
//! [`ApiServer`] is the running process, killed on drop together with its data dir and (on
//! etcd) its etcd. The e2e tests keep their own launcher in `e2e/support`: they also restart,
//! terminate and wrap the process, and wait on its log rather than on `/readyz`.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::https::Connection;
use crate::{free_port, BackendKind, EtcdServer};

/// How long a fresh server may take to answer `/readyz` with 200.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// The binary a benchmark runs: `$APISERVER_BIN`, else `built` (the one cargo built for it,
/// `env!("CARGO_BIN_EXE_apiserver")`).
pub fn binary(built: &str) -> PathBuf {
    std::env::var_os("APISERVER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(built))
}

/// Called with each line the server logs, on a thread of its own.
type LogHook = Box<dyn FnMut(String) + Send>;

/// How to start the server. By default: the embedded store in a fresh temp dir, free plain and
/// secure ports, `RUST_LOG=warn`, the log discarded.
pub struct Launch {
    bin: PathBuf,
    backend: BackendKind,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    log_level: String,
    secure: bool,
    tokens: Option<String>,
    on_log_line: Option<LogHook>,
}

impl Launch {
    pub fn new(bin: impl Into<PathBuf>) -> Self {
        Self {
            bin: bin.into(),
            backend: BackendKind::Embedded,
            args: Vec::new(),
            env: Vec::new(),
            log_level: "warn".into(),
            secure: true,
            tokens: None,
            on_log_line: None,
        }
    }

    /// The embedded store in the data dir, or a fresh etcd started here.
    pub fn backend(mut self, backend: BackendKind) -> Self {
        self.backend = backend;
        self
    }

    /// Flags after those the launcher sets (data dir, ports, storage, token file).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// `RUST_LOG`: what the server logs at all.
    pub fn log_level(mut self, level: &str) -> Self {
        self.log_level = level.into();
        self
    }

    /// No secure port (`--secure-port 0`): only the loopback plain port serves.
    pub fn without_secure_port(mut self) -> Self {
        self.secure = false;
        self
    }

    /// A static token file (`token,user,uid` lines) written into the temp dir and passed as
    /// `--token-auth-file`, for clients of the secure port.
    pub fn token_file(mut self, contents: &str) -> Self {
        self.tokens = Some(contents.into());
        self
    }

    /// Each log line (stdout, without colour) handed to `hook`; without one the log is
    /// discarded.
    pub fn on_log_line(mut self, hook: impl FnMut(String) + Send + 'static) -> Self {
        self.on_log_line = Some(Box::new(hook));
        self
    }

    /// Starts the server and returns once `/readyz` on the plain port answers 200. Panics when
    /// it cannot start, exits or is not ready within a minute: a benchmark without its server
    /// has nothing to measure.
    pub fn start(self) -> ApiServer {
        let etcd = match self.backend {
            BackendKind::Embedded => None,
            BackendKind::Etcd => Some(EtcdServer::start_blocking()),
        };
        let dir = tempfile::tempdir().expect("temp dir for the server");
        let port = free_port();
        let secure_port = self.secure.then(|| {
            std::iter::repeat_with(free_port)
                .find(|p| *p != port)
                .expect("a second free port")
        });
        let mut command = Command::new(&self.bin);
        command
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--port", &port.to_string()])
            .args(["--secure-port", &secure_port.unwrap_or(0).to_string()]);
        if let Some(etcd) = &etcd {
            command.arg(format!("--etcd-servers={}", etcd.endpoint()));
        }
        if let Some(tokens) = &self.tokens {
            let file = dir.path().join("tokens.csv");
            std::fs::write(&file, tokens).expect("write the token file");
            command.arg("--token-auth-file").arg(file);
        }
        command
            .args(&self.args)
            .env("RUST_LOG", &self.log_level)
            .env("NO_COLOR", "1")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(if self.on_log_line.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            });
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", self.bin.display()));
        if let (Some(stdout), Some(mut hook)) = (child.stdout.take(), self.on_log_line) {
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    hook(line);
                }
            });
        }
        let mut server = ApiServer {
            child,
            port,
            secure_port,
            dir,
            _etcd: etcd,
        };
        server.wait_ready();
        server
    }
}

/// The running server; killed on drop, its data dir and etcd removed after it.
pub struct ApiServer {
    child: Child,
    /// The loopback plain-HTTP port (no authentication: the privileged loopback user).
    pub port: u16,
    /// The HTTPS port, unless started [`without_secure_port`](Launch::without_secure_port).
    pub secure_port: Option<u16>,
    dir: tempfile::TempDir,
    _etcd: Option<EtcdServer>,
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ApiServer {
    /// The process id, for reading what it holds from /proc.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's data directory (`pki/` holds the certificates it generated).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The CA certificate that signed the serving certificate.
    pub fn ca(&self) -> PathBuf {
        self.data_dir().join("pki/ca.crt")
    }

    /// A kept-alive connection to the plain loopback port.
    pub fn plain(&self) -> std::io::Result<Connection> {
        Connection::plain(self.port)
    }

    /// A kept-alive HTTPS connection to the secure port sending `token`.
    pub fn secure(&self, token: &str) -> std::io::Result<Connection> {
        let port = self
            .secure_port
            .ok_or_else(|| std::io::Error::other("started without a secure port"))?;
        Connection::open(&self.ca(), port, token)
    }

    /// Polls `/readyz` until it is 200; panics when the process exits first or time runs out.
    fn wait_ready(&mut self) {
        let since = Instant::now();
        loop {
            let ready = Connection::plain(self.port)
                .and_then(|mut c| c.exchange("GET", "/readyz", b""))
                .is_ok_and(|r| r.status == 200);
            if ready {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the server exited before it was ready: {status}");
            }
            assert!(
                since.elapsed() < READY_WITHIN,
                "the server was not ready within {READY_WITHIN:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A field of a `/proc/<pid>/status` text, in bytes when it is a size (`kB`), else as is.
pub fn proc_status_field(status: &str, field: &str) -> Option<u64> {
    let value = status.lines().find_map(|l| l.strip_prefix(field))?.trim();
    match value.strip_suffix("kB") {
        Some(kib) => kib.trim().parse::<u64>().ok().map(|k| k * 1024),
        None => value.parse().ok(),
    }
}

/// A process's user + system CPU time so far, from `/proc/<pid>/stat`.
pub fn cpu_time(pid: u32) -> std::io::Result<Duration> {
    let stat = std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat"))?;
    // Fields after the command (which may hold spaces): state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Ok(Duration::from_secs_f64(
        (field(11) + field(12)) as f64 / clock_ticks() as f64,
    ))
}

/// The kernel's clock ticks per second, the unit of `/proc/<pid>/stat`'s times.
fn clock_ticks() -> u64 {
    static TICKS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100)
    })
}

/// `/proc/<pid>/status` of the server.
pub fn proc_status(pid: u32) -> std::io::Result<String> {
    std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("status"))
}

#[cfg(test)]
mod tests {
    use super::proc_status_field;

    #[test]
    fn status_fields_in_bytes_or_as_counted() {
        let status = "Name:\tapiserver\nVmRSS:\t  2048 kB\nRssAnon:\t    1000 kB\nThreads:\t17\n";
        assert_eq!(proc_status_field(status, "RssAnon:"), Some(1_024_000));
        assert_eq!(proc_status_field(status, "VmRSS:"), Some(2048 * 1024));
        assert_eq!(proc_status_field(status, "Threads:"), Some(17));
        assert_eq!(proc_status_field(status, "VmHWM:"), None);
    }

    #[test]
    fn a_binary_that_exits_before_it_is_ready_is_said_at_once() {
        let started = std::time::Instant::now();
        let failed = std::panic::catch_unwind(|| super::Launch::new("/bin/false").start());
        let said = failed
            .err()
            .and_then(|p| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        assert!(said.contains("exited before it was ready"), "{said}");
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
    }
}
