//! What the Go types say about each protobuf field, which the descriptor set cannot (every field
//! of the Kubernetes definitions is `optional`): whether the Go field is a pointer (or `[]byte`),
//! a plain `omitempty` scalar, a struct embedded inline in its parent's JSON, or has a JSON name
//! of its own. Both directions read it: Go's protobuf marshalling writes every non-pointer field,
//! zero or not, and a pointer only when set; its JSON drops `omitempty` zeros.
//!
//! The table is `apiserver/protobuf/go_fields.txt`, written by `go_fields.py` from the Go types
//! of the release the descriptor set is compiled from.

use std::collections::HashMap;
use std::sync::OnceLock;

/// The facts about one field; the default is a plain value field named as in protobuf.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GoField {
    /// A Go pointer or `[]byte`: written only when set, its zero kept in JSON.
    pub pointer: bool,
    /// A non-pointer scalar with `omitempty`: its zero is left out of JSON.
    pub omitempty: bool,
    /// A struct embedded with `json:",inline"`: its members are the parent's in JSON.
    pub inline: bool,
    /// Its JSON name when that is not the protobuf name.
    pub json_name: Option<&'static str>,
}

static TABLE: &str = include_str!("../../../protobuf/go_fields.txt");

fn table() -> &'static HashMap<(&'static str, &'static str), GoField> {
    static MAP: OnceLock<HashMap<(&'static str, &'static str), GoField>> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut map: HashMap<(&str, &str), GoField> = HashMap::new();
        for line in TABLE.lines().filter(|l| !l.starts_with('#')) {
            let Some((path, fact)) = line.split_once(' ') else {
                continue;
            };
            let Some((message, field)) = path.rsplit_once('.') else {
                continue;
            };
            let entry = map.entry((message, field)).or_default();
            match fact {
                "pointer" => entry.pointer = true,
                "omitempty" => entry.omitempty = true,
                "inline" => entry.inline = true,
                _ => entry.json_name = fact.strip_prefix("json="),
            }
        }
        map
    })
}

/// The facts about `field` of the message `message` (its full protobuf name).
pub fn field(message: &str, field: &str) -> GoField {
    table().get(&(message, field)).copied().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_knows_pointers_omitempty_inline_and_names() {
        let spec = "api.core.v1.PodSpec";
        assert!(field(spec, "activeDeadlineSeconds").pointer);
        assert!(field(spec, "hostNetwork").omitempty);
        assert_eq!(field(spec, "containers"), GoField::default());
        assert!(field("api.core.v1.Volume", "volumeSource").inline);
        assert!(field("api.core.v1.PersistentVolumeClaimSpec", "storageClassName").pointer);
        assert_eq!(
            field(
                "api.admissionregistration.v1.ValidatingWebhookConfiguration",
                "Webhooks"
            )
            .json_name,
            Some("webhooks")
        );
    }
}
