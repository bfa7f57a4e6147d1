//! Where writes meet server-side field validation: bodies of create and update (and of the
//! scale subresource, as a Scale), and the results of patches.

use super::Store;
use crate::error::Result;
use crate::field_validation::Written;
use crate::object::Object;
use crate::options::WriteOptions;

impl Store {
    /// A create or update body, or (`patched`) the result of applying a patch.
    pub(super) fn check_fields(
        &self,
        obj: &mut Object,
        opts: &WriteOptions,
        patched: bool,
    ) -> Result<()> {
        let written = Written {
            group: &self.info.group,
            version: &self.info.version,
            kind: &self.info.kind,
            patched,
        };
        self.fields.validate(&written, obj, opts)
    }

    /// A Scale sent to, or patched through, the scale subresource.
    pub(super) fn check_scale_fields(
        &self,
        scale: &mut Object,
        opts: &WriteOptions,
        patched: bool,
    ) -> Result<()> {
        let written = Written {
            group: "autoscaling",
            version: "v1",
            kind: "Scale",
            patched,
        };
        self.fields.validate(&written, scale, opts)
    }
}
