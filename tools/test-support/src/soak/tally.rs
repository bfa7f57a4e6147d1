//! What the churn did and what went wrong, counted across its threads; and the client that
//! counts every request it sends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::server::REQUEST_TIMEOUT;
use crate::https::Redial;

/// How many failures are kept word for word; the rest are only counted.
const KEPT_ERRORS: usize = 20;

#[derive(Default)]
pub struct Tally {
    pub requests: AtomicU64,
    /// Failures: any answer that is not 2xx (but 404 and 409), a request that got no answer,
    /// a watch's ERROR event, a namespace that stayed.
    pub errors: AtomicU64,
    /// 404 and 409: the races a client of a busy server expects (counted, not failures).
    pub races: AtomicU64,
    pub watches: AtomicU64,
    pub watches_abandoned: AtomicU64,
    pub watch_events: AtomicU64,
    pub namespaces_created: AtomicU64,
    pub namespaces_gone: AtomicU64,
    /// Deployment rollouts (an image change or a scale) looked at a cycle later...
    pub rollouts_checked: AtomicU64,
    /// ...and those that were complete by then.
    pub rollouts_complete: AtomicU64,
    kept: Mutex<Vec<String>>,
}

impl Tally {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    pub fn error(&self, what: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() < KEPT_ERRORS {
            kept.push(what);
        }
    }

    /// The first failures, word for word.
    pub fn kept(&self) -> Vec<String> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// How a request went.
pub enum Outcome {
    Ok(Value),
    /// 404 or 409.
    Race,
    Failed,
}

impl Outcome {
    pub fn ok(self) -> Option<Value> {
        match self {
            Outcome::Ok(v) => Some(v),
            _ => None,
        }
    }
}

/// A connection whose every request is counted in the tally.
pub struct Client {
    conn: Redial,
    tally: Arc<Tally>,
}

impl Client {
    pub fn new(port: u16, tally: Arc<Tally>) -> Self {
        Self {
            conn: Redial::new(port, REQUEST_TIMEOUT),
            tally,
        }
    }

    /// A JSON request (PATCH as a merge patch); a 2xx answer's body as JSON.
    pub fn call(&mut self, method: &str, path: &str, body: Option<&Value>) -> Outcome {
        let content_type = if method == "PATCH" {
            "application/merge-patch+json"
        } else {
            "application/json"
        };
        let bytes = body.map(|b| b.to_string()).unwrap_or_default();
        Tally::add(&self.tally.requests, 1);
        match self.conn.send(method, path, content_type, bytes.as_bytes()) {
            Ok(answer) if (200..300).contains(&answer.status) => Outcome::Ok(answer.json()),
            Ok(answer) if matches!(answer.status, 404 | 409) => {
                Tally::add(&self.tally.races, 1);
                Outcome::Race
            }
            Ok(answer) => {
                let text: String = answer.text().chars().take(300).collect();
                self.tally
                    .error(format!("{method} {path}: {} {text}", answer.status));
                Outcome::Failed
            }
            Err(e) => {
                self.tally.error(format!("{method} {path}: {e}"));
                Outcome::Failed
            }
        }
    }

    /// A GET whose 404 is an answer, not a race: whether the object exists (None: failed).
    pub fn exists(&mut self, path: &str) -> Option<bool> {
        Tally::add(&self.tally.requests, 1);
        match self.conn.send("GET", path, "application/json", b"") {
            Ok(answer) if answer.status == 200 => Some(true),
            Ok(answer) if answer.status == 404 => Some(false),
            Ok(answer) => {
                let text: String = answer.text().chars().take(300).collect();
                self.tally
                    .error(format!("GET {path}: {} {text}", answer.status));
                None
            }
            Err(e) => {
                self.tally.error(format!("GET {path}: {e}"));
                None
            }
        }
    }
}
