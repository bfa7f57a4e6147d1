//! CustomResourceDefinitions (upstream's apiextensions-apiserver): definition validation,
//! structural schemas with pruning, defaulting and validation, CEL rules, and the installer
//! that serves each definition's versions through the registry's generic Store, as every
//! built-in is served.

pub mod cel;
pub mod conditions;
pub mod conversion;
pub mod definition;
mod installer;
pub mod schema;
mod served;
mod strategy;
mod validate_conversion;
mod validate_definition;

pub use conversion::ConversionWebhook;
pub use definition::{Definition, CLEANUP_FINALIZER};
pub use installer::Installer;
pub use served::{served_versions, ServedVersion};
pub use strategy::{CustomResourceStrategy, DefinitionStrategy};
pub use validate_definition::{
    validate as validate_definition, validate_update as validate_definition_update,
};

use registry::Registry;

/// Serves `customresourcedefinitions` with their strategy (definition validation, the
/// cleanup finalizer on delete). The registry installs every built-in with its own or the
/// generic strategy; this replaces that Store through the registry's extension point, and
/// must run before the server takes requests.
pub fn install(registry: &Registry) {
    match registry
        .catalogue()
        .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    {
        Some(info) => {
            registry.install_with(info, Box::new(DefinitionStrategy));
        }
        None => tracing::warn!("the catalogue has no customresourcedefinitions"),
    }
}
