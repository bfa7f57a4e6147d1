//! Levels over reconfiguration and borrowing: a removed level quiesces until drained; the
//! exempt level's seats count in the total and what it uses is set aside first.

use super::queueset::Described;
use super::width::WorkEstimate;
use super::*;
use serde_json::json;
use tokio::sync::oneshot;

fn limited(name: &str, shares: u32, lendable: u32) -> Value {
    json!({"metadata": {"name": name, "uid": format!("uid-{name}")}, "spec": {"type": "Limited", "limited": {
        "nominalConcurrencyShares": shares, "lendablePercent": lendable,
        "limitResponse": {"type": "Queue", "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 10}}}}})
}

fn schema_for(level: &str) -> Value {
    json!({"metadata": {"name": level}, "spec": {
        "priorityLevelConfiguration": {"name": level}, "matchingPrecedence": 10,
        "rules": [{"subjects": [{"kind": "User", "user": {"name": "t"}}],
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}]}]}})
}

fn level(fc: &FlowControl, name: &str) -> Option<Arc<Level>> {
    fc.levels().into_iter().find(|l| l.name == name)
}

fn nominal(fc: &FlowControl, name: &str) -> u32 {
    level(fc, name).expect("the level").lock().seats.nominal
}

/// Puts a request of `seats` in `level`'s queues and dispatches; its wake-up.
fn enqueue(level: &Level, seats: u32, now: Instant) -> oneshot::Receiver<Ticket> {
    let (tx, rx) = oneshot::channel();
    let mut state = level.lock();
    let work = WorkEstimate::seats(seats);
    match state.queues.start(now, 0, work, Described::default(), tx) {
        queueset::Start::Queued(..) => state.dispatch(now),
        _ => panic!("not queued"),
    }
    rx
}

fn finish(level: &Level, mut ticket: Ticket) {
    let now = Instant::now();
    let mut state = level.lock();
    state.queues.finish(now, &mut ticket);
    state.dispatch(now);
}

/// User `t` getting pods in namespace `d` (the filter tests classify it too).
pub(super) fn user_t() -> (registry::auth::UserInfo, Action) {
    let user = registry::auth::UserInfo {
        name: "t".into(),
        groups: vec!["system:authenticated".into()],
        ..Default::default()
    };
    let action = Action::Resource {
        verb: "get".into(),
        group: String::new(),
        resource: "pods".into(),
        namespace: "d".into(),
    };
    (user, action)
}

/// Whether `level` has a priority_level_seat_utilization series, with time counted in it.
fn utilization_of(level: &str) -> bool {
    use prometheus::core::Collector;
    metrics::metrics()
        .seat_utilization
        .collect()
        .iter()
        .flat_map(|f| f.get_metric().iter())
        .filter(|m| m.get_label().iter().any(|l| l.value() == level))
        .any(|m| m.get_histogram().get_sample_count() > 0)
}

#[test]
fn a_removed_level_quiesces_until_its_requests_are_done() {
    // 6 seats: "going" (one share) gets 1, catch-all (five) 5.
    let fc = FlowControl::new(6, None);
    fc.reload(&[schema_for("going")], &[limited("going", 1, 0)]);
    let going = level(&fc, "going").expect("configured");
    let now = Instant::now();
    let mut running = enqueue(&going, 1, now);
    let ticket = running.try_recv().expect("dispatched at once");
    let mut queued = enqueue(&going, 1, now);
    assert!(queued.try_recv().is_err(), "waits for the one seat");

    // The level and its schema leave the configuration.
    fc.reload(&[], &[]);
    let kept = level(&fc, "going").expect("kept while busy");
    assert!(Arc::ptr_eq(&kept, &going), "the same queues");
    assert!(going.lock().quiescing);
    // Its share still counts (catch-all keeps 5 of 6), and nothing new is classified there.
    assert_eq!(nominal(&fc, "catch-all"), 5);
    let (user, action) = user_t();
    let classified = fc.classify(&user, &action).expect("classified");
    assert_eq!(classified.level.name, "catch-all");

    // The running request ends: the queued one runs, on the quiescing level.
    finish(&going, ticket);
    fc.maybe_reap(&going);
    let second = queued
        .try_recv()
        .expect("dispatched from the quiescing level");
    assert!(level(&fc, "going").is_some(), "still executing one");
    // Its seat utilization is still reported while it lingers.
    assert!(utilization_of("going"));
    // The last one ends: the level goes, and its seats go back to the others.
    finish(&going, second);
    fc.maybe_reap(&going);
    assert!(level(&fc, "going").is_none());
    assert!(!utilization_of("going"), "its series go with it");
    assert_eq!(nominal(&fc, "catch-all"), 6);
}

#[test]
fn a_level_configured_again_stops_quiescing() {
    let fc = FlowControl::new(6, None);
    fc.reload(&[schema_for("back")], &[limited("back", 1, 0)]);
    let back = level(&fc, "back").expect("configured");
    let mut running = enqueue(&back, 1, Instant::now());
    let ticket = running.try_recv().expect("dispatched");
    fc.reload(&[], &[]);
    assert!(back.lock().quiescing);
    fc.reload(&[schema_for("back")], &[limited("back", 1, 0)]);
    assert!(!back.lock().quiescing);
    let (user, action) = user_t();
    assert_eq!(
        fc.classify(&user, &action).expect("classified").level.name,
        "back"
    );
    finish(&back, ticket);
    fc.maybe_reap(&back);
    assert!(
        level(&fc, "back").is_some(),
        "configured levels stay when idle"
    );
}

#[test]
fn an_idle_removed_level_goes_at_once() {
    let fc = FlowControl::new(6, None);
    fc.reload(&[schema_for("idle")], &[limited("idle", 1, 0)]);
    fc.reload(&[], &[]);
    assert!(level(&fc, "idle").is_none());
}

#[test]
fn the_exempt_level_lends_and_what_it_uses_is_set_aside() {
    // 20 seats; shares exempt 10, work 5, catch-all 5: nominal 10, 5, 5.
    let fc = FlowControl::new(20, None);
    let exempt = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt",
        "exempt": {"nominalConcurrencyShares": 10, "lendablePercent": 50}}});
    fc.reload(&[], &[exempt, limited("work", 5, 100)]);
    let (exempt, work, catch_all) = (
        level(&fc, "exempt").expect("exempt"),
        level(&fc, "work").expect("work"),
        level(&fc, "catch-all").expect("catch-all"),
    );
    let seats = exempt.lock().seats;
    // The exempt level's nominal seats count in the total; it may lend half; with no
    // borrowing limit its upper bound is its nominal seats plus the server's.
    assert_eq!((seats.nominal, seats.lower, seats.upper), (10, 5, 30));
    assert_eq!(work.lock().seats.nominal, 5);
    assert_eq!(catch_all.lock().seats.nominal, 5);

    // A new configuration is shared out at once (not from each level's initial seats, 5
    // for catch-all): idle, the exempt level keeps its floor (5), the others share the
    // nominal total, all of it for the one whose floor is above 0.
    assert_eq!(exempt.lock().current_limit, 5);
    assert_eq!(catch_all.lock().current_limit, 20);
    let t0 = Instant::now();
    fc.adjust(t0);
    assert_eq!(exempt.lock().current_limit, 5);
    assert_eq!(catch_all.lock().current_limit, 20);

    // The exempt level uses 13 seats and work 4: 20 - 13 = 7 left over the floors (0 and
    // 5) but under the recent use (4 and 5): half of work's use above its floor is met.
    let t1 = t0 + Duration::from_secs(1);
    let mut wide = {
        let (tx, rx) = oneshot::channel();
        let start =
            exempt
                .lock()
                .queues
                .start(t1, 0, WorkEstimate::seats(13), Described::default(), tx);
        let queueset::Start::Dispatched(ticket) = start else {
            panic!("exempt requests run at once")
        };
        drop(rx);
        ticket
    };
    let mut four = enqueue(&work, 4, t1);
    let four = four
        .try_recv()
        .expect("a request wider than the level runs alone");
    fc.adjust(t1 + Duration::from_secs(1));
    assert_eq!(exempt.lock().current_limit, 13);
    assert_eq!(work.lock().current_limit, 2);
    assert_eq!(catch_all.lock().current_limit, 5);
    let m = metrics::metrics();
    assert_eq!(m.current_limit.with_label_values(&["exempt"]).get(), 13.0);
    assert_eq!(
        m.demand_high_watermark.with_label_values(&["work"]).get(),
        4.0
    );
    assert_eq!(m.seat_fair_frac.get(), 0.0);

    // The exempt level takes 17: not even the floors fit; every level gets its floor.
    exempt
        .lock()
        .queues
        .finish(t1 + Duration::from_secs(1), &mut wide);
    finish(&work, four);
    let t2 = t1 + Duration::from_secs(2);
    let (tx, _rx) = oneshot::channel();
    let start =
        exempt
            .lock()
            .queues
            .start(t2, 0, WorkEstimate::seats(17), Described::default(), tx);
    assert!(matches!(start, queueset::Start::Dispatched(_)));
    fc.adjust(t2 + Duration::from_secs(1));
    assert_eq!(exempt.lock().current_limit, 17);
    assert_eq!(work.lock().current_limit, 0);
    assert_eq!(catch_all.lock().current_limit, 5);
}
