//! Finds every kind k8s-openapi knows (the types it implements `Resource` for) in its
//! sources, to hold kinds.rs to it.

use std::collections::BTreeMap;
use std::path::Path;

use crate::kinds::KINDS;

/// Panics, with the lines kinds.rs should hold, when it differs from k8s-openapi's kinds.
pub fn check(root: &Path) {
    let mut found = BTreeMap::new();
    visit(root, root, &mut found);
    assert!(
        !found.is_empty(),
        "no Resource types under {}",
        root.display()
    );
    let listed: BTreeMap<String, bool> = KINDS
        .iter()
        .map(|k| {
            // stringify! spaces and wraps long paths.
            let path: String = k.path.split_whitespace().collect();
            (path, k.list_kind.is_some())
        })
        .collect();
    let line = |(path, listable): (&String, &bool)| {
        let constructor = if *listable { "listable" } else { "single" };
        format!("    {constructor} {path};\n")
    };
    let missing: String = found
        .iter()
        .filter(|(path, listable)| listed.get(*path) != Some(listable))
        .map(line)
        .collect();
    let extra: String = listed
        .iter()
        .filter(|(path, listable)| found.get(*path) != Some(listable))
        .map(line)
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "build/kinds.rs differs from k8s-openapi's kinds.\nto add:\n{missing}to remove:\n{extra}"
    );
}

fn visit(root: &Path, dir: &Path, found: &mut BTreeMap<String, bool>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read k8s-openapi sources")
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            visit(root, &path, found);
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
                found.entry(type_path(&module, name)).or_insert(false);
            } else if let Some(name) = impl_target(line, "impl crate::ListableResource for ") {
                found.insert(type_path(&module, name), true);
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

fn type_path(module: &[String], name: &str) -> String {
    let mut segments = module.to_vec();
    segments.push(name.to_string());
    segments.join("::")
}
