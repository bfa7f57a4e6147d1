//! The hash workload controllers name things by (upstream's controller.ComputeHash for
//! pod templates, history.HashControllerRevision for revision data): FNV-32a over the value,
//! then the collision count, rendered in decimal through upstream's safe-encoding alphabet (no vowels,
//! no look-alike digits). Upstream hashes a Go dump of the typed template; we hash the
//! canonical JSON of the normalised template (keys sorted, nulls and empty objects and arrays
//! left out, as a typed decode would not tell them from absent), so the hash is stable across
//! restarts, versions of this server and cosmetic differences in how a client sent it.
//! Deployments hash their pod template with it, StatefulSets and DaemonSets their revisions.

use serde_json::Value;

/// apimachinery's rand alphabet: 27 characters, so decimal digits map to distinct letters.
const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
const FNV32_OFFSET: u32 = 0x811c_9dc5;
const FNV32_PRIME: u32 = 0x0100_0193;

fn fnv32a(hash: u32, bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .fold(hash, |h, b| (h ^ u32::from(*b)).wrapping_mul(FNV32_PRIME))
}

/// Each character replaced by the alphabet's entry at its code point modulo the alphabet size.
pub fn safe_encode(s: &str) -> String {
    s.chars()
        .map(|c| SAFE_ALPHABET[(c as usize) % SAFE_ALPHABET.len()] as char)
        .collect()
}

/// The value without what a typed round trip would not keep: nulls, empty objects and
/// empty arrays.
pub fn normalize(v: &Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Object(map) => {
            let out: serde_json::Map<String, Value> = map
                .iter()
                .filter_map(|(k, v)| normalize(v).map(|v| (k.clone(), v)))
                .collect();
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Value::Array(items) => {
            let out: Vec<Value> = items
                .iter()
                .map(|v| normalize(v).unwrap_or(Value::Null))
                .collect();
            (!out.is_empty()).then_some(Value::Array(out))
        }
        other => Some(other.clone()),
    }
}

/// The hash of `value` given the owner's `status.collisionCount` (a deployment's
/// pod-template-hash, a ControllerRevision's name suffix).
pub fn compute_hash(value: &Value, collision_count: Option<u32>) -> String {
    let mut text = String::new();
    text.push_str(&registry::object::canonical_json(
        &normalize(value).unwrap_or(Value::Null),
    ));
    let mut hash = fnv32a(FNV32_OFFSET, text.as_bytes());
    if let Some(count) = collision_count {
        hash = fnv32a(hash, &count.to_le_bytes());
    }
    safe_encode(&hash.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fnv32a_matches_the_reference_vectors() {
        assert_eq!(fnv32a(FNV32_OFFSET, b""), 0x811c_9dc5);
        assert_eq!(fnv32a(FNV32_OFFSET, b"a"), 0xe40c_292c);
        assert_eq!(fnv32a(FNV32_OFFSET, b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn safe_encoding_uses_upstreams_alphabet() {
        // '0' is 48: 48 % 27 = 21 → '4'; '9' is 57: 57 % 27 = 3 → 'f'.
        assert_eq!(safe_encode("09"), "4f");
        assert!(safe_encode("1234567890")
            .chars()
            .all(|c| SAFE_ALPHABET.contains(&(c as u8))));
    }

    #[test]
    fn hash_is_stable_and_ignores_key_order_and_empty_fields() {
        let a = json!({"metadata": {"labels": {"app": "web", "tier": "fe"}},
                       "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let b = json!({"spec": {"containers": [{"image": "nginx", "name": "c", "resources": {}}]},
                       "metadata": {"creationTimestamp": null, "labels": {"tier": "fe", "app": "web"}}});
        assert_eq!(compute_hash(&a, None), compute_hash(&b, None));
        // Fixed forever: ReplicaSet names must survive restarts and upgrades.
        assert_eq!(compute_hash(&a, None), compute_hash(&a.clone(), None));
        let other = json!({"metadata": {"labels": {"app": "web"}},
                           "spec": {"containers": [{"name": "c", "image": "nginx:2"}]}});
        assert_ne!(compute_hash(&a, None), compute_hash(&other, None));
    }

    #[test]
    fn collision_count_changes_the_hash() {
        let t = json!({"spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let plain = compute_hash(&t, None);
        let first = compute_hash(&t, Some(1));
        assert_ne!(plain, first);
        assert_ne!(first, compute_hash(&t, Some(2)));
        assert_eq!(first, compute_hash(&t, Some(1)));
    }
}
