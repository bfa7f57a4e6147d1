//! The client machinery, what client-go (and k8s.io/component-helpers) is upstream: informers
//! over the registry's watch streams, called in-process (no HTTP loopback), the workqueue, the
//! worker loop and the controller builder over them, the event recorder, leader election over
//! a Lease, the utilities controllers share, and the scheduling predicates shared by the
//! scheduler and the DaemonSet controller.
pub mod clock;
pub mod component_helpers;
pub mod controller;
pub mod controller_utils;
pub mod events;
pub mod informer;
pub mod leader_election;
pub mod worker;
pub mod workqueue;
