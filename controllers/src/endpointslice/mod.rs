//! The EndpointSlice controller (upstream's pkg/controller/endpointslice) and what it shares
//! with the Endpoints controller: which pods a Service selects and how they become endpoints.

mod controller;
pub mod pods;
mod reconcile;

pub use controller::{EndpointSliceController, EndpointSliceControllerConfig, EndpointSliceError};
pub use reconcile::{LABEL_MANAGED_BY, LABEL_SERVICE_NAME, MANAGED_BY, MAX_ENDPOINTS_PER_SLICE};
