//! What the protobuf e2e tests share: raw HTTP/1.0 requests whose answers are read as bytes,
//! and the API's protobuf definitions to read them with (included by `protobuf.rs` and
//! `protobuf_forms.rs`).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use prost_reflect::{DescriptorPool, DynamicMessage, Value as Pb};
use serde_json::Value;

use super::support::Server;

pub const CLIENT_GO: &str = "application/vnd.kubernetes.protobuf,application/json";
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// An answer's head and its body as bytes. HTTP/1.0, so the body is never chunked: it runs
/// to the end of the connection.
pub fn raw(s: &Server, path: &str, accept: &str) -> (String, Vec<u8>) {
    request(s, "GET", path, accept)
}

pub fn request(s: &Server, method: &str, path: &str, accept: &str) -> (String, Vec<u8>) {
    send(s, method, path, accept, ("application/json", b""))
}

/// A request with a body of a content type.
pub fn send(
    s: &Server,
    method: &str,
    path: &str,
    accept: &str,
    (content_type, body): (&str, &[u8]),
) -> (String, Vec<u8>) {
    let mut stream = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let head = format!(
        "{method} {path} HTTP/1.0\r\nHost: localhost\r\nAccept: {accept}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("send");
    stream.write_all(body).expect("send the body");
    let mut all = Vec::new();
    let _ = stream.read_to_end(&mut all);
    let split = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&all[..split]).into_owned();
    (head, all[split + 4..].to_vec())
}

pub fn pool() -> DescriptorPool {
    DescriptorPool::decode(&include_bytes!(concat!(env!("OUT_DIR"), "/kubernetes.fds"))[..])
        .expect("the descriptor set")
}

pub fn text(message: &DynamicMessage, field: &str) -> String {
    match message.get_field_by_name(field).as_deref() {
        Some(Pb::String(s)) => s.clone(),
        other => panic!("{field}: {other:?}"),
    }
}

/// The envelope's apiVersion and kind, read with the definitions alone.
pub fn envelope_type(body: &[u8]) -> (String, String) {
    let envelope = body.strip_prefix(b"k8s\0").expect("the magic");
    let unknown = DynamicMessage::decode(
        pool()
            .get_message_by_name("apimachinery.pkg.runtime.Unknown")
            .expect("Unknown"),
        envelope,
    )
    .expect("an Unknown");
    match unknown.get_field_by_name("typeMeta").as_deref() {
        Some(Pb::Message(t)) => (text(t, "apiVersion"), text(t, "kind")),
        other => panic!("typeMeta: {other:?}"),
    }
}

/// The JSON answer without its null members: protobuf has no null (a nil pointer or slice is
/// not written), and Go's JSON would not write them either (`omitempty`); the stored pod
/// carries one (`spec.initContainers`).
pub fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

/// The status code of an answer's head.
pub fn code(head: &str) -> u16 {
    head.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

pub const POM: &str = "as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
pub const POM_LIST: &str = "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// The first event of a protobuf watch's body: its type and its object's whole body.
pub fn first_watch_event(body: &[u8]) -> (String, Vec<u8>) {
    let length = u32::from_be_bytes(body[..4].try_into().expect("a length")) as usize;
    let event = DynamicMessage::decode(
        pool()
            .get_message_by_name("apimachinery.pkg.apis.meta.v1.WatchEvent")
            .expect("WatchEvent"),
        &body[4..4 + length],
    )
    .expect("a WatchEvent");
    let object = match event.get_field_by_name("object").as_deref() {
        Some(Pb::Message(extension)) => match extension.get_field_by_name("raw").as_deref() {
            Some(Pb::Bytes(raw)) => raw.to_vec(),
            other => panic!("raw: {other:?}"),
        },
        other => panic!("object: {other:?}"),
    };
    (text(&event, "type"), object)
}

/// The message (its full protobuf name) inside a protobuf answer's envelope, read with the
/// definitions alone: independently of the server's own decoder.
pub fn message_of(body: &[u8], message: &str) -> DynamicMessage {
    let envelope = DynamicMessage::decode(
        pool()
            .get_message_by_name("apimachinery.pkg.runtime.Unknown")
            .expect("Unknown"),
        body.strip_prefix(b"k8s\0").expect("the magic"),
    )
    .expect("an Unknown");
    let raw = match envelope.get_field_by_name("raw").as_deref() {
        Some(Pb::Bytes(bytes)) => bytes.clone(),
        other => panic!("raw: {other:?}"),
    };
    DynamicMessage::decode(pool().get_message_by_name(message).expect(message), raw).expect(message)
}
