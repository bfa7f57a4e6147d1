//! Decoding only part of an object: a [`Projection`] names the fields to keep, and the
//! parser skips the rest without building them. A controller that reads a few fields of
//! thousands of objects on every sync (a ReplicaSet's pods: labels, owners, status) decodes
//! a tenth of each; a whole decoded pod is some 30 KB of maps, most of them its spec and
//! managedFields.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

/// Which fields of a JSON object to keep.
#[derive(Clone, Copy, Debug)]
pub enum Projection {
    /// The whole value.
    All,
    /// Only these fields, each with its own projection; every other field is skipped.
    Only(&'static [(&'static str, Projection)]),
    /// Every field but these.
    Except(&'static [&'static str]),
}

impl Projection {
    fn of(&self, key: &str) -> Option<Projection> {
        match self {
            Projection::All => Some(Projection::All),
            Projection::Only(fields) => fields.iter().find(|(k, _)| *k == key).map(|(_, p)| *p),
            Projection::Except(skipped) => (!skipped.contains(&key)).then_some(Projection::All),
        }
    }
}

/// What controllers read of a pod they count, rank and adopt: the whole metadata but its
/// managedFields, the node it runs on, and the status. Not its spec (containers, volumes,
/// tolerations), the bulk of the pod.
pub const POD_FOR_CONTROLLERS: Projection = Projection::Only(&[
    ("apiVersion", Projection::All),
    ("kind", Projection::All),
    ("metadata", Projection::Except(&["managedFields"])),
    ("spec", Projection::Only(&[("nodeName", Projection::All)])),
    ("status", Projection::All),
]);

/// Parses `json`, keeping what `projection` names.
pub fn decode(json: &[u8], projection: Projection) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let value = Projected(projection).deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

struct Projected(Projection);

impl<'de> DeserializeSeed<'de> for Projected {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        match self.0 {
            Projection::All => serde::Deserialize::deserialize(d),
            projection => d.deserialize_any(ProjectedVisitor(projection)),
        }
    }
}

struct ProjectedVisitor(Projection);

impl<'de> Visitor<'de> for ProjectedVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match self.0.of(&key) {
                Some(projection) => {
                    let value = map.next_value_seed(Projected(projection))?;
                    out.insert(key, value);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }

    // A field projected as an object that holds something else keeps it whole.
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        Visitor::visit_seq(ValueVisitor, seq)
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// Arrays under a projected field are kept whole, as serde_json builds them.
struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON array")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"app": "a"},
                "annotations": {"controller.kubernetes.io/pod-deletion-cost": "5"},
                "ownerReferences": [{"uid": "o", "controller": true}],
                "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "i"}],
                "tolerations": [{"key": "k"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        })
    }

    #[test]
    fn a_pod_for_controllers_keeps_metadata_node_and_status_only() {
        let bytes = serde_json::to_vec(&pod()).expect("json");
        let projected = decode(&bytes, POD_FOR_CONTROLLERS).expect("decodes");
        let mut expected = pod();
        expected["metadata"]
            .as_object_mut()
            .expect("metadata")
            .remove("managedFields");
        expected["spec"] = json!({"nodeName": "node-1"});
        assert_eq!(projected, expected);
    }

    #[test]
    fn all_is_the_whole_value_and_odd_shapes_are_kept_or_refused() {
        let bytes = serde_json::to_vec(&pod()).expect("json");
        assert_eq!(decode(&bytes, Projection::All).expect("decodes"), pod());
        // A field expected to be an object that is not one is kept as it is.
        let odd = br#"{"metadata": [1, {"a": 2}], "spec": "x", "status": null}"#;
        let projected = decode(odd, POD_FOR_CONTROLLERS).expect("decodes");
        assert_eq!(
            projected,
            json!({"metadata": [1, {"a": 2}], "spec": "x", "status": null})
        );
        assert!(decode(b"{\"metadata\": ", POD_FOR_CONTROLLERS).is_err());
        assert!(decode(b"{} trailing", POD_FOR_CONTROLLERS).is_err());
    }
}
