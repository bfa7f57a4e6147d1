//! Reads answered as JSON bytes without parsing the object: the stored bytes (our own
//! serialization, without resourceVersion) with the resourceVersion spliced into the
//! top-level metadata. Decoding and re-encoding a 1 KiB object costs more than reading it
//! from the cache, so a plain JSON GET takes this path.

use bytes::Bytes;

use super::Store;
use crate::error::Result;
use crate::options::ListOptions;

/// How a stored object's metadata keys are ordered, which says where its resourceVersion
/// belongs: after `uid` in a built-in kind's ObjectMeta (Go field order), between keys
/// sorting before and after it in a custom resource's (a map, keys sorted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MetaOrder {
    Typed,
    Sorted,
}

impl MetaOrder {
    /// Whether the metadata key `key` (as its JSON bytes, unescaped text for every key
    /// ObjectMeta has) is written after resourceVersion.
    fn after_resource_version(self, key: &[u8]) -> bool {
        match self {
            MetaOrder::Sorted => key > b"resourceVersion".as_slice(),
            MetaOrder::Typed => {
                let meta = object_meta();
                let rank = std::str::from_utf8(key).ok().and_then(|k| meta.rank(k));
                // A key ObjectMeta does not declare goes last, as the encoder puts it.
                rank.is_none_or(|r| Some(r) > meta.rank("resourceVersion"))
            }
        }
    }
}

fn object_meta() -> &'static openapi::wire_order::Def {
    static META: std::sync::LazyLock<&'static openapi::wire_order::Def> =
        std::sync::LazyLock::new(|| {
            openapi::wire_order::definition("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
                .expect("ObjectMeta is generated")
        });
    &META
}

/// Where the member goes and how it is punctuated there.
#[derive(Debug, PartialEq, Eq)]
enum Slot {
    /// Before a metadata key: `"resourceVersion":"N",`.
    BeforeKey,
    /// Before the metadata's closing brace: `,"resourceVersion":"N"` (no comma if empty).
    End { empty: bool },
    /// No metadata: a new one as the object's first member (a comma unless it is empty).
    NewMetadata { empty: bool },
}

/// The index of the quote closing the string that opens at `open`.
fn string_end(json: &[u8], open: usize) -> Option<usize> {
    let mut escaped = false;
    for (i, &b) in json.iter().enumerate().skip(open + 1) {
        match (escaped, b) {
            (true, _) => escaped = false,
            (false, b'\\') => escaped = true,
            (false, b'"') => return Some(i),
            _ => {}
        }
    }
    None
}

/// Where `"resourceVersion":"N"` goes in the top-level `metadata` object (or a new
/// `metadata`); None if the bytes are not one JSON object.
fn insertion_point(json: &[u8], order: MetaOrder) -> Option<(usize, Slot)> {
    let mut depth = 0usize;
    let mut expect_key = false;
    let mut last_key: &[u8] = &[];
    let mut after_colon_of_metadata = false;
    let mut object_start = None;
    let mut i = 0;
    while i < json.len() {
        let b = json[i];
        match b {
            b'"' => {
                let end = string_end(json, i)?;
                if depth == 1 && expect_key {
                    last_key = &json[i + 1..end];
                    expect_key = false;
                } else if depth == 1 {
                    after_colon_of_metadata = false;
                }
                i = end + 1;
                continue;
            }
            b'{' => {
                if depth == 0 {
                    object_start = Some(i);
                }
                if depth == 1 && after_colon_of_metadata {
                    return metadata_slot(json, i, order);
                }
                depth += 1;
                expect_key = depth == 1;
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'[' => depth += 1,
            b',' if depth == 1 => expect_key = true,
            b':' if depth == 1 => after_colon_of_metadata = last_key == b"metadata",
            c if c.is_ascii_whitespace() => {}
            _ if depth == 1 => after_colon_of_metadata = false,
            _ => {}
        }
        i += 1;
    }
    // No metadata at all: add one as the first member.
    let start = object_start?;
    let empty = json[start + 1..].iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'}');
    Some((start + 1, Slot::NewMetadata { empty }))
}

/// The slot inside the metadata object opening at `open`: before the first key written
/// after resourceVersion, else at its end.
fn metadata_slot(json: &[u8], open: usize, order: MetaOrder) -> Option<(usize, Slot)> {
    let mut depth = 0usize;
    let mut expect_key = true;
    let mut members = 0usize;
    let mut i = open + 1;
    while i < json.len() {
        match json[i] {
            b'"' => {
                let end = string_end(json, i)?;
                if depth == 0 && expect_key {
                    if order.after_resource_version(&json[i + 1..end]) {
                        return Some((i, Slot::BeforeKey));
                    }
                    members += 1;
                    expect_key = false;
                }
                i = end + 1;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth == 0 => {
                return Some((
                    i,
                    Slot::End {
                        empty: members == 0,
                    },
                ));
            }
            b'}' | b']' => depth -= 1,
            b',' if depth == 0 => expect_key = true,
            _ => {}
        }
        i += 1;
    }
    None
}

/// A stored object's JSON with its resourceVersion spliced in, as shared pieces of the stored
/// bytes around the new member: answering a get copies nothing of the object.
#[derive(Debug, Clone)]
pub struct JsonPieces {
    pieces: [Bytes; 3],
}

impl JsonPieces {
    /// Bytes already whole (an object encoded for this answer).
    pub fn whole(bytes: Bytes) -> Self {
        Self {
            pieces: [bytes, Bytes::new(), Bytes::new()],
        }
    }

    pub fn len(&self) -> usize {
        self.pieces.iter().map(Bytes::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pieces in order, for a writer that sends them without joining them.
    pub fn into_pieces(self) -> [Bytes; 3] {
        self.pieces
    }

    /// The pieces joined, for a caller that wants one buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        for piece in &self.pieces {
            out.extend_from_slice(piece);
        }
        out
    }
}

/// The stored bytes with the resourceVersion in its metadata, where the encoder would have
/// written it (see [`MetaOrder`]).
pub(crate) fn with_resource_version(
    stored: &Bytes,
    revision: i64,
    order: MetaOrder,
) -> Option<JsonPieces> {
    use std::fmt::Write;
    let (at, slot) = insertion_point(stored, order)?;
    let mut member = String::with_capacity(48);
    match slot {
        Slot::End { empty: false } => member.push(','),
        Slot::NewMetadata { .. } => member.push_str("\"metadata\":{"),
        _ => {}
    }
    member.push_str("\"resourceVersion\":\"");
    // Writing a number into a String cannot fail.
    let _ = write!(member, "{revision}\"");
    match slot {
        Slot::BeforeKey => member.push(','),
        Slot::NewMetadata { empty } => member.push_str(if empty { "}" } else { "}," }),
        Slot::End { .. } => {}
    }
    Some(JsonPieces {
        pieces: [stored.slice(..at), Bytes::from(member), stored.slice(at..)],
    })
}

impl Store {
    /// A get answered as JSON bytes (what a JSON GET returns), without decoding the object.
    pub async fn get_json(
        &self,
        namespace: Option<&str>,
        name: &str,
        opts: &ListOptions,
    ) -> Result<JsonPieces> {
        let kv = self.read_one(namespace, name, opts).await?;
        let spliced = match (&self.conversion, &self.converter) {
            (None, None) => with_resource_version(&kv.value, kv.mod_revision, self.meta_order()),
            _ => None,
        };
        match spliced {
            Some(pieces) => Ok(pieces),
            // Not our own serialization (written by another client), or in another version: the
            // slow, sure way.
            None => {
                let obj = self.served_one(self.decode(&kv)?).await?;
                let mut out = Vec::with_capacity(kv.value.len() + 32);
                crate::wire::write(&mut out, &obj, crate::wire::Style::Compact)?;
                Ok(JsonPieces::whole(Bytes::from(out)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use serde_json::{json, Value};

    use super::{with_resource_version, MetaOrder};
    use crate::wire::{self, Style};

    fn spliced(v: &Value) -> Value {
        let bytes = Bytes::from(serde_json::to_vec(v).expect("json"));
        let out = with_resource_version(&bytes, 42, MetaOrder::Sorted)
            .expect("spliced")
            .to_vec();
        serde_json::from_slice(&out).expect("still JSON")
    }

    /// The stored encoding with the version spliced in reads exactly as the object with
    /// its version encoded whole: a get answers what a list, watch or write answers.
    #[test]
    fn lands_where_the_encoder_writes_it() {
        let cases = [
            (
                MetaOrder::Typed,
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "namespace": "d", "uid": "u", "generation": 1,
                             "labels": {"x": "y"}}, "data": {"k": "v"}}),
            ),
            (
                MetaOrder::Typed,
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "uid": "u"}}),
            ),
            (
                MetaOrder::Typed,
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"creationTimestamp": "2025-01-01T00:00:00Z"}}),
            ),
            (
                MetaOrder::Typed,
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {}}),
            ),
            (
                MetaOrder::Sorted,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"annotations": {"uid": "x"}, "name": "w", "uid": "u"},
                "spec": {"metadata": {"b": 1}}}),
            ),
            (
                MetaOrder::Sorted,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"generation": 2, "name": "w"}}),
            ),
        ];
        for (order, obj) in cases {
            let mut stored = Vec::new();
            wire::write(&mut stored, &obj, Style::Compact).expect("encodes");
            let out = with_resource_version(&Bytes::from(stored), 42, order)
                .expect("spliced")
                .to_vec();
            let mut whole = obj.clone();
            whole["metadata"]["resourceVersion"] = json!("42");
            let mut expected = Vec::new();
            wire::write(&mut expected, &whole, Style::Compact).expect("encodes");
            assert_eq!(
                String::from_utf8(out).expect("utf-8"),
                String::from_utf8(expected).expect("utf-8")
            );
        }
    }

    #[test]
    fn lands_in_the_top_level_metadata_only() {
        let v = json!({"aaa": {"metadata": {"x": 1}}, "data": {"k": "\"metadata\":{"}, "metadata": {"name": "n"}, "spec": {"template": {"metadata": {}}}});
        let out = spliced(&v);
        assert_eq!(out["metadata"]["resourceVersion"], "42");
        assert_eq!(out["metadata"]["name"], "n");
        assert!(out["aaa"]["metadata"].get("resourceVersion").is_none());
        assert!(out["spec"]["template"]["metadata"]
            .get("resourceVersion")
            .is_none());
        assert_eq!(out["data"]["k"], "\"metadata\":{");
    }

    #[test]
    fn empty_and_missing_metadata() {
        assert_eq!(
            spliced(&json!({"metadata": {}}))["metadata"]["resourceVersion"],
            "42"
        );
        assert_eq!(
            spliced(&json!({"kind": "X"}))["metadata"]["resourceVersion"],
            "42"
        );
        assert_eq!(spliced(&json!({}))["metadata"]["resourceVersion"], "42");
        let pretty =
            serde_json::to_vec_pretty(&json!({"metadata": {"a": [1, {"b": "}"}]}})).expect("json");
        let out: Value = serde_json::from_slice(
            &with_resource_version(&pretty.into(), 7, MetaOrder::Typed)
                .expect("spliced")
                .to_vec(),
        )
        .expect("json");
        assert_eq!(out["metadata"]["resourceVersion"], "7");
    }

    #[test]
    fn the_object_is_shared_not_copied() {
        let stored = Bytes::from(
            serde_json::to_vec(&json!({"kind": "ConfigMap", "metadata": {"name": "n"}}))
                .expect("json"),
        );
        let [head, member, tail] = with_resource_version(&stored, 9, MetaOrder::Sorted)
            .expect("spliced")
            .into_pieces();
        assert_eq!(head.as_ptr(), stored.as_ptr());
        assert_eq!(tail.as_ptr(), stored[head.len()..].as_ptr());
        assert_eq!(head.len() + tail.len(), stored.len());
        // After `name`, as a custom resource sorts it: at the end of its metadata.
        assert_eq!(&member[..], b",\"resourceVersion\":\"9\"");
    }

    #[test]
    fn non_objects_are_refused() {
        let order = MetaOrder::Typed;
        assert!(with_resource_version(&Bytes::from_static(b"[1,2]"), 1, order).is_none());
        assert!(with_resource_version(&Bytes::new(), 1, order).is_none());
    }
}
