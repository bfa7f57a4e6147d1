//! AlwaysDeny (upstream's plugin/pkg/admission/deny, deprecated there, for tests): refuses
//! every create, update and delete with upstream's Forbidden message.

use std::sync::Arc;

use async_trait::async_trait;

use super::{Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::{RegistryError, Result};
use crate::object::Object;
use crate::Registry;

pub(super) fn build(_: &Registry) -> Arc<dyn Plugin> {
    Arc::new(AlwaysDeny)
}

struct AlwaysDeny;

#[async_trait]
impl Plugin for AlwaysDeny {
    fn name(&self) -> &'static str {
        "AlwaysDeny"
    }

    fn handles(&self, _: &ResourceInfo, _: Operation, _: &str) -> bool {
        true
    }

    async fn admit(&self, attrs: &Attributes<'_>, _: Option<&mut Object>) -> Result<()> {
        Err(deny(attrs))
    }

    async fn validate(&self, attrs: &Attributes<'_>, _: Option<&Object>) -> Result<()> {
        Err(deny(attrs))
    }

    fn mutates(&self) -> bool {
        true
    }

    fn validates(&self) -> bool {
        true
    }
}

fn deny(attrs: &Attributes<'_>) -> RegistryError {
    RegistryError::forbidden(
        &attrs.info.qualified_resource(),
        attrs.name,
        "admission control is denying all modifications",
    )
}
