use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use registry::WatchEventType;
use serde_json::json;

use super::*;
use crate::informer::fake::{event, list_of, Fake, Script};
use crate::informer::{DeletedFinalStateUnknown, DeltaObject, InformerConfig, ReflectorConfig};

fn config() -> InformerConfig {
    InformerConfig {
        reflector: ReflectorConfig {
            initial_backoff: Duration::from_millis(10),
            ..Default::default()
        },
    }
}

/// An informer that lists `items` and then hears `events`, once started.
fn informer(items: Vec<Value>, events: Vec<(WatchEventType, Value)>) -> SharedInformer {
    let fake = Fake::default();
    fake.script_list(Ok(list_of(10, items)));
    fake.script_watch(Ok(Script {
        events: events
            .into_iter()
            .map(|(kind, obj)| event(kind, obj))
            .collect(),
        then_close: false,
    }));
    SharedInformer::new(Arc::new(fake), config())
}

/// An informer whose first list never succeeds: it never syncs.
fn never_synced() -> SharedInformer {
    SharedInformer::new(Arc::new(Fake::default()), config())
}

fn object(name: &str, rv: u32, uid: &str, labels: Value, owner: Option<(&str, &str)>) -> Value {
    let owners: Vec<Value> = owner
        .map(|(kind, uid)| json!({"kind": kind, "name": "web", "uid": uid, "controller": true}))
        .into_iter()
        .collect();
    json!({"metadata": {
        "namespace": "ns", "name": name, "uid": uid, "resourceVersion": rv.to_string(),
        "labels": labels, "ownerReferences": owners,
    }})
}

fn plain(name: &str, rv: u32) -> Value {
    object(name, rv, name, json!({}), None)
}

/// The context of the test controllers: what the syncs and custom handlers saw.
#[derive(Default)]
struct Seen {
    synced: Mutex<Vec<String>>,
    handled: Mutex<Vec<String>>,
}

impl Seen {
    fn synced(&self) -> Vec<String> {
        let mut keys = self.synced.lock().expect("lock").clone();
        keys.sort();
        keys
    }
}

/// A sync that records its key and is done with it.
async fn record(seen: Arc<Seen>, key: String) -> Next {
    seen.synced.lock().expect("lock").push(key);
    Next::Done
}

fn queue(name: &str) -> RateLimitingQueue<String> {
    RateLimitingQueue::with_default_rate_limiter(name)
}

/// Waits (on the paused clock) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Runs `controller` with `record` as its sync, then starts `informers`, so the controller
/// hears every change rather than what is left of them by the time it subscribed; the handle
/// and the token that stops it.
async fn start(
    controller: Controller<Seen, String>,
    informers: &[&SharedInformer],
) -> (tokio::task::JoinHandle<()>, CancellationToken) {
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(stop.clone(), record));
    start_after_subscribed(informers).await;
    (run, stop)
}

async fn start_after_subscribed(informers: &[&SharedInformer]) {
    tokio::time::sleep(Duration::from_millis(10)).await;
    for informer in informers {
        informer.start();
    }
}

async fn stopped(run: tokio::task::JoinHandle<()>, stop: CancellationToken) {
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .expect("run returns once stopped")
        .expect("run");
}

#[tokio::test(start_paused = true)]
async fn primary_changes_queue_their_own_key() {
    let sets = informer(
        vec![plain("a", 1)],
        vec![
            (WatchEventType::Added, plain("b", 11)),
            (WatchEventType::Deleted, plain("a", 12)),
        ],
    );
    let seen = Arc::new(Seen::default());
    let queue = queue("builder_primary");
    let controller = Controller::new("test", seen.clone(), queue.clone())
        .workers(2)
        .primary(&sets, "Set");
    let (run, stop) = start(controller, &[&sets]).await;
    until("both keys synced", || seen.synced().len() >= 2).await;
    // A deleted object's key is synced too (it finds it gone); a key queued twice before its
    // sync is synced once.
    let synced = seen.synced();
    assert!(
        synced == ["ns/a", "ns/b"] || synced == ["ns/a", "ns/a", "ns/b"],
        "{synced:?}"
    );
    stopped(run, stop).await;
    assert!(queue.is_shutting_down(), "the queue is shut down");
}

#[tokio::test(start_paused = true)]
async fn a_deleted_primary_object_queues_its_key_even_from_a_tombstone() {
    let queue = queue("builder_tombstone");
    let controller = Controller::new("test", Arc::new(Seen::default()), queue.clone())
        .primary(&never_synced(), "Set");
    let handler = controller.informers[0].1.as_ref().expect("a handler");
    let tombstone = DeletedFinalStateUnknown {
        key: "ns/gone".into(),
        obj: None,
    };
    handler(
        &controller.context,
        Notification::Delete(DeltaObject::DeletedFinalStateUnknown(tombstone)),
    );
    let last_seen = Arc::new(plain("went", 3));
    handler(
        &controller.context,
        Notification::Delete(DeltaObject::Object(last_seen)),
    );
    assert_eq!(queue.len(), 2);
    assert_eq!(queue.get().await.as_deref(), Some("ns/gone"));
    assert_eq!(queue.get().await.as_deref(), Some("ns/went"));
}

#[tokio::test(start_paused = true)]
async fn owned_objects_queue_the_owner_that_still_controls_them() {
    let sets = informer(vec![object("web", 1, "u1", json!({}), None)], vec![]);
    let owned = vec![
        object("web-1", 2, "p1", json!({}), Some(("Set", "u1"))),
        // Named by the controller reference, but of another kind, or of an older "web".
        object("web-2", 3, "p2", json!({}), Some(("Other", "u1"))),
        object("web-3", 4, "p3", json!({}), Some(("Set", "u0"))),
    ];
    let pods = informer(owned, vec![]);
    let seen = Arc::new(Seen::default());
    // The primary's own changes handled apart, so only the owned ones queue anything.
    let controller = Controller::new("test", seen.clone(), queue("builder_owns"))
        .primary_with(&sets, "Set", |seen: &Seen, n: Notification| {
            let name = n.latest().map(|o| o["metadata"]["name"].to_string());
            seen.handled.lock().expect("lock").extend(name);
        })
        .owns(&pods);
    let (run, stop) = start(controller, &[&sets, &pods]).await;
    until("the owner synced", || !seen.synced().is_empty()).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(seen.synced(), ["ns/web"]);
    assert_eq!(*seen.handled.lock().expect("lock"), ["\"web\""]);
    stopped(run, stop).await;
}

#[test]
#[should_panic(expected = "needs the primary kind first")]
fn owning_without_a_primary_kind_is_refused() {
    let pods = never_synced();
    let _ =
        Controller::new("test", Arc::new(Seen::default()), queue("builder_refused")).owns(&pods);
}

#[tokio::test(start_paused = true)]
async fn watched_objects_queue_what_their_old_and_new_states_map_to() {
    let labelled = |rv, app| object("pod", rv, "p1", json!({"app": app}), None);
    let pods = informer(
        vec![labelled(1, "a")],
        vec![(WatchEventType::Modified, labelled(11, "b"))],
    );
    let seen = Arc::new(Seen::default());
    let controller = Controller::new("test", seen.clone(), queue("builder_watches"))
        .watches(&pods, |_: &Seen, pod: &Value| {
            pod["metadata"]["labels"]["app"].as_str().map(String::from)
        });
    let (run, stop) = start(controller, &[&pods]).await;
    until("both services synced", || seen.synced().len() >= 2).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // The pod left "a" for "b": both look again.
    assert_eq!(seen.synced(), ["a", "b"]);
    stopped(run, stop).await;
}

#[tokio::test(start_paused = true)]
async fn custom_handlers_see_every_notification() {
    let pods = informer(
        vec![plain("a", 1)],
        vec![
            (WatchEventType::Modified, plain("a", 11)),
            (WatchEventType::Deleted, plain("a", 12)),
        ],
    );
    let seen = Arc::new(Seen::default());
    let controller = Controller::new("test", seen.clone(), queue("builder_handles")).handles(
        &pods,
        |seen: &Seen, n: Notification| {
            let what = match n {
                Notification::Add(_) => "add",
                Notification::Update { .. } => "update",
                Notification::Delete(_) => "delete",
            };
            seen.handled.lock().expect("lock").push(what.into());
        },
    );
    let (run, stop) = start(controller, &[&pods]).await;
    until("three notifications", || {
        seen.handled.lock().expect("lock").len() >= 3
    })
    .await;
    assert_eq!(
        *seen.handled.lock().expect("lock"),
        ["add", "update", "delete"]
    );
    // A custom handler queues what it likes: here nothing.
    assert!(seen.synced().is_empty());
    stopped(run, stop).await;
}

#[tokio::test(start_paused = true)]
async fn nothing_is_synced_nor_spawned_before_every_informer_has_synced() {
    let sets = informer(vec![plain("a", 1)], vec![]);
    let claims = never_synced();
    let seen = Arc::new(Seen::default());
    let spawned = Arc::new(AtomicBool::new(false));
    let flag = spawned.clone();
    let controller = Controller::new("test", seen.clone(), queue("builder_unsynced"))
        .primary(&sets, "Set")
        .reads(&claims)
        .spawns(move |_, _| async move { flag.store(true, Ordering::SeqCst) });
    let (run, stop) = start(controller, &[&sets, &claims]).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(seen.synced().is_empty(), "synced before the claims listed");
    assert!(
        !spawned.load(Ordering::SeqCst),
        "spawned before the claims listed"
    );
    stopped(run, stop).await;
}

#[tokio::test(start_paused = true)]
async fn tasks_run_beside_the_workers_until_stop_and_retries_come_back() {
    let sets = informer(vec![plain("a", 1)], vec![]);
    let seen = Arc::new(Seen::default());
    let ended = Arc::new(AtomicBool::new(false));
    let flag = ended.clone();
    let controller = Controller::new("test", seen.clone(), queue("builder_tasks"))
        .primary(&sets, "Set")
        .spawns(move |seen: Arc<Seen>, stop: CancellationToken| async move {
            seen.handled.lock().expect("lock").push("task".into());
            stop.cancelled().await;
            flag.store(true, Ordering::SeqCst);
        });
    let stop = CancellationToken::new();
    // Fails the first time: the key comes back after the rate limiter's backoff.
    let run = tokio::spawn(controller.run(
        stop.clone(),
        |seen: Arc<Seen>, key: String| async move {
            let mut synced = seen.synced.lock().expect("lock");
            synced.push(key);
            if synced.len() == 1 {
                Next::Retry
            } else {
                Next::Done
            }
        },
    ));
    start_after_subscribed(&[&sets]).await;
    until("the retry", || seen.synced().len() >= 2).await;
    assert_eq!(seen.synced(), ["ns/a", "ns/a"]);
    assert_eq!(*seen.handled.lock().expect("lock"), ["task"]);
    assert!(!ended.load(Ordering::SeqCst));
    stopped(run, stop).await;
    assert!(
        ended.load(Ordering::SeqCst),
        "run returned before its task ended"
    );
}
