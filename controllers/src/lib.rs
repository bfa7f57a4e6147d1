//! Controllers running inside the server: they consume the registry's watch streams directly
//! (no HTTP loopback) through the same informer machinery a client would use.
pub mod apiextensions;
pub mod clock;
pub mod controller_utils;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod endpoints;
pub mod endpointslice;
pub mod events;
pub mod garbage_collector;
pub mod history;
pub mod informer;
pub mod job;
pub mod leader_election;
pub mod namespace;
pub mod node_lifecycle;
pub mod replicaset;
pub mod scheduling;
pub mod service_repair;
pub mod serviceaccount;
pub mod statefulset;
pub mod ttl_after_finished;
pub mod volume;
pub mod worker;
pub mod workqueue;
