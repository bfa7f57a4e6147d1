//! The graph in Graphviz DOT, as upstream's /debug/controllers/garbagecollector/graph serves
//! it: one vertex per object that owns or is owned (attributes name it and its state), one edge
//! from each dependent to each of its owners; owners the graph lacks appear as "missing".

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::fmt::Write;

use registry::validation::quote;

use super::graph::{Graph, Node};
use super::reference::{split_api_version, OwnerReference};

struct Vertex<'a> {
    uid: &'a str,
    api_version: &'a str,
    kind: &'a str,
    namespace: &'a str,
    name: &'a str,
    missing: bool,
    being_deleted: bool,
    deleting_dependents: bool,
    is_virtual: bool,
}

impl<'a> Vertex<'a> {
    fn of_node(node: &'a Node) -> Self {
        Self {
            uid: &node.identity.uid,
            api_version: &node.identity.api_version,
            kind: &node.identity.kind,
            namespace: &node.identity.namespace,
            name: &node.identity.name,
            missing: false,
            being_deleted: node.being_deleted,
            deleting_dependents: node.deleting_dependents,
            is_virtual: node.is_virtual,
        }
    }

    fn missing(owner: &'a OwnerReference) -> Self {
        Self {
            uid: &owner.uid,
            api_version: &owner.api_version,
            kind: &owner.kind,
            namespace: "",
            name: &owner.name,
            missing: true,
            being_deleted: false,
            deleting_dependents: false,
            is_virtual: false,
        }
    }

    fn write(&self, out: &mut String) {
        let (group, version) = split_api_version(self.api_version);
        let mut kind = format!("{}.{version}", self.kind);
        if !group.is_empty() {
            kind = format!("{kind}.{group}");
        }
        let mut label = format!(
            "uid={}\nnamespace={}\n{kind}/{}\n",
            self.uid, self.namespace, self.name
        );
        let conditions: Vec<&str> = [
            (self.being_deleted, "beingDeleted"),
            (self.deleting_dependents, "deletingDependents"),
            (self.is_virtual, "virtual"),
            (self.missing, "missingFromGraph"),
        ]
        .into_iter()
        .filter(|(set, _)| *set)
        .map(|(_, name)| name)
        .collect();
        if !conditions.is_empty() {
            label.push_str(&conditions.join(","));
            label.push('\n');
        }
        let flag = |b: bool| if b { "true" } else { "false" };
        let attributes = [
            ("label", label.as_str()),
            ("group", group),
            ("version", version),
            ("kind", self.kind),
            ("namespace", self.namespace),
            ("name", self.name),
            ("uid", self.uid),
            ("missing", flag(self.missing)),
            ("beingDeleted", flag(self.being_deleted)),
            ("deletingDependents", flag(self.deleting_dependents)),
            ("virtual", flag(self.is_virtual)),
        ];
        let _ = writeln!(out, "  {} [", quote(self.uid));
        for (key, value) in attributes {
            let _ = writeln!(out, "    {key}={}", quote(value));
        }
        out.push_str("  ];\n");
    }
}

/// The whole graph, or (with `uid`) the part connected to that object through owners and
/// dependents.
pub fn to_dot(graph: &Graph, uid: Option<&str>) -> String {
    let selected: Vec<&Node> = match uid {
        None => graph.nodes().collect(),
        Some(uid) => connected(graph, uid),
    };
    // Objects that neither own nor are owned say nothing about collection.
    let nodes: Vec<&Node> = selected
        .into_iter()
        .filter(|n| !n.dependents.is_empty() || !n.owners.is_empty())
        .collect();
    let mut vertices: BTreeMap<&str, Vertex> = nodes
        .iter()
        .map(|n| (&*n.identity.uid, Vertex::of_node(n)))
        .collect();
    let mut edges = BTreeSet::new();
    for node in &nodes {
        for owner in &node.owners {
            vertices
                .entry(&*owner.uid)
                .or_insert_with(|| Vertex::missing(owner));
            edges.insert((&*node.identity.uid, &*owner.uid));
        }
    }
    let mut out = String::from("strict digraph full {\n");
    if !vertices.is_empty() {
        out.push_str("  // Node definitions.\n");
        for vertex in vertices.values() {
            vertex.write(&mut out);
        }
    }
    if !edges.is_empty() {
        out.push_str("  // Edge definitions.\n");
        for (from, to) in edges {
            let _ = writeln!(out, "  {} -> {};", quote(from), quote(to));
        }
    }
    out.push_str("}\n");
    out
}

/// Every node reachable from `uid` through owner and dependent edges.
fn connected<'a>(graph: &'a Graph, uid: &str) -> Vec<&'a Node> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut queue: VecDeque<&str> = VecDeque::from([uid]);
    let mut out = Vec::new();
    while let Some(next) = queue.pop_front() {
        if !seen.insert(next) {
            continue;
        }
        let Some(node) = graph.get(next) else {
            continue;
        };
        out.push(node);
        queue.extend(node.owners.iter().map(|o| &*o.uid));
        queue.extend(node.dependents.iter().map(|d| &**d));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::reference::ObjectReference;
    use super::*;

    fn node(uid: &str, owners: &[&str]) -> Node {
        let identity = ObjectReference {
            kind: "ReplicaSet".into(),
            api_version: "apps/v1".into(),
            namespace: "ns".into(),
            name: format!("n-{uid}").into(),
            uid: uid.into(),
        };
        let owners = owners
            .iter()
            .map(|o| OwnerReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: format!("n-{o}").into(),
                uid: (*o).into(),
                controller: None,
                block_owner_deletion: None,
            })
            .collect();
        Node::observed(identity, owners)
    }

    fn graph() -> Graph {
        let mut g = Graph::default();
        let mut owner = node("a", &[]);
        owner.dependents.insert("b".into());
        g.insert(owner);
        g.insert(node("b", &["a", "zz-missing"]));
        g.insert(node("lonely", &[]));
        let mut other = node("c", &[]);
        other.dependents.insert("d".into());
        other.deleting_dependents = true;
        other.being_deleted = true;
        g.insert(other);
        g.insert(node("d", &["c"]));
        g
    }

    #[test]
    fn whole_graph_has_every_owner_edge_and_missing_owners() {
        let dot = to_dot(&graph(), None);
        assert!(dot.starts_with("strict digraph full {\n  // Node definitions.\n"));
        assert!(dot.contains("  \"b\" -> \"a\";\n"));
        assert!(dot.contains("  \"b\" -> \"zz-missing\";\n"));
        assert!(dot.contains("  \"d\" -> \"c\";\n"));
        assert!(dot.contains("    label=\"uid=b\\nnamespace=ns\\nReplicaSet.v1.apps/n-b\\n\"\n"));
        assert!(dot.contains("missingFromGraph\\n\""));
        assert!(dot.contains("beingDeleted,deletingDependents\\n\""));
        assert!(
            !dot.contains("lonely"),
            "objects outside ownership are left out"
        );
        assert!(dot.ends_with("}\n"));
    }

    #[test]
    fn one_object_gives_its_connected_part() {
        let dot = to_dot(&graph(), Some("a"));
        assert!(dot.contains("\"b\" -> \"a\""));
        assert!(!dot.contains("\"d\" -> \"c\""));
        assert_eq!(
            to_dot(&Graph::default(), Some("nothing")),
            "strict digraph full {\n}\n"
        );
    }

    #[test]
    fn quoting_escapes_like_go() {
        assert_eq!(quote("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\x01\"");
    }
}
