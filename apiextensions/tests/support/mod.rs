//! The registry's own test harness (a registry over the embedded store or a real etcd, with
//! schema validation), serving CustomResourceDefinitions with their strategy as the server
//! does.

#![allow(dead_code, unused_imports)]

#[path = "../../../registry/tests/support/mod.rs"]
mod registry_support;

use std::ops::Deref;

pub use registry_support::{delete, list, write};
use test_support::{FromBackend, TestBackend};

pub struct Harness(registry_support::Harness);

impl FromBackend for Harness {
    async fn from_backend(test_backend: TestBackend) -> Self {
        let inner = registry_support::Harness::from_backend(test_backend).await;
        apiextensions::install(&inner.registry);
        Self(inner)
    }
}

impl Deref for Harness {
    type Target = registry_support::Harness;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}
