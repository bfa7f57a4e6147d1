//! The generic registry: one Store per resource, parametrised by a Strategy, giving every
//! resource upstream's create / get / list / update / patch / delete / deletecollection /
//! watch semantics over the storage layer. Knows nothing of HTTP.

pub mod admission;
pub mod audit;
pub mod auth;
mod bootstrap;
pub mod catalogue;
pub mod cron;
pub mod error;
pub mod eviction;
pub mod field_manager;
pub mod field_validation;
pub mod go_fmt;
pub mod object;
pub mod options;
pub mod patch;
pub mod projection;
pub mod quota;
pub mod rbac;
mod resources;
pub mod selector;
pub mod service;
pub mod serviceaccount;
pub mod store;
pub mod strategy;
pub mod types;
pub mod validation;
pub mod warning;
pub mod wire;

pub use catalogue::{Catalogue, ResourceInfo, Verb};
pub use error::{Cause, Qualified, RegistryError, Result, Status};
pub use resources::Registry;
pub use store::update::Subresource;
pub use store::{DeleteOutcome, DeletePlan, Store, WatchEvent, WatchEventType};
