//! The controllers of CustomResourceDefinitions (upstream's apiextensions-apiserver
//! controllers): serving a definition's resources, accepting its names and establishing it,
//! and deleting its custom resources when it is deleted. As upstream, they run on every
//! server (each serves what the definitions define), not only on the elected leader.

mod cleanup;
mod controller;
mod naming;
mod registration;

pub use controller::{DefinitionController, DefinitionControllerError};
pub use registration::ApiServiceRegistration;
