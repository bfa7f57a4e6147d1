use super::*;
use futures::stream;
use serde_json::json;

/// A level `name` of one seat and one queue of one, for user `t`.
fn tiny(name: &str) -> (Arc<FlowControl>, Arc<Classified>) {
    // 6 server seats: the tiny level's one share against catch-all's five gives it one.
    let flow_control = FlowControl::new(6, None);
    let level = json!({"metadata": {"name": name, "uid": "u"}, "spec": {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 1, "lendablePercent": 0, "borrowingLimitPercent": 0,
        "limitResponse": {"type": "Queue", "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 1}}}}});
    let schema = json!({"metadata": {"name": name}, "spec": {
        "priorityLevelConfiguration": {"name": name}, "matchingPrecedence": 10,
        "rules": [{"subjects": [{"kind": "User", "user": {"name": "t"}}],
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}]}]}});
    flow_control.reload(&[schema], &[level]);
    let (user, action) = crate::flow_control::tests::user_t();
    let classified = flow_control.classify(&user, &action).expect("classified");
    assert_eq!(classified.level.name, name);
    assert_eq!(classified.level.lock().current_limit, 1);
    (flow_control, Arc::new(classified))
}

fn labels(classified: &Classified) -> [&str; 2] {
    [
        classified.level.name.as_str(),
        classified.schema.name.as_str(),
    ]
}

async fn admit_one(
    fc: &Arc<FlowControl>,
    classified: &Classified,
    wait: Duration,
) -> Result<Ticket, Rejection> {
    let work = width::WorkEstimate::seats(1);
    let labels = labels(classified);
    admit(fc, classified, work, Described::default(), wait, &labels).await
}

/// Starts a request that waits in the queue (the level's seat being taken).
async fn queue_one(
    fc: &Arc<FlowControl>,
    classified: &Arc<Classified>,
) -> tokio::task::JoinHandle<Result<Ticket, Rejection>> {
    let (f, c) = (fc.clone(), classified.clone());
    let task = tokio::spawn(async move { admit_one(&f, &c, Duration::from_secs(5)).await });
    while classified.level.lock().queues.waiting() == 0 {
        tokio::task::yield_now().await;
    }
    task
}

#[tokio::test]
async fn a_full_queue_and_a_long_wait_are_refused() {
    let (fc, classified) = tiny("tiny-refused");
    let mut first = admit_one(&fc, &classified, Duration::from_secs(5))
        .await
        .expect("runs at once");
    // The second waits in the one queue; a third finds it full.
    let waiting = queue_one(&fc, &classified).await;
    assert!(matches!(
        admit_one(&fc, &classified, Duration::from_secs(5)).await,
        Err(Rejection::QueueFull)
    ));
    // The first ends: the second gets the seat.
    {
        let mut state = classified.level.lock();
        state.queues.finish(Instant::now(), &mut first);
        state.dispatch(Instant::now());
    }
    let mut second = waiting.await.expect("task").expect("dispatched");
    // A request that waits past its limit is refused and leaves the queue.
    assert!(matches!(
        admit_one(&fc, &classified, Duration::from_millis(30)).await,
        Err(Rejection::TimeOut)
    ));
    assert_eq!(classified.level.lock().queues.waiting(), 0);
    let mut state = classified.level.lock();
    state.queues.finish(Instant::now(), &mut second);
    assert!(state.queues.is_idle());
}

#[tokio::test]
async fn a_waiter_whose_client_leaves_is_dequeued_and_counted() {
    let (fc, classified) = tiny("tiny-gone");
    let labels = labels(&classified);
    let m = metrics();
    let mut first = admit_one(&fc, &classified, Duration::from_secs(5))
        .await
        .expect("runs at once");
    let gone = queue_one(&fc, &classified).await;
    assert_eq!(m.inqueue.with_label_values(&labels).get(), 1);
    assert_eq!(m.inqueue_seats.with_label_values(&labels).get(), 1);
    // Every request of a queuing level is enqueued first (the first one dispatched at once).
    assert_eq!(
        m.queue_length.with_label_values(&labels).get_sample_count(),
        2
    );
    // The server drops the request's future when its client goes away.
    gone.abort();
    assert!(gone.await.is_err_and(|e| e.is_cancelled()));
    assert_eq!(classified.level.lock().queues.waiting(), 0, "left at once");
    assert_eq!(m.inqueue.with_label_values(&labels).get(), 0);
    assert_eq!(m.inqueue_seats.with_label_values(&labels).get(), 0);
    let timed_out = m
        .rejected
        .with_label_values(&[labels[0], labels[1], "time-out"])
        .get();
    assert_eq!(
        timed_out, 1,
        "counted as upstream counts a context ended in the queue"
    );
    let waited = m
        .wait
        .with_label_values(&[labels[0], labels[1], "true"])
        .get_sample_count();
    assert_eq!(waited, 1);
    // The seat is not held by the one that left: the next request gets it once freed.
    {
        let mut state = classified.level.lock();
        state.queues.finish(Instant::now(), &mut first);
        state.dispatch(Instant::now());
        assert!(state.queues.is_idle());
    }
    let mut next = admit_one(&fc, &classified, Duration::from_secs(1))
        .await
        .expect("runs at once");
    classified
        .level
        .lock()
        .queues
        .finish(Instant::now(), &mut next);
}

#[tokio::test]
async fn a_watch_holds_its_seats_until_its_ready_events_are_taken() {
    let (fc, classified) = tiny("tiny-watch");
    let labels = labels(&classified);
    let ticket = admit_one(&fc, &classified, Duration::from_secs(1))
        .await
        .expect("runs at once");
    let executing = Executing::new(&fc, &classified.level, ticket, &labels, "readOnly", true);
    // Three initial events ready at once, then the live stream, which waits.
    let events =
        stream::iter(["a\n", "b\n", "c\n"].map(|e| Ok::<_, std::io::Error>(e.to_string())))
            .chain(stream::pending());
    let response = Response::new(Body::from_stream(events));
    let response = hold_until_initialised(response, executing);
    assert_eq!(classified.level.lock().queues.seats_in_use(), 1);
    let mut body = response.into_body().into_data_stream();
    for _ in 0..3 {
        assert!(body.next().await.is_some_and(|c| c.is_ok()));
        assert_eq!(
            classified.level.lock().queues.seats_in_use(),
            1,
            "held while initial events are sent"
        );
    }
    assert!(futures::poll!(body.next()).is_pending());
    assert_eq!(classified.level.lock().queues.seats_in_use(), 0);
    let m = metrics();
    assert_eq!(m.executing_requests.with_label_values(&labels).get(), 0);
    let initialised = m
        .execution
        .with_label_values(&[labels[0], labels[1], "watch"])
        .get_sample_count();
    assert_eq!(initialised, 1);
}

#[test]
fn wait_limits_are_a_quarter_of_the_deadline() {
    let fc = FlowControl::new(600, Some(Duration::from_secs(60)));
    assert_eq!(wait_limit(&fc, &None, false), Duration::from_secs(15));
    assert_eq!(
        wait_limit(&fc, &Some(Duration::from_secs(8)), false),
        Duration::from_secs(2)
    );
    assert_eq!(wait_limit(&fc, &None, true), DEFAULT_WAIT_LIMIT);
    let fc = FlowControl::new(600, Some(Duration::from_secs(600)));
    assert_eq!(wait_limit(&fc, &None, false), MAX_WAIT_LIMIT);
}
