//! Finds every kind k8s-openapi knows: the types it implements `Resource` for.

use std::collections::BTreeMap;
use std::path::Path;

/// A Rust expression: the slice of `Kind` entries, one per resource type, sorted by path.
pub fn generate(root: &Path) -> String {
    // Rust path -> whether the type also has a list kind.
    let mut kinds = BTreeMap::new();
    visit(root, root, &mut kinds);
    assert!(
        !kinds.is_empty(),
        "no Resource types under {}",
        root.display()
    );
    let mut out = String::from("&[\n");
    for (path, listable) in kinds {
        let constructor = if listable { "listable" } else { "single" };
        out.push_str(&format!("    Kind::{constructor}::<{path}>(),\n"));
    }
    out.push_str("]\n");
    out
}

fn visit(root: &Path, dir: &Path, kinds: &mut BTreeMap<String, bool>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read k8s-openapi sources")
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            visit(root, &path, kinds);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read a k8s-openapi source");
        // Types are re-exported by the module of their directory.
        let module: Vec<String> = path
            .parent()
            .expect("a file has a directory")
            .strip_prefix(root)
            .expect("under the root")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        for line in text.lines() {
            // Generic impls (List<T>, WatchEvent<T>) are not kinds of their own.
            if let Some(name) = impl_target(line, "impl crate::Resource for ") {
                let path = rust_path(&module, name);
                kinds.entry(path).or_insert(false);
            } else if let Some(name) = impl_target(line, "impl crate::ListableResource for ") {
                kinds.insert(rust_path(&module, name), true);
            }
        }
    }
}

fn impl_target<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    let name = line.strip_prefix(prefix)?.strip_suffix(" {")?;
    name.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        .then_some(name)
}

fn rust_path(module: &[String], name: &str) -> String {
    let mut path = String::from("k8s_openapi");
    for segment in module {
        path.push_str("::");
        path.push_str(segment);
    }
    path.push_str("::");
    path.push_str(name);
    path
}
