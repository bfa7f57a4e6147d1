//! One real etcd inside a network namespace of its own, joined to the host by a veth pair on a
//! private /30 in 10.203.0.0/16 (no other test uses that range), so a test can slow the link
//! (`tc ... netem delay`) or cut it. A cut is silence, never a refusal: packets are dropped on
//! both ends of the pair (netem `loss 100%`, or the `blackhole` qdisc where the kernel has no
//! netem), so connections hang as in a real partition. The namespace, the veth pair and etcd
//! go on drop, also when the test panics.
//!
//! Needs root, `ip` and `tc`: [`EtcdInNetns::start`] answers why not (the test then skips) when
//! the machine cannot.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::etcd::{etcd_binary, etcd_command, spawn_etcd};
use crate::etcd_cluster::http_get_at;

const CLIENT_PORT: u16 = 2379;

/// How a cut drops packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutBy {
    /// `netem loss 100%`.
    Netem,
    /// The `blackhole` qdisc, where the kernel lacks netem.
    Blackhole,
}

pub struct EtcdInNetns {
    netns: String,
    host_if: String,
    ns_if: String,
    etcd_addr: Ipv4Addr,
    child: Option<Child>,
    paused: bool,
    netem: bool,
    dir: tempfile::TempDir,
}

fn run(program: &str, args: &[&str]) -> std::io::Result<Output> {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
}

fn ok(program: &str, args: &[&str]) -> Result<(), String> {
    let out = run(program, args).map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{program} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// Why this machine cannot run etcd in a network namespace, if it cannot.
fn missing() -> Option<String> {
    let uid = run("id", &["-u"]).ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("not root: network namespaces and qdiscs need it".into());
    }
    for (tool, arg) in [("ip", "-V"), ("tc", "-V")] {
        if run(tool, &[arg]).is_err() {
            return Some(format!("`{tool}` missing (iproute2)"));
        }
    }
    None
}

impl EtcdInNetns {
    /// Makes the namespace and the link, starts etcd inside and waits until it answers from
    /// the host. Err: why this machine cannot (not root, no `ip`/`tc`, no qdisc that drops),
    /// for the test to print and skip. Panics if etcd itself does not start.
    pub fn start() -> Result<Self, String> {
        if let Some(why) = missing() {
            return Err(why);
        }
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        // A /30 per namespace, picked by process and counter so concurrent tests differ:
        // 16384 blocks of four addresses in 10.203.0.0/16.
        let block = (pid.wrapping_mul(8).wrapping_add(n)) % 16384;
        let base = u32::from(Ipv4Addr::new(10, 203, 0, 0)) + block * 4;
        let (host_addr, etcd_addr) = (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2));
        let tag = format!("{}{n}", pid % 10_000_000);
        let mut me = Self {
            netns: format!("etcd-netem-{tag}"),
            host_if: format!("en{tag}h"),
            ns_if: format!("en{tag}n"),
            etcd_addr,
            child: None,
            paused: false,
            netem: false,
            dir: tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?,
        };
        // From here on, drop removes whatever was made.
        me.make_link(host_addr)?;
        me.netem = me
            .qdisc(&me.host_if.clone(), &["netem", "delay", "0ms"])
            .is_ok();
        me.restore();
        if !me.netem {
            // Without netem a cut needs the blackhole qdisc.
            me.qdisc(&me.host_if.clone(), &["blackhole"])
                .map_err(|e| format!("no qdisc that drops packets (netem, blackhole): {e}"))?;
            me.restore();
        }
        me.spawn_etcd();
        me.wait_ready(Duration::from_secs(20));
        Ok(me)
    }

    fn in_ns(&self, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["netns", "exec", &self.netns];
        all.extend_from_slice(args);
        ok("ip", &all)
    }

    fn make_link(&self, host_addr: Ipv4Addr) -> Result<(), String> {
        ok("ip", &["netns", "add", &self.netns])
            .map_err(|e| format!("cannot create a network namespace: {e}"))?;
        ok(
            "ip",
            &[
                "link",
                "add",
                &self.host_if,
                "type",
                "veth",
                "peer",
                "name",
                &self.ns_if,
            ],
        )?;
        ok("ip", &["link", "set", &self.ns_if, "netns", &self.netns])?;
        ok(
            "ip",
            &[
                "addr",
                "add",
                &format!("{host_addr}/30"),
                "dev",
                &self.host_if,
            ],
        )?;
        ok("ip", &["link", "set", &self.host_if, "up"])?;
        let etcd_cidr = format!("{}/30", self.etcd_addr);
        self.in_ns(&["ip", "addr", "add", &etcd_cidr, "dev", &self.ns_if])?;
        self.in_ns(&["ip", "link", "set", &self.ns_if, "up"])?;
        self.in_ns(&["ip", "link", "set", "lo", "up"])
    }

    fn spawn_etcd(&mut self) {
        let client = self.endpoint();
        // Peers talk over the namespace's own loopback, which no cut touches.
        let peer = "http://127.0.0.1:2380";
        let etcd = etcd_command(
            "netns",
            &self.dir.path().join("data"),
            &client,
            peer,
            &format!("netns={peer}"),
        );
        let log = std::fs::File::create(self.dir.path().join("etcd.log")).expect("etcd log");
        // `ip netns exec` execs etcd in place, so the child's pid is etcd's.
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", &self.netns])
            .arg(etcd_binary())
            .args(etcd.get_args())
            .stdout(Stdio::null())
            .stderr(log);
        self.child = Some(spawn_etcd(&mut command));
    }

    fn wait_ready(&mut self, within: Duration) {
        let deadline = Instant::now() + within;
        let addr = SocketAddr::from((self.etcd_addr, CLIENT_PORT));
        loop {
            let exited = !matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)));
            let healthy = !exited
                && http_get_at(addr, "/health").is_some_and(|h| h.contains("\"health\":\"true\""));
            if healthy {
                return;
            }
            if exited || Instant::now() > deadline {
                let log =
                    std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default();
                panic!(
                    "etcd in {} did not become ready; its log:\n{log}",
                    self.netns
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// etcd's client URL, reachable from the host through the veth pair.
    pub fn endpoint(&self) -> String {
        format!("http://{}:{CLIENT_PORT}", self.etcd_addr)
    }

    /// Whether the kernel has netem (else [`delay`](Self::delay) is unsupported and a cut
    /// uses the blackhole qdisc).
    pub fn has_netem(&self) -> bool {
        self.netem
    }

    fn qdisc(&self, dev: &str, spec: &[&str]) -> Result<(), String> {
        let mut args = vec!["qdisc", "replace", "dev", dev, "root"];
        args.extend_from_slice(spec);
        if dev == self.ns_if {
            let mut all = vec!["tc"];
            all.extend_from_slice(&args);
            self.in_ns(&all)
        } else {
            ok("tc", &args)
        }
    }

    /// Delays every packet the host sends to etcd by `ms` milliseconds (netem). Err when the
    /// kernel has no netem.
    pub fn delay(&self, ms: u64) -> Result<(), String> {
        if !self.netem {
            return Err("the kernel has no netem qdisc".into());
        }
        self.qdisc(&self.host_if, &["netem", "delay", &format!("{ms}ms")])
    }

    /// Narrows the link both ways to `kbit` kilobits a second (the `tbf` qdisc, which kernels
    /// without netem still have): every exchange with etcd takes longer the more bytes it moves,
    /// as over a congested link, while nothing is lost.
    pub fn throttle(&self, kbit: u32) -> Result<(), String> {
        let rate = format!("{kbit}kbit");
        for dev in [&self.host_if, &self.ns_if] {
            self.qdisc(
                dev,
                &["tbf", "rate", &rate, "burst", "1600", "latency", "10s"],
            )?;
        }
        Ok(())
    }

    /// Cuts the link: packets both ways are dropped in silence, so connections hang and new
    /// ones time out, as across a partition.
    pub fn cut(&self) -> CutBy {
        let (spec, by): (&[&str], _) = if self.netem {
            (&["netem", "loss", "100%"], CutBy::Netem)
        } else {
            (&["blackhole"], CutBy::Blackhole)
        };
        for dev in [&self.host_if, &self.ns_if] {
            self.qdisc(dev, spec)
                .unwrap_or_else(|e| panic!("cannot cut the link: {e}"));
        }
        by
    }

    /// Removes any delay or cut: the link is as it was made.
    pub fn restore(&self) {
        let _ = ok("tc", &["qdisc", "del", "dev", &self.host_if, "root"]);
        let _ = self.in_ns(&["tc", "qdisc", "del", "dev", &self.ns_if, "root"]);
    }

    /// Stops etcd (SIGSTOP) without closing its sockets: the kernel still accepts connections
    /// and data, and nothing answers, as an etcd stalled on its disk. A stand-in for a delay
    /// longer than any timeout where the kernel has no netem.
    pub fn pause(&mut self) {
        self.signal("-STOP")
            .unwrap_or_else(|e| panic!("pause etcd: {e}"));
        self.paused = true;
    }

    /// Lets a paused etcd run again.
    pub fn resume(&mut self) {
        self.signal("-CONT")
            .unwrap_or_else(|e| panic!("resume etcd: {e}"));
        self.paused = false;
    }

    fn signal(&self, signal: &str) -> Result<(), String> {
        match &self.child {
            Some(child) => ok("kill", &[signal, &child.id().to_string()]),
            None => Ok(()),
        }
    }
}

impl Drop for EtcdInNetns {
    fn drop(&mut self) {
        if self.paused {
            let _ = self.signal("-CONT");
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // Deleting the namespace deletes its end of the pair, and with it the host's end.
        let _ = ok("ip", &["netns", "del", &self.netns]);
        let _ = ok("ip", &["link", "del", &self.host_if]);
    }
}
