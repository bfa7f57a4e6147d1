//! Protobuf bodies (`application/vnd.kubernetes.protobuf`): the `k8s\0` envelope, the
//! runtime.Unknown wrapper and the typed message inside, into the object's JSON form.

pub fn run(data: &[u8]) {
    if let Err(e) = apiserver::api::fuzzing::decode_protobuf(data) {
        crate::assert_client_error("protobuf", &e);
    }
}
