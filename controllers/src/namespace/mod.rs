//! The namespace controller (upstream's NamespaceController with its
//! NamespacedResourcesDeleter): once a namespace is deleting, it removes every namespaced
//! object in it, resource by resource, keeps the namespace's status conditions telling how far
//! that got, and when nothing is left takes the `kubernetes` finalizer off through the
//! `finalize` subresource so the namespace itself can go.
//!
//! ```ignore
//! let controller = NamespaceController::new(registry, NamespaceControllerConfig::default())?;
//! tokio::spawn(controller.run(stop.clone()));
//! ```

mod conditions;
mod config;
mod content;
mod controller;
mod deleter;
mod estimate;
mod resources;

pub use conditions::{
    CONTENT_FAILURE, CONTENT_REMAINING, DISCOVERY_FAILURE, FINALIZERS_REMAINING,
    GROUP_VERSION_PARSING_FAILURE,
};
pub use config::NamespaceControllerConfig;
pub use controller::{NamespaceController, NamespaceControllerError};

/// The spec finalizer this controller owns: a namespace keeps it until its content is gone.
pub const FINALIZER_KUBERNETES: &str = "kubernetes";
