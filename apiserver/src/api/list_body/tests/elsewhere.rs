//! The rest of a large list is read and encoded on the low-priority runtime, a few chunks
//! ahead of the connection at most, and no longer once the response is dropped.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use registry::store::ListStream;
use serde_json::json;

use super::{info, streamed_response, Encoding};
use crate::api::list_body::{CHUNK, QUEUED_CHUNKS};
use crate::low_priority::nice;

/// What the endless list's items saw.
#[derive(Default)]
struct Seen {
    /// Items read so far.
    items: AtomicUsize,
    /// The nice value of the thread that read the latest item.
    nice: AtomicI32,
    /// Whether the items' stream was dropped.
    dropped: AtomicBool,
}

struct DropFlag(Arc<Seen>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.dropped.store(true, Ordering::SeqCst);
    }
}

/// A list of 1 KB ConfigMaps that never ends, recording who reads it.
fn endless(seen: Arc<Seen>) -> ListStream {
    let flag = DropFlag(seen.clone());
    let items = futures::stream::iter(0..).map(move |i: u64| {
        let _keep = &flag;
        seen.items.fetch_add(1, Ordering::SeqCst);
        seen.nice.store(nice(), Ordering::SeqCst);
        Ok(json!({"metadata": {"name": format!("cm-{i}")}, "data": {"p": "x".repeat(1024)}}))
    });
    ListStream {
        api_version: "v1".into(),
        kind: "ConfigMapList".into(),
        metadata: Default::default(),
        items: items.boxed(),
    }
}

fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test]
async fn the_rest_of_a_large_list_is_encoded_at_low_priority_and_stops_with_its_reader() {
    let seen = Arc::new(Seen::default());
    let response = streamed_response(endless(seen.clone()), &info("configmaps"), Encoding::Json)
        .await
        .expect("a list response");
    let mut body = response.into_body().into_data_stream();
    let mut received = 0;
    while received < 4 * CHUNK {
        received += body.next().await.expect("more").expect("a chunk").len();
    }
    assert_eq!(seen.nice.load(Ordering::SeqCst), 19);

    // Unread, the encoder stops a few chunks ahead: the chunk hyper holds, the queued ones
    // and the one being filled.
    let ahead = (QUEUED_CHUNKS + 2) * CHUNK;
    let settled = || {
        let before = seen.items.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(200));
        seen.items.load(Ordering::SeqCst) == before
    };
    wait_for("the encoder waiting for its reader", settled);
    let encoded = seen.items.load(Ordering::SeqCst) * 1024;
    assert!(
        encoded <= received + ahead,
        "{encoded} bytes of items read for {received} sent"
    );

    drop(body);
    wait_for("the list dropped with its response", || {
        seen.dropped.load(Ordering::SeqCst)
    });
}
