//! Reads the comments of the Kubernetes `.proto` definitions: they carry the Go types'
//! markers (`+patchStrategy=merge`, `+listType=map`, `+listMapKey=name`, `+mapType=atomic`,
//! `+structType=atomic`) from which upstream's generator emits the x-kubernetes-* extensions,
//! and the doc comments of the List kinds, which k8s-openapi has no schema for.

use std::collections::BTreeMap;
use std::path::Path;

/// The markers that become schema extensions; others (+optional, +k8s:...) are not ours.
const MARKERS: &[&str] = &[
    "default",
    "patchStrategy",
    "patchMergeKey",
    "listType",
    "listMapKey",
    "mapType",
    "structType",
];

/// (definition, field or "" for the type itself, [(marker, value)])
pub type Marked = (String, String, Vec<(String, String)>);

#[derive(Default)]
pub struct Tables {
    pub markers: Vec<Marked>,
    /// list definition -> (its description, its items' description)
    pub lists: BTreeMap<String, (String, String)>,
}

/// The markers and List docs of every `.proto` under `root`.
pub fn read(root: &Path) -> Tables {
    let mut files = Vec::new();
    collect(root, &mut files);
    files.sort();
    let mut tables = Tables::default();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read a .proto");
        parse(&text, &mut tables);
    }
    assert!(
        !tables.markers.is_empty(),
        "no markers under {}",
        root.display()
    );
    tables
}

pub fn collect(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read proto directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "proto") {
            files.push(path);
        }
    }
}

fn parse(text: &str, tables: &mut Tables) {
    // Definition names are the Go package path reversed at its domain: k8s.io/api/core/v1
    // holds io.k8s.api.core.v1.Pod.
    let Some(prefix) = text.lines().find_map(go_package) else {
        return;
    };
    let mut comment: Vec<&str> = Vec::new();
    let mut message: Option<String> = None;
    let mut list_doc: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("//") {
            comment.push(rest.strip_prefix(' ').unwrap_or(rest));
            continue;
        }
        if let Some(name) = trimmed
            .strip_prefix("message ")
            .and_then(|r| r.strip_suffix(" {"))
        {
            let definition = format!("{prefix}.{name}");
            record(tables, &definition, "", &comment);
            list_doc = name.ends_with("List").then(|| description(&comment));
            message = Some(definition);
        } else if trimmed == "}" {
            message = None;
        } else if let (Some(definition), Some(field)) = (&message, field_name(trimmed)) {
            record(tables, definition, field, &comment);
            if field == "items" {
                if let Some(doc) = list_doc.take() {
                    tables
                        .lists
                        .insert(definition.clone(), (doc, description(&comment)));
                }
            }
        }
        comment.clear();
    }
}

pub fn go_package(line: &str) -> Option<String> {
    let path = line
        .trim()
        .strip_prefix("option go_package = \"")?
        .strip_suffix("\";")?;
    let (domain, rest) = path.split_once('/')?;
    let mut labels: Vec<&str> = domain.split('.').collect();
    labels.reverse();
    Some(format!("{}.{}", labels.join("."), rest.replace('/', ".")))
}

/// `optional Type name = 3;`, `repeated Type name = 3;`, `map<K, V> name = 3;`
fn field_name(line: &str) -> Option<&str> {
    let (head, _) = line.strip_suffix(';')?.split_once(" = ")?;
    let name = head.rsplit(' ').next()?;
    let known = ["optional ", "repeated ", "map<", "required "];
    known.iter().any(|k| head.starts_with(k)).then_some(name)
}

fn record(tables: &mut Tables, definition: &str, field: &str, comment: &[&str]) {
    let pairs: Vec<(String, String)> = comment
        .iter()
        .filter_map(|line| line.trim().strip_prefix('+'))
        .filter_map(|marker| marker.split_once('='))
        .filter(|(key, _)| MARKERS.contains(key))
        .map(|(key, value)| (key.to_string(), value.trim().to_string()))
        .collect();
    if !pairs.is_empty() {
        tables
            .markers
            .push((definition.to_string(), field.to_string(), pairs));
    }
}

/// A doc comment as upstream's schemas carry it: lines joined into paragraphs, markers and
/// TODOs left out.
fn description(comment: &[&str]) -> String {
    let mut out = String::new();
    for line in comment {
        let line = line.trim_end();
        let bare = line.trim();
        if bare.starts_with('+') || bare.starts_with("TODO") {
            continue;
        }
        if bare.is_empty() {
            if !out.is_empty() && !out.ends_with("\n\n") {
                out.push_str("\n\n");
            }
            continue;
        }
        if !out.is_empty() && !out.ends_with('\n') {
            // Indented lines and bullets keep their own line, as in the Go source.
            let own_line = line.starts_with([' ', '\t']) || bare.starts_with(['-', '*']);
            out.push(if own_line { '\n' } else { ' ' });
        }
        out.push_str(if line.starts_with([' ', '\t']) {
            line
        } else {
            bare
        });
    }
    out.trim_end().to_string()
}
