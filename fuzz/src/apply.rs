//! Server-side apply: an apply configuration (YAML, as `application/apply-patch+yaml` bodies
//! are) merged into a live object through the field manager and the structured-merge crate,
//! under the built-in Deployment schema (first byte `d`: the deduced schema of kinds without
//! one). `<config>\n%%\n<config>`: the first creates the object, the second is applied
//! over it by another manager (without a separator, the same configuration twice).

use std::sync::{Arc, LazyLock};

use apiserver::api::fuzzing::decode_body;
use openapi::OpenApi;
use registry::field_manager::{FieldManager, MergeSchemas, TypedSchema};
use structured_merge::Set;

static DEPLOYMENT: LazyLock<Arc<TypedSchema>> = LazyLock::new(|| {
    MergeSchemas::default().get(
        || Some(Arc::new(OpenApi::new(Vec::new()))),
        "apps",
        "v1",
        "Deployment",
    )
});

static DEDUCED: LazyLock<Arc<TypedSchema>> = LazyLock::new(|| Arc::new(TypedSchema::deduced()));

pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let typed = if mode == b'd' { &DEDUCED } else { &DEPLOYMENT };
    let manager = FieldManager {
        typed: Arc::clone(typed),
        api_version: "apps/v1".into(),
        subresource: "",
        ignored: Set::new(),
    };
    // Live objects are what an apply made, as the server stores them: only the
    // configurations come from the request.
    let (first, second) = crate::split_two(rest).unwrap_or((rest, rest));
    let Ok(first) = decode_body("application/yaml", first) else {
        return;
    };
    let live = match manager.apply(None, &first, "kubectl", false) {
        Ok(live) => live,
        Err(e) => return crate::assert_client_error("apply", &e),
    };
    let Ok(second) = decode_body("application/yaml", second) else {
        return;
    };
    // Another manager's apply over it conflicts or not, but fails no other way; forced, it
    // takes what it sets.
    for force in [false, true] {
        if let Err(e) = manager.apply(Some(&live), &second, "other", force) {
            crate::assert_client_error("apply over a live object", &e);
        }
    }
}
