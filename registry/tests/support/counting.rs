//! A [`Harness`] over a backend that records what reaches it (storage's test
//! `RecordingBackend`): which paths read the store and which the watch cache serves.

use std::sync::Arc;

use storage::CacherConfig;
use test_support::{FromBackend, TestBackend};

use crate::support::Harness;

#[path = "../../../storage/tests/support/recording.rs"]
mod recording;

pub use recording::RecordingBackend;

pub struct Counted {
    pub h: Harness,
    pub backend: Arc<RecordingBackend>,
}

impl FromBackend for Counted {
    async fn from_backend(test_backend: TestBackend) -> Self {
        let inner = storage::backend::open(&test_backend.etcd_servers(), test_backend.data_dir())
            .await
            .expect("open the test backend");
        let backend = RecordingBackend::new(inner);
        let h = Harness::over(test_backend, backend.clone(), CacherConfig::default()).await;
        Self { h, backend }
    }
}
