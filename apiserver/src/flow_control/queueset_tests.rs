use super::*;
use std::time::{Duration, Instant};

fn config(queues: usize, hand: usize, length: usize) -> QueuingConfig {
    QueuingConfig {
        queues,
        hand_size: hand,
        queue_length_limit: length,
    }
}

fn seats(n: u32) -> WorkEstimate {
    WorkEstimate::seats(n)
}

fn queued<T>(start: Start<T>) -> u64 {
    match start {
        Start::Queued(id, _) => id,
        _ => panic!("not queued"),
    }
}

#[test]
fn dispatches_up_to_the_limit_then_as_seats_come_back() {
    let t0 = Instant::now();
    // Hands of one: a single queue, served first in, first out.
    let mut set = QueueSet::new(config(8, 1, 10), 4, t0);
    for i in 0..6u32 {
        queued(set.start(t0, 7, seats(1), Described::default(), i));
    }
    let mut running: Vec<(u32, Ticket)> = set.dispatch(t0);
    assert_eq!(
        running.iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    assert_eq!(
        (set.seats_in_use(), set.waiting(), set.executing()),
        (4, 2, 4)
    );
    assert!(set.dispatch(t0).is_empty(), "full");
    let (_, mut done) = running.remove(0);
    set.finish(t0 + Duration::from_millis(5), &mut done);
    let next = set.dispatch(t0 + Duration::from_millis(5));
    assert_eq!(next.iter().map(|r| r.0).collect::<Vec<_>>(), vec![4]);
}

#[test]
fn a_full_queue_refuses() {
    let t0 = Instant::now();
    // One queue of 2: the third waiting request is refused.
    let mut set = QueueSet::new(config(1, 1, 2), 1, t0);
    queued(set.start(t0, 1, seats(1), Described::default(), 'a'));
    let _running = set.dispatch(t0);
    queued(set.start(t0, 1, seats(1), Described::default(), 'b'));
    queued(set.start(t0, 1, seats(1), Described::default(), 'c'));
    match set.start(t0, 1, seats(1), Described::default(), 'd') {
        Start::Rejected(Rejection::QueueFull, 'd') => {}
        _ => panic!("not refused"),
    }
    // A Reject level refuses what does not fit at once.
    let mut reject = QueueSet::new(config(0, 0, 0), 2, t0);
    assert!(matches!(
        reject.start(t0, 1, seats(2), Described::default(), 1),
        Start::Dispatched(_)
    ));
    assert!(matches!(
        reject.start(t0, 1, seats(1), Described::default(), 2),
        Start::Rejected(Rejection::ConcurrencyLimit, 2)
    ));
}

#[test]
fn a_light_flow_overtakes_a_heavy_backlog() {
    let t0 = Instant::now();
    // 64 queues, hands of 1 so that the two flows surely have a queue each.
    let mut set = QueueSet::new(config(64, 1, 100), 10, t0);
    let (heavy, light) = (3u64, 5u64);
    for i in 0..20u32 {
        queued(set.start(t0, heavy, seats(10), Described::default(), i));
    }
    let mut running = set.dispatch(t0);
    assert_eq!(running.len(), 1);
    // The heavy flow's lists each take 50 ms.
    let mut now = t0;
    for _ in 0..3 {
        now += Duration::from_millis(50);
        let (_, mut t) = running.remove(0);
        set.finish(now, &mut t);
        running.extend(set.dispatch(now));
    }
    // A light request arrives behind 16 waiting heavy ones; it goes next.
    queued(set.start(now, light, seats(1), Described::default(), 1000));
    now += Duration::from_millis(50);
    let (_, mut t) = running.remove(0);
    set.finish(now, &mut t);
    let next = set.dispatch(now);
    assert_eq!(
        next.first().map(|r| r.0),
        Some(1000),
        "the light flow first"
    );
}

#[test]
fn shortest_queue_of_the_hand_and_cancellation() {
    let t0 = Instant::now();
    let mut set = QueueSet::new(config(16, 4, 5), 1, t0);
    let first = queued(set.start(t0, 99, seats(1), Described::default(), 0));
    let _running = set.dispatch(t0);
    let mut ids = Vec::new();
    for i in 1..=4 {
        ids.push(queued(set.start(t0, 99, seats(1), Described::default(), i)));
    }
    // The flow's four requests spread over its hand's four queues.
    let busy = set
        .dump()
        .queues
        .iter()
        .filter(|q| !q.waiting.is_empty())
        .count();
    assert_eq!(busy, 4);
    assert_eq!(set.cancel(t0, ids[2]), Some(3));
    assert_eq!(set.cancel(t0, ids[2]), None);
    assert_eq!(set.cancel(t0, first), None, "already dispatched");
    assert_eq!(set.waiting(), 3);
}

#[test]
fn final_seats_are_held_for_the_additional_latency() {
    let t0 = Instant::now();
    let mut set = QueueSet::new(config(4, 2, 10), 5, t0);
    let work = WorkEstimate {
        initial_seats: 1,
        final_seats: 3,
        additional_latency: Duration::from_millis(10),
    };
    queued(set.start(t0, 1, work, Described::default(), ()));
    let (_, mut ticket) = set.dispatch(t0).pop().expect("dispatched");
    assert_eq!(set.seats_in_use(), 3);
    assert!(set.end_execution(t0, &mut ticket));
    assert_eq!(set.seats_in_use(), 3);
    set.finish(t0 + Duration::from_millis(10), &mut ticket);
    assert_eq!((set.seats_in_use(), set.executing()), (0, 0));
    // Given back twice: nothing more is freed.
    set.finish(t0 + Duration::from_millis(10), &mut ticket);
    assert_eq!((set.seats_in_use(), set.executing()), (0, 0));
    assert!(set.is_idle());
}

#[test]
fn a_request_wider_than_the_level_runs_alone() {
    let t0 = Instant::now();
    let mut set = QueueSet::new(config(4, 2, 10), 2, t0);
    queued(set.start(t0, 1, seats(5), Described::default(), 'w'));
    assert_eq!(set.dispatch(t0).len(), 1);
    queued(set.start(t0, 1, seats(1), Described::default(), 'n'));
    assert!(set.dispatch(t0).is_empty());
}

#[test]
fn demand_is_integrated_over_time() {
    let t0 = Instant::now();
    let mut set = QueueSet::new(config(4, 2, 10), 2, t0);
    queued(set.start(t0, 1, seats(2), Described::default(), 1));
    let mut running = set.dispatch(t0);
    let t1 = t0 + Duration::from_secs(1);
    let (_, mut t) = running.remove(0);
    set.finish(t1, &mut t);
    let demand = set.take_demand(t0 + Duration::from_secs(2));
    assert!((demand.integral - 2.0).abs() < 1e-9, "{demand:?}");
    assert!((demand.elapsed - 2.0).abs() < 1e-9);
    assert_eq!(demand.high_water, 2.0);
}

fn schema(name: &str) -> Described {
    Described {
        flow_schema: name.into(),
        ..Described::default()
    }
}

#[test]
fn a_full_queue_takes_more_while_seats_are_free() {
    let t0 = Instant::now();
    // A wide head waits for its seats in a queue of one; while the level has a free seat
    // upstream still enqueues (and reports the queue's length), refusing only once all
    // seats are taken.
    let mut set = QueueSet::new(config(1, 1, 1), 2, t0).named("qs-full-while-busy");
    queued(set.start(t0, 1, seats(1), Described::default(), 'a'));
    assert_eq!(set.dispatch(t0).len(), 1);
    queued(set.start(t0, 1, seats(2), schema("wide"), 'w'));
    assert!(
        set.dispatch(t0).is_empty(),
        "one seat is free, two are asked"
    );
    match set.start(t0, 1, seats(1), Described::default(), 'b') {
        Start::Queued(_, length) => assert_eq!(length, 2),
        _ => panic!("refused while a seat was free"),
    }
    let no_room = metrics()
        .no_accommodation
        .with_label_values(&["qs-full-while-busy", "wide"])
        .get();
    assert_eq!(no_room, 1, "the wide head's dispatch attempt is counted");
    // All of a level's seats taken: its full queue refuses.
    let mut busy = QueueSet::new(config(1, 1, 1), 1, t0).named("qs-full");
    queued(busy.start(t0, 1, seats(1), Described::default(), 'a'));
    assert_eq!(busy.dispatch(t0).len(), 1);
    queued(busy.start(t0, 1, seats(1), Described::default(), 'b'));
    assert!(matches!(
        busy.start(t0, 1, seats(1), Described::default(), 'c'),
        Start::Rejected(Rejection::QueueFull, 'c')
    ));
}

#[test]
fn r_is_wound_back_before_it_runs_out_of_range() {
    let t0 = Instant::now();
    let mut set = QueueSet::new(config(2, 1, 10), 1, t0).named("qs-epoch");
    queued(set.start(t0, 0, seats(1), Described::default(), 'a'));
    let _running = set.dispatch(t0);
    queued(set.start(t0, 0, seats(1), Described::default(), 'b'));
    // Pretend the level has run for ages: R just under the threshold, the busy queue ahead.
    set.current_r = HIGH_R - 0.5;
    let busy = set
        .queues
        .iter()
        .position(|q| !q.idle())
        .expect("a busy queue");
    set.queues[busy].next_dispatch_r = HIGH_R;
    set.sync_time(t0 + Duration::from_secs(1));
    assert!(
        set.current_r < HIGH_R - R_DECREMENT + 1.0,
        "{}",
        set.current_r
    );
    let next = set.queues[busy].next_dispatch_r;
    assert!((next - (HIGH_R - R_DECREMENT)).abs() < 1e3, "{next}");
    let advanced = metrics()
        .epoch_advance
        .with_label_values(&["qs-epoch", "true"])
        .get();
    assert_eq!(advanced, 1);
}
