//! Request bodies: JSON, YAML and (by media type) protobuf, as create and update read them.
//! The first byte picks the Content-Type: `y` YAML, `p` protobuf, `x` an unsupported type,
//! anything else JSON.

use apiserver::api::fuzzing::decode_body;

pub fn run(data: &[u8]) {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let content_type = match mode {
        b'y' => "application/yaml",
        b'p' => "application/vnd.kubernetes.protobuf",
        b'x' => "text/plain",
        _ => "application/json; charset=utf-8",
    };
    match decode_body(content_type, body) {
        Ok(value) => {
            assert!(value.is_object(), "a decoded body is an object");
            // What was decoded is plain JSON: it encodes and reads back the same.
            let encoded = serde_json::to_vec(&value).expect("a JSON value encodes");
            let again = decode_body("application/json", &encoded).expect("re-decodes");
            assert_eq!(value, again, "decoding is stable");
        }
        Err(e) => crate::assert_client_error("body", &e),
    }
}
