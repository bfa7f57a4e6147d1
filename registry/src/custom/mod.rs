//! Custom resources: CustomResourceDefinitions and the resources they define, served by the
//! same generic Store as every built-in.

pub mod cel;
pub mod conditions;
pub mod definition;
mod installer;
pub mod schema;
mod served;
mod strategy;
mod validate_definition;

pub use definition::{Definition, CLEANUP_FINALIZER};
pub use installer::Installer;
pub use served::{served_versions, ServedVersion};
pub use strategy::{CustomResourceStrategy, DefinitionStrategy};
pub use validate_definition::{
    validate as validate_definition, validate_update as validate_definition_update,
};
