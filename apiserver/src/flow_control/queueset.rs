//! One priority level's queues (upstream's `fairqueuing/queueset`): shuffle-sharded queues
//! served by virtual-time fair queuing over seats. A request is dealt to the shortest queue of
//! its flow's hand, refused when that queue is full, and dispatched when its queue has the
//! earliest virtual finish time and its seats fit under the level's concurrency limit.
//!
//! Time is passed in (`now`), so the tests drive it; waiting is the caller's business: a
//! request's `payload` (the waiter's wake-up) comes back out of [`QueueSet::dispatch`].

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::dealer::Dealer;
use super::metrics::{metrics, LevelGauges};
use super::width::WorkEstimate;

/// Upstream's guess of a request's service time before it is known (`estimatedServiceDuration`).
const ESTIMATED_SERVICE: Duration = Duration::from_millis(3);
/// Upstream keeps R in fixed point (1e-8 seat-seconds in a u64) and winds it back by half its
/// range once it passes three quarters of it (an epoch advance); the same thresholds here.
const MAX_SEAT_SECONDS: f64 = u64::MAX as f64 / 1e8;
const R_DECREMENT: f64 = MAX_SEAT_SECONDS / 2.0;
const HIGH_R: f64 = R_DECREMENT * 1.5;

/// A Limited level's queuing; `queues: 0` is the Reject limit response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuingConfig {
    pub queues: usize,
    pub hand_size: usize,
    pub queue_length_limit: usize,
}

/// Why a request was refused, as `apiserver_flowcontrol_rejected_requests_total` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    QueueFull,
    ConcurrencyLimit,
    /// Its wait ended unserved: past its limit, or its request ended (its client left).
    TimeOut,
}

impl Rejection {
    pub fn reason(self) -> &'static str {
        match self {
            Self::QueueFull => "queue-full",
            Self::ConcurrencyLimit => "concurrency-limit",
            Self::TimeOut => "time-out",
        }
    }
}

/// What the dumps show of a request besides its seats.
#[derive(Clone, Debug, Default)]
pub struct Described {
    pub flow_schema: String,
    pub distinguisher: String,
    pub user: String,
    pub verb: String,
    pub path: String,
    pub namespace: String,
    pub name: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
}

struct Waiting<T> {
    id: u64,
    work: WorkEstimate,
    arrived: Instant,
    described: Described,
    payload: T,
}

struct Queue<T> {
    waiting: VecDeque<Waiting<T>>,
    executing: usize,
    seats_in_use: u32,
    /// The virtual time (seat-seconds per queue) at which its next request starts.
    next_dispatch_r: f64,
}

impl<T> Queue<T> {
    fn new() -> Self {
        Self {
            waiting: VecDeque::new(),
            executing: 0,
            seats_in_use: 0,
            next_dispatch_r: 0.0,
        }
    }

    fn idle(&self) -> bool {
        self.waiting.is_empty() && self.executing == 0
    }

    fn waiting_work(&self) -> f64 {
        self.waiting.iter().map(|w| total_work(&w.work)).sum()
    }
}

/// A dispatched request's hold on seats; give it back with [`QueueSet::finish`].
#[derive(Debug)]
pub struct Ticket {
    /// None: dispatched without a queue (Reject levels).
    queue: Option<usize>,
    /// Seats held now: max(initial, final) while executing, final seats afterwards.
    seats: u32,
    work: WorkEstimate,
    pub dispatched: Instant,
    pub arrived: Instant,
    finished: bool,
}

impl Ticket {
    pub fn work(&self) -> WorkEstimate {
        self.work
    }
}

pub enum Start<T> {
    /// Dispatched at once (no queue involved).
    Dispatched(Ticket),
    /// Waiting in a queue (its id, and the queue's length with it): see
    /// [`QueueSet::dispatch`] and [`QueueSet::cancel`].
    Queued(u64, usize),
    Rejected(Rejection, T),
}

/// Seat demand integrated over time, for the periodic borrowing adjustment.
#[derive(Clone, Copy, Debug, Default)]
pub struct Demand {
    pub integral: f64,
    pub square_integral: f64,
    pub high_water: f64,
    pub elapsed: f64,
}

pub struct QueueSet<T> {
    /// The level's name, for the metrics.
    name: String,
    /// The level's timing ratio histograms (named queue sets only).
    gauges: Option<LevelGauges>,
    config: QueuingConfig,
    dealer: Option<Dealer>,
    limit: u32,
    queues: Vec<Queue<T>>,
    current_r: f64,
    last_time: Instant,
    robin: usize,
    seats_in_use: u32,
    executing: usize,
    waiting: usize,
    next_id: u64,
    demand: Demand,
    demand_since: Instant,
}

impl<T> QueueSet<T> {
    pub fn new(config: QueuingConfig, limit: u32, now: Instant) -> Self {
        let mut set = Self {
            name: String::new(),
            gauges: None,
            config,
            dealer: None,
            limit,
            queues: Vec::new(),
            current_r: 0.0,
            last_time: now,
            robin: 0,
            seats_in_use: 0,
            executing: 0,
            waiting: 0,
            next_id: 0,
            demand: Demand::default(),
            demand_since: now,
        };
        set.configure(config, limit, now);
        set
    }

    /// A new queuing configuration or concurrency limit; waiting requests keep their queue
    /// when it still exists (upstream drains the rest as their queues go; here the extra
    /// queues stay until empty).
    pub fn configure(&mut self, config: QueuingConfig, limit: u32, now: Instant) {
        self.sync_time(now);
        self.config = config;
        self.limit = limit;
        self.dealer = Dealer::new(config.queues, config.hand_size.min(config.queues));
        while self.queues.len() < config.queues {
            self.queues.push(Queue::new());
        }
        while self.queues.len() > config.queues && self.queues.last().is_some_and(Queue::idle) {
            self.queues.pop();
        }
        if let Some(g) = &self.gauges {
            g.waiting.set_denominator(self.queue_places());
        }
    }

    /// Names the level the queues belong to (the metrics' `priority_level`).
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_string();
        let gauges = metrics().level_gauges(name);
        gauges.waiting.set_denominator(self.queue_places());
        self.gauges = Some(gauges);
        self.observe(self.last_time);
        self
    }

    /// Upstream's denominator of the waiting requests' histogram: all the queue places.
    fn queue_places(&self) -> f64 {
        let length = self.config.queue_length_limit.max(1);
        (length * self.config.queues.max(1)) as f64
    }

    /// The denominator of the executing requests', seats' and seat demand's histograms.
    pub fn set_concurrency_denominator(&self, denominator: f64) {
        if let Some(g) = &self.gauges {
            g.executing.set_denominator(denominator);
            g.seats.set_denominator(denominator);
            g.demand.set_denominator(denominator);
        }
    }

    pub fn limit(&self) -> u32 {
        self.limit
    }

    pub fn current_r(&self) -> f64 {
        self.current_r
    }

    pub fn waiting(&self) -> usize {
        self.waiting
    }

    pub fn executing(&self) -> usize {
        self.executing
    }

    pub fn seats_in_use(&self) -> u32 {
        self.seats_in_use
    }

    pub fn is_idle(&self) -> bool {
        self.waiting == 0 && self.executing == 0
    }

    /// A request arrives: dispatched at once, queued, or refused.
    pub fn start(
        &mut self,
        now: Instant,
        hash: u64,
        work: WorkEstimate,
        described: Described,
        payload: T,
    ) -> Start<T> {
        self.sync_time(now);
        self.next_id += 1;
        let id = self.next_id;
        let Some(dealer) = self.dealer.filter(|_| self.config.queues > 0) else {
            // The Reject limit response: dispatch now or refuse.
            if !self.fits(work.max_seats()) {
                return Start::Rejected(Rejection::ConcurrencyLimit, payload);
            }
            let ticket = self.execute(None, work, now, now);
            return Start::Dispatched(ticket);
        };
        // The hand's queue with the least waiting work.
        let mut best: Option<(usize, f64)> = None;
        for index in dealer.deal(hash) {
            let work = self.queues[index].waiting_work();
            if best.is_none_or(|(_, least)| work < least) {
                best = Some((index, work));
            }
        }
        let Some((index, _)) = best else {
            return Start::Rejected(Rejection::ConcurrencyLimit, payload);
        };
        let busy = self.seats_in_use >= self.limit;
        let queue = &mut self.queues[index];
        // As upstream: a full queue refuses only while the level's seats are all taken.
        if busy && queue.waiting.len() >= self.config.queue_length_limit {
            return Start::Rejected(Rejection::QueueFull, payload);
        }
        if queue.idle() {
            // An idle queue starts from now in virtual time: no credit for having been idle.
            queue.next_dispatch_r = self.current_r;
        }
        queue.waiting.push_back(Waiting {
            id,
            work,
            arrived: now,
            described,
            payload,
        });
        self.waiting += 1;
        Start::Queued(id, queue.waiting.len())
    }

    /// Dispatches as many waiting requests as fit, earliest virtual finish first; their
    /// payloads and tickets.
    pub fn dispatch(&mut self, now: Instant) -> Vec<(T, Ticket)> {
        self.sync_time(now);
        let mut out = Vec::new();
        while self.waiting > 0 {
            let n = self.queues.len();
            let mut best: Option<(usize, f64)> = None;
            // The bounds, over queues, of their next start S, plain and less the work in
            // progress (upstream's next_s_bounds and next_discounted_s_bounds).
            let mut bounds = SBounds::default();
            for step in 1..=n {
                let index = (self.robin + step) % n;
                let queue = &self.queues[index];
                if let Some(head) = queue.waiting.front() {
                    let in_progress =
                        f64::from(queue.seats_in_use) * ESTIMATED_SERVICE.as_secs_f64();
                    bounds.note(queue.next_dispatch_r, in_progress);
                    let finish = queue.next_dispatch_r + total_work(&head.work);
                    if best.is_none_or(|(_, least)| finish < least) {
                        best = Some((index, finish));
                    }
                }
            }
            let Some((index, _)) = best else { break };
            let Some((seats, schema)) = self.queues[index]
                .waiting
                .front()
                .map(|w| (w.work.max_seats(), w.described.flow_schema.clone()))
            else {
                break;
            };
            // The fairest request waits for its seats rather than let narrower ones pass.
            if !self.fits(seats) {
                metrics()
                    .no_accommodation
                    .with_label_values(&[self.name.as_str(), schema.as_str()])
                    .inc();
                break;
            }
            bounds.publish(
                &self.name,
                self.current_r,
                self.queues[index].next_dispatch_r,
            );
            let Some(head) = self.queues[index].waiting.pop_front() else {
                break;
            };
            self.waiting -= 1;
            self.robin = index;
            self.queues[index].next_dispatch_r += total_work(&head.work);
            let ticket = self.execute(Some(index), head.work, head.arrived, now);
            out.push((head.payload, ticket));
        }
        self.observe(now);
        out
    }

    /// Takes a waiting request out (its wait timed out or its client left); None when it is
    /// not waiting any more (already dispatched).
    pub fn cancel(&mut self, now: Instant, id: u64) -> Option<T> {
        self.sync_time(now);
        for queue in &mut self.queues {
            if let Some(pos) = queue.waiting.iter().position(|w| w.id == id) {
                let removed = queue.waiting.remove(pos)?;
                self.waiting -= 1;
                self.observe(now);
                return Some(removed.payload);
            }
        }
        None
    }

    /// The request's execution ended. With final seats and an additional latency it keeps
    /// its final seats (true: call [`QueueSet::finish`] again once the latency has passed).
    pub fn end_execution(&mut self, now: Instant, ticket: &mut Ticket) -> bool {
        let work = ticket.work;
        if work.final_seats == 0 || work.additional_latency.is_zero() {
            self.finish(now, ticket);
            return false;
        }
        self.sync_time(now);
        let keep = work.final_seats.min(ticket.seats);
        self.release(ticket, ticket.seats - keep, now);
        ticket.seats = keep;
        true
    }

    /// Gives a ticket's seats back (see [`QueueSet::dispatch`] for who gets them).
    pub fn finish(&mut self, now: Instant, ticket: &mut Ticket) {
        // Once only: a ticket given back twice must not free another request's seats.
        if std::mem::replace(&mut ticket.finished, true) {
            return;
        }
        self.sync_time(now);
        let seats = ticket.seats;
        self.release(ticket, seats, now);
        ticket.seats = 0;
        self.executing = self.executing.saturating_sub(1);
        if let Some(queue) = ticket.queue.and_then(|q| self.queues.get_mut(q)) {
            queue.executing = queue.executing.saturating_sub(1);
            // Charge the queue the service it really took instead of the guess.
            let actual = now.duration_since(ticket.dispatched).as_secs_f64();
            queue.next_dispatch_r -=
                f64::from(ticket.work.initial_seats) * (ESTIMATED_SERVICE.as_secs_f64() - actual);
        }
        self.observe(now);
    }

    fn release(&mut self, ticket: &Ticket, seats: u32, now: Instant) {
        self.seats_in_use = self.seats_in_use.saturating_sub(seats);
        if let Some(queue) = ticket.queue.and_then(|q| self.queues.get_mut(q)) {
            queue.seats_in_use = queue.seats_in_use.saturating_sub(seats);
        }
        self.observe(now);
    }

    fn execute(
        &mut self,
        queue: Option<usize>,
        work: WorkEstimate,
        arrived: Instant,
        now: Instant,
    ) -> Ticket {
        let seats = work.max_seats();
        self.seats_in_use += seats;
        self.executing += 1;
        if let Some(q) = queue.and_then(|q| self.queues.get_mut(q)) {
            q.executing += 1;
            q.seats_in_use += seats;
        }
        self.observe(now);
        Ticket {
            queue,
            seats,
            work,
            dispatched: now,
            arrived,
            finished: false,
        }
    }

    fn fits(&self, seats: u32) -> bool {
        if seats > self.limit {
            // A request wider than the whole level runs alone rather than never.
            return self.seats_in_use == 0;
        }
        u64::from(self.seats_in_use) + u64::from(seats) <= u64::from(self.limit)
    }

    /// Winds R and the queues' next start back by [`R_DECREMENT`] (upstream's epoch advance,
    /// which keeps its fixed-point R from overflowing; here it keeps the f64 precise).
    fn advance_epoch(&mut self) {
        self.current_r -= R_DECREMENT;
        let mut success = true;
        for queue in &mut self.queues {
            if queue.idle() {
                // Stale; the next request there starts from R anyway.
                queue.next_dispatch_r = 0.0;
            } else if queue.next_dispatch_r < R_DECREMENT {
                success = false;
                queue.next_dispatch_r = 0.0;
            } else {
                queue.next_dispatch_r -= R_DECREMENT;
            }
        }
        let success = if success { "true" } else { "false" };
        metrics()
            .epoch_advance
            .with_label_values(&[self.name.as_str(), success])
            .inc();
    }

    /// Advances virtual time: R grows at the rate each active queue would be served at.
    fn sync_time(&mut self, now: Instant) {
        // The demand so far held until now; callers observe again after their change.
        self.observe(now);
        let elapsed = now.saturating_duration_since(self.last_time).as_secs_f64();
        self.last_time = self.last_time.max(now);
        let (mut active, mut requested) = (0usize, 0u64);
        for queue in &self.queues {
            if !queue.idle() {
                active += 1;
            }
            requested += u64::from(queue.seats_in_use)
                + queue
                    .waiting
                    .iter()
                    .map(|w| u64::from(w.work.max_seats()))
                    .sum::<u64>();
        }
        if active > 0 {
            let rate = (requested as f64).min(f64::from(self.limit)) / active as f64;
            self.current_r += rate * elapsed;
        }
        if self.current_r >= HIGH_R {
            self.advance_epoch();
        }
        metrics()
            .current_r
            .with_label_values(&[self.name.as_str()])
            .set(self.current_r);
    }

    /// Integrates seat demand (seats in use plus seats waiting) up to `now`.
    fn observe(&mut self, now: Instant) {
        let dt = now
            .saturating_duration_since(self.demand_since)
            .as_secs_f64();
        self.demand_since = self.demand_since.max(now);
        let demand = f64::from(self.seats_in_use)
            + self
                .queues
                .iter()
                .flat_map(|q| q.waiting.iter())
                .map(|w| f64::from(w.work.max_seats()))
                .sum::<f64>();
        self.demand.integral += demand * dt;
        self.demand.square_integral += demand * demand * dt;
        self.demand.elapsed += dt;
        self.demand.high_water = self.demand.high_water.max(demand);
        if let Some(g) = &self.gauges {
            g.waiting.set(self.waiting as f64);
            g.executing.set(self.executing as f64);
            g.seats.set(f64::from(self.seats_in_use));
            g.demand.set(demand);
        }
    }

    /// The demand since the last call, starting a new period at the current demand.
    pub fn take_demand(&mut self, now: Instant) -> Demand {
        self.observe(now);
        let taken = self.demand;
        let current = f64::from(self.seats_in_use);
        self.demand = Demand {
            high_water: current,
            ..Demand::default()
        };
        taken
    }

    /// The state the debug dumps print.
    pub fn dump(&self) -> Dump {
        let queues = self
            .queues
            .iter()
            .map(|q| QueueDump {
                waiting: q
                    .waiting
                    .iter()
                    .map(|w| RequestDump {
                        arrived: w.arrived,
                        work: w.work,
                        described: w.described.clone(),
                    })
                    .collect(),
                executing: q.executing,
                seats_in_use: q.seats_in_use,
                next_dispatch_r: q.next_dispatch_r,
                initial_seats_sum: q.waiting.iter().map(|w| w.work.initial_seats).sum(),
                max_seats_sum: q.waiting.iter().map(|w| w.work.max_seats()).sum(),
                total_work_sum: q.waiting_work(),
            })
            .collect();
        Dump {
            queues,
            waiting: self.waiting,
            executing: self.executing,
        }
    }
}

/// Minimum and maximum over the queues with a waiting request of their next start R.
struct SBounds {
    min: f64,
    max: f64,
    discounted_min: f64,
    discounted_max: f64,
}

impl Default for SBounds {
    fn default() -> Self {
        Self {
            min: f64::MAX,
            max: f64::MIN,
            discounted_min: f64::MAX,
            discounted_max: f64::MIN,
        }
    }
}

impl SBounds {
    fn note(&mut self, start: f64, in_progress: f64) {
        self.min = self.min.min(start);
        self.max = self.max.max(start);
        self.discounted_min = self.discounted_min.min(start - in_progress);
        self.discounted_max = self.discounted_max.max(start - in_progress);
    }

    /// Upstream's dispatch gauges, set as a queued request is dispatched at `r` from a queue
    /// whose next start was `s`.
    fn publish(&self, level: &str, r: f64, s: f64) {
        let m = metrics();
        m.dispatch_r.with_label_values(&[level]).set(r);
        m.latest_s.with_label_values(&[level]).set(s);
        for (gauge, min, max) in [
            (&m.next_s_bounds, self.min, self.max),
            (
                &m.next_discounted_s_bounds,
                self.discounted_min,
                self.discounted_max,
            ),
        ] {
            gauge.with_label_values(&[level, "min"]).set(min);
            gauge.with_label_values(&[level, "max"]).set(max);
        }
    }
}

/// A request's work in seat-seconds: its seats for the guessed service time, then its final
/// seats for the additional latency.
fn total_work(work: &WorkEstimate) -> f64 {
    f64::from(work.initial_seats) * ESTIMATED_SERVICE.as_secs_f64()
        + f64::from(work.final_seats) * work.additional_latency.as_secs_f64()
}

pub struct Dump {
    pub queues: Vec<QueueDump>,
    pub waiting: usize,
    pub executing: usize,
}

pub struct QueueDump {
    pub waiting: Vec<RequestDump>,
    pub executing: usize,
    pub seats_in_use: u32,
    pub next_dispatch_r: f64,
    pub initial_seats_sum: u32,
    pub max_seats_sum: u32,
    pub total_work_sum: f64,
}

pub struct RequestDump {
    pub arrived: Instant,
    pub work: WorkEstimate,
    pub described: Described,
}

#[cfg(test)]
#[path = "queueset_tests.rs"]
mod tests;
