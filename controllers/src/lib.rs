//! Controllers running inside the server: they consume the registry's watch streams directly
//! (no HTTP loopback) through the same informer machinery a client would use (the `client`
//! crate's informers, workqueue and worker loop).
pub mod apiextensions;
pub mod certificates;
pub mod clusterrole_aggregation;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod endpoints;
pub mod endpointslice;
pub mod garbage_collector;
pub mod history;
pub mod ipaddress;
pub mod job;
pub mod namespace;
pub mod node_lifecycle;
pub mod podautoscaler;
pub mod replicaset;
pub mod resourceclaim;
pub mod resourcequota;
pub mod root_ca_publisher;
pub mod service_repair;
pub mod serviceaccount;
pub mod statefulset;
pub mod ttl_after_finished;
pub mod volume;
