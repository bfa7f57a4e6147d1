//! PATCH bodies: JSON patch, merge patch and strategic merge patch (under a built-in kind's
//! patch metadata), applied to an object. The first byte picks the type (`j` JSON patch, `m`
//! merge patch, `p` strategic on a Pod, else strategic on a Deployment); the rest is the patch,
//! or `<object>\n%%\n<patch>` to patch another object than the default Deployment.

use registry::patch::{apply_patch, PatchType};
use serde_json::{json, Value};

pub fn default_object() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
            "finalizers": ["a/b"]},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "containers": [{"name": "nginx", "image": "nginx:1",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "env": [{"name": "A", "value": "1"}]}],
                "volumes": [{"name": "data", "emptyDir": {}}]}}}
    })
}

pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (original, patch) = match crate::split_two(rest) {
        // Stored objects are JSON objects; a patch of anything else is the server's own error
        // (500), never reached from a request.
        Some((object, patch)) => match serde_json::from_slice::<Value>(object) {
            Ok(object @ Value::Object(_)) => (object, patch),
            _ => return,
        },
        None => (default_object(), rest),
    };
    let (kind, schema) = match mode {
        b'j' => (PatchType::Json, None),
        b'm' => (PatchType::Merge, None),
        b'p' => (
            PatchType::Strategic,
            openapi::patch_meta::patch_schema("", "v1", "Pod"),
        ),
        _ => (
            PatchType::Strategic,
            openapi::patch_meta::patch_schema("apps", "v1", "Deployment"),
        ),
    };
    match apply_patch(kind, &original, patch, schema) {
        Ok(patched) => {
            // A merge patch says what the object ends as: applying it again changes nothing.
            if kind == PatchType::Merge {
                let twice = apply_patch(kind, &patched, patch, None)
                    .unwrap_or_else(|e| panic!("merge patch refused the second time: {e}"));
                assert_eq!(twice, patched, "merge patch is idempotent");
            }
        }
        Err(e) => crate::assert_client_error("patch", &e),
    }
}
