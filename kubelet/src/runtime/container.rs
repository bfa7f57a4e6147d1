//! One simulated container: its state (waiting, running, terminated), the termination before
//! the current run, restart count and back-off, and its probes' verdict times.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::backoff::CrashBackoff;
use super::probe::Probe;
use crate::behavior::Script;

/// The exit code of a process killed by SIGKILL (128 + 9).
pub const KILLED: i32 = 137;

#[derive(Clone, Debug, PartialEq)]
pub struct Termination {
    pub exit_code: i32,
    pub reason: String,
    pub message: Option<String>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: DateTime<Utc>,
    pub container_id: Option<String>,
    /// When it ended on the runtime's clock (for back-off).
    pub finished: Instant,
}

#[derive(Clone, Debug, PartialEq)]
pub enum State {
    Waiting {
        reason: String,
        message: Option<String>,
    },
    Running {
        since: Instant,
        started_at: DateTime<Utc>,
    },
    Terminated(Termination),
}

/// Why a running container stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopCause {
    /// Its run ended by itself.
    Exited,
    StartupProbe,
    LivenessProbe,
}

#[derive(Clone, Debug)]
pub struct Container {
    pub name: String,
    pub image: String,
    pub script: Script,
    pub startup: Option<Probe>,
    pub readiness: Option<Probe>,
    pub liveness: Option<Probe>,
    pub state: State,
    pub last: Option<Termination>,
    pub restart_count: u32,
    pub container_id: Option<String>,
    pub backoff: CrashBackoff,
    /// While in CrashLoopBackOff: when the next start is due.
    pub retry_at: Option<Instant>,
    /// An init container with `restartPolicy: Always`: a sidecar that keeps running beside
    /// the regular containers, restarted whatever its exit code.
    pub restartable: bool,
}

/// A digest in the form runtimes report, of `parts`.
pub fn digest(parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    for p in parts {
        hash.update(p.as_bytes());
        hash.update([0]);
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

impl Container {
    pub fn new(spec: &Value, script: Script, waiting: &str, backoff: (Duration, Duration)) -> Self {
        Self {
            name: spec["name"].as_str().unwrap_or_default().to_string(),
            image: spec["image"].as_str().unwrap_or_default().to_string(),
            script,
            startup: Probe::of(spec, "startupProbe"),
            readiness: Probe::of(spec, "readinessProbe"),
            liveness: Probe::of(spec, "livenessProbe"),
            state: State::Waiting {
                reason: waiting.to_string(),
                message: None,
            },
            last: None,
            restart_count: 0,
            container_id: None,
            backoff: CrashBackoff::new(backoff.0, backoff.1),
            retry_at: None,
            restartable: registry::types::ContainerRestartPolicy::restartable(spec),
        }
    }

    /// The image's digest reference, as runtimes report imageID.
    pub fn image_id(&self) -> String {
        let repo = self.image.split('@').next().unwrap_or_default();
        let repo = match repo.rsplit_once(':') {
            Some((r, tag)) if !tag.contains('/') => r,
            _ => repo,
        };
        format!("{repo}@sha256:{}", digest(&[&self.image]))
    }

    pub fn start(&mut self, now: Instant, wall: DateTime<Utc>, pod_uid: &str) {
        let id = digest(&[pod_uid, &self.name, &self.restart_count.to_string()]);
        self.container_id = Some(format!("sim://{id}"));
        self.retry_at = None;
        self.state = State::Running {
            since: now,
            started_at: wall,
        };
    }

    fn since(&self) -> Option<Instant> {
        match self.state {
            State::Running { since, .. } => Some(since),
            _ => None,
        }
    }

    /// When the startup probe lets it count as started (None: never, while running).
    fn started_at(&self, since: Instant) -> Option<Instant> {
        match &self.startup {
            None => Some(since),
            Some(p) if self.script.started => Some(p.succeeds_at(since, since)),
            Some(_) => None,
        }
    }

    fn ready_at(&self, since: Instant) -> Option<Instant> {
        let started = self.started_at(since)?;
        match &self.readiness {
            None => Some(started),
            Some(p) if self.script.ready => Some(p.succeeds_at(since, started)),
            Some(_) => None,
        }
    }

    /// When it stops by itself, and why.
    fn stops_at(&self, since: Instant) -> Option<(Instant, StopCause)> {
        let mut stops = Vec::new();
        if let Some(run) = self.script.run {
            stops.push((since + run, StopCause::Exited));
        }
        match (&self.startup, self.started_at(since)) {
            (Some(p), None) => stops.push((p.fails_at(since, since), StopCause::StartupProbe)),
            (_, Some(started)) => {
                if let Some(p) = self.liveness.as_ref().filter(|_| !self.script.live) {
                    stops.push((p.fails_at(since, started), StopCause::LivenessProbe));
                }
            }
            (None, None) => {}
        }
        stops.into_iter().min_by_key(|(at, _)| *at)
    }

    pub fn is_started(&self, now: Instant) -> bool {
        self.since()
            .and_then(|s| self.started_at(s))
            .is_some_and(|at| at <= now)
    }

    pub fn is_ready(&self, now: Instant) -> bool {
        self.since()
            .and_then(|s| self.ready_at(s))
            .is_some_and(|at| at <= now)
    }

    /// If it stopped by itself by `now`: why, and when.
    pub fn due_stop(&self, now: Instant) -> Option<(Instant, StopCause)> {
        self.stops_at(self.since()?).filter(|(at, _)| *at <= now)
    }

    /// The next moment its state or status changes by itself.
    pub fn deadline(&self, now: Instant) -> Option<Instant> {
        let Some(since) = self.since() else {
            return self.retry_at;
        };
        [
            self.started_at(since),
            self.ready_at(since),
            self.stops_at(since).map(|(at, _)| at),
        ]
        .into_iter()
        .flatten()
        .filter(|at| *at > now)
        .min()
    }

    /// Ends the current run with `exit_code` at `now`.
    pub fn terminate(&mut self, exit_code: i32, finished: Instant, wall: DateTime<Utc>) {
        let started_at = match &self.state {
            State::Running { started_at, .. } => Some(*started_at),
            _ => None,
        };
        let reason = if exit_code == 0 { "Completed" } else { "Error" };
        self.retry_at = None;
        self.state = State::Terminated(Termination {
            exit_code,
            reason: reason.to_string(),
            message: None,
            started_at,
            finished_at: wall,
            container_id: self.container_id.clone(),
            finished,
        });
    }

    pub fn is_running(&self) -> bool {
        matches!(self.state, State::Running { .. })
    }

    /// As an init container, whether initialisation may go past it: it exited 0, or, for a
    /// sidecar, it has started (upstream starts the next init container once a restartable one
    /// is up).
    pub fn init_done(&self) -> bool {
        match self.restartable {
            true => self.is_running() || self.last.is_some(),
            false => matches!(&self.state, State::Terminated(t) if t.exit_code == 0),
        }
    }

    /// Its termination, current or (while waiting to restart) the last one.
    pub fn termination(&self) -> Option<&Termination> {
        match &self.state {
            State::Terminated(t) => Some(t),
            State::Waiting { .. } => self.last.as_ref(),
            State::Running { .. } => None,
        }
    }
}
