//! The Endpoints controller (upstream's pkg/controller/endpoint): every Service with a
//! selector gets an Endpoints object of the same name, its subsets the selected pods'
//! addresses (ready ones in `addresses`, others in `notReadyAddresses`) grouped by the ports
//! they serve.

mod controller;

pub use controller::{EndpointsController, EndpointsControllerConfig, EndpointsError};
