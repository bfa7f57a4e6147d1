//! kube-apiserver's HTTP surface over the registry: the Kubernetes API (discovery, every
//! resource through one generic handler set, Table output, watch streams), health, version.

pub mod aggregator;
pub mod api;
pub mod audit;
pub mod authn;
pub mod authz;
pub mod controllers;
pub mod conversion_webhook;
pub mod custom_resources;
pub mod discovery;
pub mod flow_control;
pub mod health;
pub mod kubeconfig;
mod kubernetes_service;
pub mod limits;
pub mod logging;
mod low_priority;
pub mod metrics;
pub mod metrics_api;
pub mod open_files;
pub mod openapi;
pub mod options;
pub mod policies;
pub mod reviews;
pub mod server;
pub mod service_account_keys;
mod start;
pub mod table;
#[cfg(test)]
mod testing;
pub mod tls;
pub mod version;
pub mod webhooks;

pub use start::{run, StartError};
