//! API Priority and Fairness (upstream's k8s.io/apiserver/pkg/util/flowcontrol and the
//! priority-and-fairness filter): every request not exempt is classified by the FlowSchemas
//! into a priority level, estimated in seats, and queued fairly among its level's flows until
//! its seats are free; a full queue or too long a wait is answered 429 with `Retry-After`.
//!
//! - [`classify`]: FlowSchemas' rules and flows; [`config`]: levels' seats and borrowing;
//! - [`dealer`] and [`queueset`]: shuffle sharding and fair queuing; [`width`]: seats;
//! - [`filter`]: the HTTP filter; [`debug`]: the dumps; [`metrics`]; [`retry_after`];
//! - [`dangling`]: the FlowSchemas' `Dangling` condition.

pub mod classify;
pub mod config;
mod dangling;
pub mod dealer;
pub mod debug;
pub mod filter;
pub mod metrics;
pub mod queueset;
pub mod retry_after;
pub mod timing;
pub mod width;

pub use dangling::DanglingConditions;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use client::informer::InformerFactory;
use registry::strategy::flowcontrol::configuration;
use registry::{object, Registry};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use self::classify::{Action, Schema};
use self::config::{DemandStats, LevelSpec, Seats, Wanted};
use self::queueset::{QueueSet, Ticket};
use self::width::{EstimatorConfig, ObjectCount};

const GROUP: &str = "flowcontrol.apiserver.k8s.io";
/// How often seats are shared out again by demand (upstream's borrowing adjustment period).
const ADJUST_PERIOD: Duration = Duration::from_secs(10);
/// How often stored objects are counted for the list estimates.
const COUNT_PERIOD: Duration = Duration::from_secs(10);
/// Counts older than this are not trusted (lists then cost the most).
const COUNT_STALE: Duration = Duration::from_secs(120);

/// A waiting request's wake-up: its ticket once dispatched.
pub type Waker = oneshot::Sender<Ticket>;

/// One priority level's live state; survives reconfiguration while its name does, and after
/// it leaves the configuration until its queued and executing requests are done.
pub struct Level {
    pub name: String,
    state: Mutex<LevelState>,
}

pub struct LevelState {
    pub spec: LevelSpec,
    pub seats: Seats,
    pub current_limit: u32,
    pub queues: QueueSet<Waker>,
    pub demand: DemandStats,
    /// Gone from the configuration: no request is classified here any more, and the level is
    /// dropped once its queues are idle (upstream's quiescing).
    pub quiescing: bool,
}

impl Level {
    pub fn lock(&self) -> MutexGuard<'_, LevelState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl LevelState {
    /// Dispatches what fits and wakes its waiters; a waiter gone meanwhile (its client left)
    /// gives its seats straight back.
    pub fn dispatch(&mut self, now: Instant) {
        loop {
            let mut returned = false;
            for (waker, ticket) in self.queues.dispatch(now) {
                if let Err(mut ticket) = waker.send(ticket) {
                    self.queues.finish(now, &mut ticket);
                    returned = true;
                }
            }
            if !returned {
                break;
            }
        }
    }
}

/// The classifier's view: schemas in matching order, each naming a level that exists.
struct Classifier {
    schemas: Vec<Arc<Schema>>,
    levels: HashMap<String, Arc<Level>>,
}

/// A request's classification.
pub struct Classified {
    pub schema: Arc<Schema>,
    pub level: Arc<Level>,
    pub distinguisher: String,
    pub hash: u64,
}

pub struct FlowControl {
    server_seats: u32,
    /// The server's request timeout (a queued request waits at most a quarter of it).
    request_timeout: Option<Duration>,
    classifier: RwLock<Arc<Classifier>>,
    levels: Mutex<BTreeMap<String, Arc<Level>>>,
    pub dropped: retry_after::DroppedRequests,
    pub estimator: EstimatorConfig,
    counts: RwLock<HashMap<String, (i64, Instant)>>,
    watchers: Mutex<HashMap<String, usize>>,
    /// The configuration last taken in (schemas, levels): dropping a drained level shares
    /// the seats out again from it.
    last: Mutex<(Vec<Value>, Vec<Value>)>,
}

/// Counts a watch of a resource while held.
pub struct Watching {
    flow_control: Arc<FlowControl>,
    key: String,
}

impl Drop for Watching {
    fn drop(&mut self) {
        let mut watchers = self
            .flow_control
            .watchers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(n) = watchers.get_mut(&self.key) {
            *n = n.saturating_sub(1);
        }
    }
}

impl FlowControl {
    /// `server_seats`: --max-requests-inflight + --max-mutating-requests-inflight. Starts with
    /// the mandatory configuration until the informers have the stored one.
    pub fn new(server_seats: u32, request_timeout: Option<Duration>) -> Arc<Self> {
        let this = Arc::new(Self {
            server_seats: server_seats.max(1),
            request_timeout,
            classifier: RwLock::new(Arc::new(Classifier {
                schemas: Vec::new(),
                levels: HashMap::new(),
            })),
            levels: Mutex::new(BTreeMap::new()),
            dropped: retry_after::DroppedRequests::default(),
            estimator: EstimatorConfig::default(),
            counts: RwLock::new(HashMap::new()),
            watchers: Mutex::new(HashMap::new()),
            last: Mutex::new((Vec::new(), Vec::new())),
        });
        this.reload(&[], &[]);
        this
    }

    /// Follows the stored configuration, adjusts borrowing and counts stored objects until
    /// `stop`.
    pub fn run(self: &Arc<Self>, informers: &InformerFactory, stop: CancellationToken) {
        let registry = informers.registry().clone();
        if let (Some(schemas), Some(levels)) = (
            registry.store(GROUP, "v1", "flowschemas"),
            registry.store(GROUP, "v1", "prioritylevelconfigurations"),
        ) {
            let (schemas, levels) = (
                informers.informer_for(&schemas),
                informers.informer_for(&levels),
            );
            let (this, s, l) = (self.clone(), schemas.clone(), levels.clone());
            client::informer::reload_on_change([schemas, levels], stop.clone(), move || {
                let s: Vec<Value> = s.indexer().list().iter().map(|v| (**v).clone()).collect();
                let l: Vec<Value> = l.indexer().list().iter().map(|v| (**v).clone()).collect();
                this.reload(&s, &l);
            });
        }
        let this = self.clone();
        let stop_adjusting = stop.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(ADJUST_PERIOD);
            ticks.tick().await;
            loop {
                tokio::select! {
                    () = stop_adjusting.cancelled() => return,
                    _ = ticks.tick() => this.adjust(Instant::now()),
                }
            }
        });
        let this = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(COUNT_PERIOD);
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    _ = ticks.tick() => this.count(&registry).await,
                }
            }
        });
    }

    async fn count(&self, registry: &Registry) {
        let counted = crate::metrics::stored_counts(registry).await;
        let now = Instant::now();
        let mut counts = self.counts.write().unwrap_or_else(|e| e.into_inner());
        for (resource, n) in counted {
            counts.insert(resource, (n, now));
        }
    }

    /// The stored count of `resource` (`plural` or `plural.group`, as
    /// `apiserver_storage_objects` names it).
    pub fn stored(&self, resource: &str) -> ObjectCount {
        let counts = self.counts.read().unwrap_or_else(|e| e.into_inner());
        match counts.get(resource) {
            Some((_, at)) if at.elapsed() > COUNT_STALE => ObjectCount::Stale,
            Some((n, _)) => ObjectCount::Known(*n),
            None => ObjectCount::Unknown,
        }
    }

    /// Registers a watch of `resource` for as long as the guard lives.
    pub fn watching(self: &Arc<Self>, resource: &str) -> Watching {
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        *watchers.entry(resource.to_string()).or_default() += 1;
        Watching {
            flow_control: self.clone(),
            key: resource.to_string(),
        }
    }

    pub fn watchers(&self, resource: &str) -> usize {
        let watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        watchers.get(resource).copied().unwrap_or(0)
    }

    pub fn request_timeout(&self) -> Option<Duration> {
        self.request_timeout
    }

    /// The levels, by name (for the dumps).
    pub fn levels(&self) -> Vec<Arc<Level>> {
        let levels = self.levels.lock().unwrap_or_else(|e| e.into_inner());
        levels.values().cloned().collect()
    }

    /// The first schema that matches, with its level and the request's flow.
    pub fn classify(&self, user: &registry::auth::UserInfo, action: &Action) -> Option<Classified> {
        let classifier = self
            .classifier
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let schema = classifier
            .schemas
            .iter()
            .find(|s| s.matches(user, action))
            // Every user is in the catch-all's groups; should that ever fail, it still applies.
            .or_else(|| {
                classifier
                    .schemas
                    .iter()
                    .find(|s| s.name == configuration::CATCH_ALL)
            })?
            .clone();
        let level = classifier.levels.get(&schema.level)?.clone();
        let (distinguisher, hash) = schema.flow(user, action);
        Some(Classified {
            schema,
            level,
            distinguisher,
            hash,
        })
    }

    /// Takes in a new configuration. Mandatory objects missing from it are imagined as
    /// upstream does, so that the exempt and catch-all levels always exist. A level gone from
    /// it that still has requests queued or executing stays, quiescing, with its share of the
    /// seats, until they are done.
    pub fn reload(&self, schema_objects: &[Value], level_objects: &[Value]) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) =
            (schema_objects.to_vec(), level_objects.to_vec());
        let mandatory = configuration::mandatory();
        let mut level_objects = level_objects.to_vec();
        for proto in &mandatory.priority_levels {
            if !level_objects
                .iter()
                .any(|l| object::name(l) == object::name(proto))
            {
                level_objects.push(proto.clone());
            }
        }
        let mut schema_objects = schema_objects.to_vec();
        for proto in &mandatory.flow_schemas {
            if !schema_objects
                .iter()
                .any(|s| object::name(s) == object::name(proto))
            {
                schema_objects.push(proto.clone());
            }
        }
        let mut specs: Vec<LevelSpec> = level_objects.iter().map(LevelSpec::from_object).collect();
        let desired: std::collections::HashSet<String> =
            specs.iter().map(|s| s.name.clone()).collect();
        let now = Instant::now();
        let mut levels = self.levels.lock().unwrap_or_else(|e| e.into_inner());
        // Undesired levels still busy linger with their old spec, sharing seats as before.
        for (name, level) in levels.iter() {
            let state = level.lock();
            if !desired.contains(name) && !state.queues.is_idle() {
                specs.push(state.spec.clone());
            }
        }
        let seats = config::nominal_seats(self.server_seats, &specs);
        // The read-vs-write histograms' limits: every queue place, every nominal seat.
        let places: usize = specs
            .iter()
            .map(|s| s.queuing.queues * s.queuing.queue_length_limit)
            .sum();
        let nominal: u32 = seats.iter().map(|s| s.nominal).sum();
        for kind in ["readOnly", "mutating"] {
            let m = metrics::metrics();
            m.read_vs_write("waiting", kind)
                .set_denominator(places.max(1) as f64);
            m.read_vs_write("executing", kind)
                .set_denominator(f64::from(nominal.max(1)));
        }
        let mut live = BTreeMap::new();
        for (spec, seats) in specs.into_iter().zip(seats) {
            let quiescing = !desired.contains(&spec.name);
            let level = match levels.remove(&spec.name) {
                Some(level) => {
                    let mut state = level.lock();
                    if state.seats != seats || state.spec.queuing != spec.queuing {
                        state.current_limit = seats.initial();
                    }
                    let limit = effective_limit(&spec, state.current_limit);
                    state.queues.configure(spec.queuing, limit, now);
                    state.spec = spec;
                    state.seats = seats;
                    state.quiescing = quiescing;
                    state.dispatch(now);
                    drop(state);
                    level
                }
                None => Arc::new(Level {
                    name: spec.name.clone(),
                    state: Mutex::new(LevelState {
                        queues: QueueSet::new(
                            spec.queuing,
                            effective_limit(&spec, seats.initial()),
                            now,
                        )
                        .named(&spec.name),
                        current_limit: seats.initial(),
                        spec,
                        seats,
                        demand: DemandStats::default(),
                        quiescing,
                    }),
                }),
            };
            self.set_denominator(&level);
            publish_limits(&level);
            live.insert(level.name.clone(), level);
        }
        // Levels gone and idle: nothing of them is left to show.
        for gone in levels.keys() {
            metrics::metrics().forget_level(gone);
        }
        *levels = live.clone();
        drop(levels);
        // Requests are classified only into the configured levels; a schema naming a level
        // that is not configured (Dangling) matches nothing, as upstream ignores it.
        live.retain(|name, _| desired.contains(name));
        let mut schemas: Vec<Schema> = schema_objects
            .iter()
            .map(Schema::from_object)
            .filter(|s| live.contains_key(&s.level))
            .collect();
        classify::sort(&mut schemas);
        let classifier = Classifier {
            schemas: schemas.into_iter().map(Arc::new).collect(),
            levels: live.into_iter().collect(),
        };
        *self.classifier.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(classifier);
        // As upstream, a new configuration shares the seats out again at once.
        self.reallocate(now);
    }

    /// Drops `level` if it is quiescing and its last request is done (upstream's maybeReap):
    /// the configuration is taken in again without it.
    pub fn maybe_reap(&self, level: &Level) {
        let useless = {
            let state = level.lock();
            state.quiescing && state.queues.is_idle()
        };
        if useless {
            self.reap();
        }
    }

    /// Upstream's concurrency denominator of a level's utilization histograms: its current
    /// limit, or a tenth of the server's seats while that is 0.
    fn set_denominator(&self, level: &Level) {
        let state = level.lock();
        let denominator = match state.current_limit {
            0 => (f64::from(self.server_seats) / 10.0).round().max(1.0),
            current => f64::from(current),
        };
        state.queues.set_concurrency_denominator(denominator);
    }

    fn reap(&self) {
        let (schemas, levels) = self.last.lock().unwrap_or_else(|e| e.into_inner()).clone();
        self.reload(&schemas, &levels);
    }

    /// The periodic borrowing adjustment: drained quiescing levels go, then the seats are
    /// shared out again.
    pub fn adjust(&self, now: Instant) {
        if self.levels().iter().any(|l| {
            let state = l.lock();
            state.quiescing && state.queues.is_idle()
        }) {
            self.reap();
        }
        self.reallocate(now);
    }

    /// Upstream's updateBorrowing: each level's seat demand since the last time, smoothed,
    /// decides its share of the levels' nominal seats between its bounds. The exempt level
    /// is never limited; what it uses (at least its unlendable seats) is set aside first.
    fn reallocate(&self, now: Instant) {
        let levels = self.levels();
        let mut limited = Vec::new();
        let mut exempt = Vec::new();
        let (mut nominal_sum, mut min_sum, mut min_current_sum) = (0i64, 0i64, 0i64);
        for level in &levels {
            let mut state = level.lock();
            nominal_sum += i64::from(state.seats.nominal);
            let demand = state.queues.take_demand(now);
            state.demand.update(&demand);
            let high_water = state.demand.high_water.round() as u32;
            if state.spec.exempt {
                exempt.push((level.clone(), state.seats.lower.max(high_water)));
                continue;
            }
            // Never below its unlendable seats, nor below what it used lately (up to its
            // nominal seats).
            let min_current = state.seats.lower.max(state.seats.nominal.min(high_water));
            min_sum += i64::from(state.seats.lower);
            min_current_sum += i64::from(min_current);
            let wanted = Wanted {
                lower: f64::from(min_current),
                upper: f64::from(state.seats.upper),
                target: f64::from(min_current).max(state.demand.smoothed),
            };
            limited.push((level.clone(), min_current, wanted));
        }
        let remaining = nominal_sum - exempt.iter().map(|(_, c)| i64::from(*c)).sum::<i64>();
        let wanted: Vec<Wanted> = limited.iter().map(|(_, _, w)| *w).collect();
        let (shares, frac) = if remaining <= min_sum {
            // Not even the floors fit: every level gets its floor.
            (
                limited
                    .iter()
                    .map(|(l, _, _)| l.lock().seats.lower)
                    .collect(),
                0.0,
            )
        } else if remaining <= min_current_sum {
            // The floors fit, not all the recent use: share what is left above the floors.
            let frac = (remaining - min_sum) as f64 / (min_current_sum - min_sum) as f64;
            let shares = limited
                .iter()
                .map(|(l, min_current, _)| {
                    let lower = l.lock().seats.lower;
                    lower + (f64::from(min_current - lower) * frac).round() as u32
                })
                .collect();
            (shares, 0.0)
        } else {
            config::allocate(u32::try_from(nominal_sum).unwrap_or(u32::MAX), &wanted)
        };
        metrics::metrics().seat_fair_frac.set(frac);
        for (level, current) in exempt {
            let mut state = level.lock();
            state.current_limit = current;
            note_adjustment(&level.name, &state, f64::from(current));
            drop(state);
            self.set_denominator(&level);
            publish_limits(&level);
        }
        for ((level, _, wanted), share) in limited.iter().zip(shares) {
            let mut state = level.lock();
            state.current_limit = share;
            let (queuing, limit) = (state.spec.queuing, effective_limit(&state.spec, share));
            state.queues.configure(queuing, limit, now);
            state.dispatch(now);
            note_adjustment(&level.name, &state, wanted.target);
            drop(state);
            self.set_denominator(level);
            publish_limits(level);
        }
    }
}

/// Upstream's gauges of a level's seat demand and the target it was given.
fn note_adjustment(level: &str, state: &LevelState, target: f64) {
    let m = metrics::metrics();
    let name = [level];
    m.demand_high_watermark
        .with_label_values(&name)
        .set(state.demand.high_water);
    m.demand_average
        .with_label_values(&name)
        .set(state.demand.average);
    m.demand_stdev
        .with_label_values(&name)
        .set(state.demand.deviation);
    m.demand_smoothed
        .with_label_values(&name)
        .set(state.demand.smoothed);
    m.target_seats.with_label_values(&name).set(target);
}

/// A level's seats for dispatching: at least one, so that a level lending everything still
/// serves a request at a time.
fn effective_limit(spec: &LevelSpec, current: u32) -> u32 {
    if spec.exempt {
        u32::MAX
    } else {
        current.max(1)
    }
}

fn publish_limits(level: &Level) {
    let state = level.lock();
    let m = metrics::metrics();
    let name = [level.name.as_str()];
    m.nominal_limit
        .with_label_values(&name)
        .set(f64::from(state.seats.nominal));
    m.lower_limit
        .with_label_values(&name)
        .set(f64::from(state.seats.lower));
    m.upper_limit
        .with_label_values(&name)
        .set(f64::from(state.seats.upper));
    m.current_limit
        .with_label_values(&name)
        .set(f64::from(state.current_limit));
    m.current_r
        .with_label_values(&name)
        .set(state.queues.current_r());
}

#[cfg(test)]
#[path = "levels_tests.rs"]
mod tests;
