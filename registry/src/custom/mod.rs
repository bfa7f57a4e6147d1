//! Custom resources: CustomResourceDefinitions and the resources they define, served by the
//! same generic Store as every built-in.

pub mod cel;
pub mod schema;
