//! The structural part of an accepted schema (upstream's Structural): what defaulting, pruning
//! and the walkers follow. Value validations (allOf, anyOf, ...) are not part of it.

use serde_json::{Map, Value};

#[derive(Debug, Default)]
pub(super) struct Node {
    pub nullable: bool,
    /// A null default counts as none, as upstream's decoding makes it.
    pub default: Option<Value>,
    /// Sorted by name.
    pub properties: Vec<(String, Node)>,
    pub additional: Additional,
    pub items: Option<Box<Node>>,
    pub preserve_unknown: bool,
    pub embedded: bool,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    /// Whether this node or one below it has a default, an embedded resource, or a set or map
    /// list: the walkers skip subtrees without.
    pub defaults_below: bool,
    pub embedded_below: bool,
    pub lists_below: bool,
}

#[derive(Debug, Default)]
pub(super) enum Additional {
    #[default]
    Absent,
    /// `additionalProperties: true` or `false` (pruning keeps such fields either way).
    Allows,
    Schema(Box<Node>),
}

impl Node {
    /// Reads a schema; keywords of the wrong JSON type are ignored (the CRD checks report them).
    pub fn parse(schema: &Value) -> Node {
        let Some(map) = schema.as_object() else {
            return Node::default();
        };
        let mut node = Node {
            nullable: bool_of(map, "nullable"),
            default: map.get("default").filter(|d| !d.is_null()).cloned(),
            preserve_unknown: bool_of(map, "x-kubernetes-preserve-unknown-fields"),
            embedded: bool_of(map, "x-kubernetes-embedded-resource"),
            list_type: map
                .get("x-kubernetes-list-type")
                .and_then(Value::as_str)
                .map(str::to_string),
            list_map_keys: strings_of(map, "x-kubernetes-list-map-keys"),
            ..Node::default()
        };
        if let Some(props) = map.get("properties").and_then(Value::as_object) {
            node.properties = props
                .iter()
                .map(|(k, v)| (k.clone(), Node::parse(v)))
                .collect();
            node.properties.sort_by(|a, b| a.0.cmp(&b.0));
        }
        node.additional = match map.get("additionalProperties") {
            Some(Value::Bool(_)) => Additional::Allows,
            Some(v @ Value::Object(_)) => Additional::Schema(Box::new(Node::parse(v))),
            _ => Additional::Absent,
        };
        if let Some(items @ Value::Object(_)) = map.get("items") {
            node.items = Some(Box::new(Node::parse(items)));
        }
        node.defaults_below = node.default.is_some() || node.below(|n| n.defaults_below);
        node.embedded_below = node.embedded || node.below(|n| n.embedded_below);
        node.lists_below = matches!(node.list_type.as_deref(), Some("set" | "map"))
            || node.below(|n| n.lists_below);
        node
    }

    pub fn property(&self, name: &str) -> Option<&Node> {
        self.properties
            .binary_search_by(|(k, _)| k.as_str().cmp(name))
            .ok()
            .map(|i| &self.properties[i].1)
    }

    pub fn additional_schema(&self) -> Option<&Node> {
        match &self.additional {
            Additional::Schema(node) => Some(node),
            _ => None,
        }
    }

    /// Whether a child node satisfies `pred`.
    fn below(&self, pred: impl Fn(&Node) -> bool) -> bool {
        self.properties.iter().any(|(_, p)| pred(p))
            || self.items.as_deref().is_some_and(&pred)
            || self.additional_schema().is_some_and(&pred)
    }
}

pub(super) fn str_of<'a>(map: &'a Map<String, Value>, key: &str) -> &'a str {
    map.get(key).and_then(Value::as_str).unwrap_or_default()
}

pub(super) fn bool_of(map: &Map<String, Value>, key: &str) -> bool {
    map.get(key).and_then(Value::as_bool).unwrap_or_default()
}

pub(super) fn strings_of(map: &Map<String, Value>, key: &str) -> Vec<String> {
    map.get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}
