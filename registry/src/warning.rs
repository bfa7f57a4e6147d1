//! Warnings for the client (upstream's warning.AddWarning): code deep in a request adds them,
//! the API layer sends them as `Warning` headers. They ride in a task-local collector so no
//! signature has to carry them, and calls outside a request (controllers) cost nothing.

use std::cell::RefCell;
use std::future::Future;

tokio::task_local! {
    static WARNINGS: RefCell<Vec<String>>;
}

/// Runs `f` collecting the warnings it adds, each once, in the order first added.
pub async fn collect<F: Future>(f: F) -> (F::Output, Vec<String>) {
    WARNINGS
        .scope(RefCell::new(Vec::new()), async {
            let out = f.await;
            let warnings = WARNINGS.with(|w| w.take());
            (out, warnings)
        })
        .await
}

/// Adds a warning to the current request, if there is one.
pub fn add(message: impl Into<String>) {
    let message = message.into();
    let _ = WARNINGS.try_with(|w| {
        let mut w = w.borrow_mut();
        if !w.contains(&message) {
            w.push(message);
        }
    });
}

/// Standard finalizers every writer knows; any other should be domain-qualified with a path.
const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

/// Upstream warns, without refusing, on finalizer names another writer could also pick.
pub fn finalizers<'a>(added: impl IntoIterator<Item = &'a str>) {
    for name in added {
        if !name.contains('/') && !STANDARD_FINALIZERS.contains(&name) {
            add(format!(
                "metadata.finalizers: {name:?}: prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn collects_once_each_and_only_inside_a_request() {
        add("outside");
        let ((), warnings) = collect(async {
            add("a");
            add("b");
            add("a");
            finalizers(["kubernetes", "example.com/hold", "mine"]);
        })
        .await;
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert_eq!(warnings[..2], ["a", "b"]);
        assert!(warnings[2].starts_with("metadata.finalizers: \"mine\": prefer a domain-qualified"));
    }
}
