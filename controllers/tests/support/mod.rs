//! The client tests' harness (a registry over a real backend whose watches can be cut or
//! slowed, and which counts the pods ever created: client/tests/support), and what the Job,
//! CronJob and TTL tests share.

#![allow(dead_code)]

#[path = "../../../client/tests/support/mod.rs"]
mod client_support;

pub mod batch;

pub use client_support::*;
