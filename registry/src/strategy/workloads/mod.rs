//! The workload kinds (upstream's pkg/registry/apps/* and pkg/registry/batch/*): the v1
//! defaults clients and controllers rely on, validation with upstream's field paths and
//! messages, and what their status subresources may change.

mod cron_job;
mod daemon_set;
mod deployment;
mod job;
mod job_policies;
mod pod_disruption_budget;
mod pod_template;
mod replica_set;
mod stateful_set;
mod status;
mod template;

pub use cron_job::CronJobStrategy;
pub use daemon_set::DaemonSetStrategy;
pub use deployment::DeploymentStrategy;
pub use job::JobStrategy;
pub use pod_disruption_budget::PodDisruptionBudgetStrategy;
pub use pod_template::PodTemplateStrategy;
pub use replica_set::{ReplicaSetStrategy, ReplicationControllerStrategy};
pub use stateful_set::StatefulSetStrategy;
