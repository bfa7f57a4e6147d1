//! Service networking in the registry (upstream's pkg/registry/core/service/storage with its
//! ipallocator and portallocator): the ranges cluster IPs and node ports come from, their
//! persisted allocations, and the hooks that take and give them back around Service writes.

mod alloc;
mod allocation;
mod ranges;
mod repair;
mod spec;

pub use alloc::ServiceAllocator;
pub use ranges::{PortRange, ServiceCidr, ServiceNetwork};
pub use repair::{RangeKind, Repair, RepairProblem, REPAIRS_BEFORE_LEAK_CLEANUP};
