//! AlwaysAdmit (upstream's plugin/pkg/admission/admit, deprecated there): admits everything.
//! It changes nothing and refuses nothing, so it claims no request: Stores keep their plain
//! write paths with it on.

use std::sync::Arc;

use super::{Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::Registry;

pub(super) fn build(_: &Registry) -> Arc<dyn Plugin> {
    Arc::new(AlwaysAdmit)
}

struct AlwaysAdmit;

impl Plugin for AlwaysAdmit {
    fn name(&self) -> &'static str {
        "AlwaysAdmit"
    }

    fn handles(&self, _: &ResourceInfo, _: Operation, _: &str) -> bool {
        false
    }
}
