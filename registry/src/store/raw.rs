//! Reads answered as JSON bytes without parsing the object: the stored bytes (our own
//! serialization, without resourceVersion) with the resourceVersion spliced into the
//! top-level metadata. Decoding and re-encoding a 1 KiB object costs more than reading it
//! from the cache, so a plain JSON GET takes this path.

use bytes::Bytes;

use super::Store;
use crate::error::Result;
use crate::options::ListOptions;

/// Where `"resourceVersion":"N"` goes: just inside the top-level `metadata` object, or a
/// new `metadata` just inside the object. None if the bytes are not one JSON object.
fn insertion_point(json: &[u8]) -> Option<(usize, bool, bool)> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut expect_key = false;
    let mut key_start = 0;
    let mut last_key: &[u8] = &[];
    let mut after_colon_of_metadata = false;
    let mut object_start = None;
    for (i, &b) in json.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => {
                    in_string = false;
                    if depth == 1 && expect_key {
                        last_key = &json[key_start..i];
                        expect_key = false;
                    }
                }
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                key_start = i + 1;
            }
            b'{' => {
                if depth == 0 {
                    object_start = Some(i);
                }
                if depth == 1 && after_colon_of_metadata {
                    let empty =
                        json[i + 1..].iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'}');
                    return Some((i + 1, empty, false));
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
    }
    // No metadata at all: add one as the first member.
    let start = object_start?;
    let empty = json[start + 1..].iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'}');
    Some((start + 1, empty, true))
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

/// The stored bytes with the resourceVersion in its metadata.
pub(crate) fn with_resource_version(stored: &Bytes, revision: i64) -> Option<JsonPieces> {
    use std::fmt::Write;
    let (at, empty, new_metadata) = insertion_point(stored)?;
    let mut member = String::with_capacity(48);
    if new_metadata {
        member.push_str("\"metadata\":{");
    }
    member.push_str("\"resourceVersion\":\"");
    // Writing a number into a String cannot fail.
    let _ = write!(member, "{revision}\"");
    if new_metadata {
        member.push('}');
    }
    if !empty {
        member.push(',');
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
        let spliced = match self.conversion {
            None => with_resource_version(&kv.value, kv.mod_revision),
            Some(_) => None,
        };
        match spliced {
            Some(pieces) => Ok(pieces),
            // Not our own serialization (written by another client), or in another version: the
            // slow, sure way.
            None => {
                let obj = self.decode(&kv)?;
                Ok(JsonPieces::whole(Bytes::from(
                    serde_json::to_vec(&obj)
                        .map_err(|e| crate::error::RegistryError::Internal(e.to_string()))?,
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use serde_json::{json, Value};

    use super::with_resource_version;

    fn spliced(v: &Value) -> Value {
        let bytes = Bytes::from(serde_json::to_vec(v).expect("json"));
        let out = with_resource_version(&bytes, 42).expect("spliced").to_vec();
        serde_json::from_slice(&out).expect("still JSON")
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
            &with_resource_version(&pretty.into(), 7)
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
        let [head, member, tail] = with_resource_version(&stored, 9)
            .expect("spliced")
            .into_pieces();
        assert_eq!(head.as_ptr(), stored.as_ptr());
        assert_eq!(tail.as_ptr(), stored[head.len()..].as_ptr());
        assert_eq!(head.len() + tail.len(), stored.len());
        assert_eq!(&member[..], b"\"resourceVersion\":\"9\",");
    }

    #[test]
    fn non_objects_are_refused() {
        assert!(with_resource_version(&Bytes::from_static(b"[1,2]"), 1).is_none());
        assert!(with_resource_version(&Bytes::new(), 1).is_none());
    }
}
