//! Encryption at rest through the store on both backends: the backend holds only ciphertext
//! with upstream's prefix while get, list, guaranteed update, delete, watch and the watch
//! cache see plaintext; a value read through an older key is written again even unchanged; a
//! value no key opens is an internal error naming its key, never a panic.

mod support;

use std::sync::Arc;

use futures::StreamExt;
use storage::backend::{KeyRange, RangeRequest};
use storage::encryption::{EncryptionConfig, Routes};
use storage::{
    Cacher, CacherConfig, EventKind, Interface, KvStore, ListOptions, Preconditions, ReadRevision,
    StorageError, Update, UpdateOptions, WatchOptions,
};
use support::{data_of, object, take, Harness};

test_support::both_backends!(
    crate::support::Harness;
    every_path_sees_plaintext_and_the_backend_ciphertext,
    values_read_through_an_older_key_are_rewritten,
    undecryptable_values_are_internal_errors,
);

const KEY1: &str = "c2VjcmV0IGlzIHNlY3VyZSwgc2VjcmV0IGlzIHNhZmU=";
const KEY2: &str = "YW5vdGhlciBrZXksIGFub3RoZXIgZGF5LCBmaW5lISE=";

/// A store whose `/things` hold `things` of group `example.com`, encrypted by `providers`.
fn encrypted(h: &Harness, providers: &str) -> KvStore {
    let yaml = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [things.example.com]\n    providers: {providers}\n"
    );
    let config = EncryptionConfig::parse(yaml.as_bytes(), "test").expect("config");
    let routes = Arc::new(Routes::new(config));
    let store = KvStore::new(h.backend.clone(), "/registry").with_encryption(routes);
    store.route_resource("/things", "example.com", "things");
    store.route_resource("/plain", "", "configmaps");
    store
}

fn gcm(name: &str, key: &str) -> String {
    format!("{{aesgcm: {{keys: [{{name: {name}, secret: \"{key}\"}}]}}}}")
}

fn cbc(name: &str, key: &str) -> String {
    format!("{{aescbc: {{keys: [{{name: {name}, secret: \"{key}\"}}]}}}}")
}

async fn raw(h: &Harness, key: &str) -> Vec<u8> {
    let resp = h
        .backend
        .range(RangeRequest {
            range: Some(KeyRange::key(&format!("/registry{key}"))),
            ..Default::default()
        })
        .await
        .expect("range");
    resp.kvs
        .first()
        .map(|kv| kv.value.to_vec())
        .unwrap_or_default()
}

fn write(value: bytes::Bytes) -> impl FnMut(Option<&storage::KeyValue>) -> storage::Result<Update> {
    move |_| Ok(Update::Write(value.clone()))
}

fn recursive() -> ListOptions {
    ListOptions {
        recursive: true,
        ..Default::default()
    }
}

async fn every_path_sees_plaintext_and_the_backend_ciphertext(h: &Harness) {
    let store = encrypted(h, &format!("[{}]", gcm("key1", KEY1)));
    let cache = Cacher::new(store.clone(), "/things/", CacherConfig::default());
    let start = store.current_revision().await.expect("revision");
    let mut watch = store
        .watch(
            "/things/",
            WatchOptions {
                revision: start,
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .expect("watch");

    let created = store
        .create("/things/a/x", object("x", "u1", "hidden-one"))
        .await
        .expect("create");
    assert_eq!(data_of(&created.value), "hidden-one");
    store
        .create("/plain/a/c", object("c", "u2", "visible"))
        .await
        .expect("create plain");
    let stored = raw(h, "/things/a/x").await;
    assert!(stored.starts_with(b"k8s:enc:aesgcm:v1:key1:"), "{stored:?}");
    assert!(!stored.windows(10).any(|w| w == b"hidden-one"));
    assert!(raw(h, "/plain/a/c").await.starts_with(b"{"));

    let got = store
        .get("/things/a/x", ReadRevision::Latest)
        .await
        .expect("get");
    assert_eq!(data_of(&got.value), "hidden-one");
    let only_x: storage::Predicate = Arc::new(|kv| data_of(&kv.value) == "hidden-one");
    let listed = store
        .get_list(
            "/things/",
            ListOptions {
                predicate: Some(only_x),
                ..recursive()
            },
        )
        .await
        .expect("list");
    assert_eq!(listed.items.len(), 1, "the predicate saw plaintext");

    let updated = store
        .guaranteed_update(
            "/things/a/x",
            UpdateOptions {
                preconditions: Preconditions {
                    uid: Some("u1".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
            &mut write(object("x", "u1", "hidden-two")),
        )
        .await
        .expect("update with a uid precondition on plaintext");
    assert_eq!(data_of(&updated.value), "hidden-two");
    assert!(raw(h, "/things/a/x")
        .await
        .starts_with(b"k8s:enc:aesgcm:v1:key1:"));

    let events = take(&mut watch, 2).await;
    assert_eq!(events[0].kind, EventKind::Added);
    assert_eq!(data_of(&events[0].value), "hidden-one");
    assert_eq!(data_of(&events[1].value), "hidden-two");
    assert_eq!(
        events[1].prev_value.as_deref().map(data_of).as_deref(),
        Some("hidden-one")
    );

    // The watch cache holds plaintext: its own list, and its watchers.
    let mut cached_watch = cache
        .watch(
            "/things/",
            WatchOptions {
                revision: updated.mod_revision,
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .expect("cached watch");
    let cached = cache
        .get_list(
            "/things/",
            ListOptions {
                revision: ReadRevision::NotOlderThan(updated.mod_revision),
                ..recursive()
            },
        )
        .await
        .expect("cached list");
    assert_eq!(data_of(&cached.items[0].value), "hidden-two");

    let deleted = store
        .delete(
            "/things/a/x",
            &Preconditions {
                uid: Some("u1".into()),
                ..Default::default()
            },
            None,
        )
        .await
        .expect("delete");
    assert_eq!(data_of(&deleted.value), "hidden-two");
    let gone = take(&mut cached_watch, 1).await;
    assert_eq!(gone[0].kind, EventKind::Deleted);
    assert_eq!(data_of(&gone[0].value), "hidden-two");
    let gone = take(&mut watch, 1).await;
    assert_eq!(data_of(&gone[0].value), "hidden-two");
}

async fn values_read_through_an_older_key_are_rewritten(h: &Harness) {
    let old = encrypted(h, &format!("[{}]", gcm("key1", KEY1)));
    old.create("/things/a/y", object("y", "u", "same"))
        .await
        .expect("create");
    // Unchanged under the writing key: nothing is written.
    let kept = old
        .guaranteed_update(
            "/things/a/y",
            UpdateOptions::default(),
            &mut write(object("y", "u", "same")),
        )
        .await
        .expect("update");
    let before = kept.mod_revision;
    let kept = old
        .guaranteed_update(
            "/things/a/y",
            UpdateOptions::default(),
            &mut write(object("y", "u", "same")),
        )
        .await
        .expect("update");
    assert_eq!(kept.mod_revision, before);

    let rotated = encrypted(
        h,
        &format!("[{}, {}]", cbc("key2", KEY2), gcm("key1", KEY1)),
    );
    let got = rotated
        .get("/things/a/y", ReadRevision::Latest)
        .await
        .expect("old key reads");
    assert_eq!(data_of(&got.value), "same");
    let rewritten = rotated
        .guaranteed_update(
            "/things/a/y",
            UpdateOptions::default(),
            &mut write(object("y", "u", "same")),
        )
        .await
        .expect("update");
    assert!(
        rewritten.mod_revision > before,
        "a stale value is written even unchanged"
    );
    assert!(raw(h, "/things/a/y")
        .await
        .starts_with(b"k8s:enc:aescbc:v1:key2:"));
    // Now current: unchanged writes nothing again.
    let again = rotated
        .guaranteed_update(
            "/things/a/y",
            UpdateOptions::default(),
            &mut write(object("y", "u", "same")),
        )
        .await
        .expect("update");
    assert_eq!(again.mod_revision, rewritten.mod_revision);
}

/// The failure to read `/things/a/lost`, as upstream reports it.
fn expect_internal(e: StorageError) {
    match e {
        StorageError::Internal(message) => {
            assert!(
                message.contains(r#"unable to transform key "/registry/things/a/lost""#),
                "{message}"
            );
            assert!(message.contains("no matching key was found"), "{message}");
        }
        other => panic!("not an internal error: {other}"),
    }
}

async fn latest_reads_are_internal_errors(store: &impl Interface) {
    expect_internal(
        store
            .get("/things/a/lost", ReadRevision::Latest)
            .await
            .unwrap_err(),
    );
    expect_internal(store.get_list("/things/", recursive()).await.unwrap_err());
}

async fn undecryptable_values_are_internal_errors(h: &Harness) {
    let writer = encrypted(h, &format!("[{}]", gcm("key1", KEY1)));
    writer
        .create("/things/a/lost", object("lost", "u", "x"))
        .await
        .expect("create");
    let reader = encrypted(h, &format!("[{}]", gcm("key2", KEY2)));
    reader
        .create("/things/a/fine", object("fine", "u", "y"))
        .await
        .expect("create");
    // The store's latest reads report the failure.
    latest_reads_are_internal_errors(&reader).await;
    expect_internal(
        reader
            .guaranteed_update(
                "/things/a/lost",
                UpdateOptions::default(),
                &mut write(object("lost", "u", "z")),
            )
            .await
            .unwrap_err(),
    );
    // The watch cache leaves it out and serves the rest.
    let cache = Cacher::new(reader.clone(), "/things/", CacherConfig::default());
    let now = reader.current_revision().await.expect("revision");
    let cached = cache
        .get_list(
            "/things/",
            ListOptions {
                revision: ReadRevision::NotOlderThan(now),
                ..recursive()
            },
        )
        .await
        .expect("cached list");
    let names: Vec<String> = cached.items.iter().map(|kv| kv.key.clone()).collect();
    assert_eq!(names, vec!["/things/a/fine".to_string()]);
    // Reads at the latest revision still go to the store while the cache lacks an object it
    // could not read, and report why.
    latest_reads_are_internal_errors(&cache).await;
    // A raw watch reports the failure as an error, not a panic.
    let mut watch = reader
        .watch(
            "/things/",
            WatchOptions {
                revision: now,
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .expect("watch");
    writer
        .guaranteed_update(
            "/things/a/lost",
            UpdateOptions::default(),
            &mut write(object("lost", "u", "w")),
        )
        .await
        .expect("writer updates");
    let next = tokio::time::timeout(std::time::Duration::from_secs(10), watch.next())
        .await
        .expect("an event");
    assert!(
        matches!(next, Some(Err(StorageError::Internal(_)))),
        "{next:?}"
    );
}
